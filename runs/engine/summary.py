"""The close of a session: the slot rollups, session_summary (gg's counters) and session_ended."""


def close_session(engine, status, breach):
    """What closes every run: slot_usage per slot, the closing log line, session_summary, session_ended."""
    root = engine.root_handle.agent if engine.root_handle else None
    for (profile, model), tokens in engine.slots.items():
        engine.telemetry.emit("slot_usage", root, profileId=profile, modelId=model, tokens=_full(tokens))
    turns = sum(a.turns for a in engine.agents if a.handle and a.handle.agent is a)
    total = sum(sum(v for v in t.values()) for t in engine.slots.values())
    engine.telemetry.emit("log", root, level="info",
                        message=f"session ended ({status}) after {turns} turn(s); {total} total tokens.")
    spawned = [a for a in engine.agents if a.id != "root"]
    board = engine.registry.run_wide.get("board")
    summary = {
        "terminalStatus": status, "agentsSpawned": len(engine.agents), "subagentCount": len(spawned),
        "maxSubagentDepth": max((a.depth for a in engine.agents), default=0), "compactions": engine.compactions,
        "ranOutOfContext": False, "contextOverflowCount": 0, "issueReviews": engine.review_phases["requested"],
        "reviewCycles": engine.review_phases["changes_requested"] + engine.review_phases["approved"],
        "issuesReopened": engine.review_phases["changes_requested"], "executionMode": engine.spec.root.mode if engine.spec.root.mode != "machine"
        else engine.spec.profile(engine.spec.root.states[0].agent).mode,
        "codeExecutions": engine.code_executions, "compileMs": 0,
        "errors": {"turns": sum(a.turns for a in engine.agents), "errors": sum(engine.errors.values()),
                   "maxConsecutive": engine.max_consecutive, "modelApi": engine.errors["model_api"],
                   "transpile": engine.errors["transpile"], "programFault": engine.errors["program_fault"],
                   "sandboxLimit": engine.errors["sandbox_limit"],
                   "missingCompletion": engine.errors["missing_completion"], "loopAborts": 0,
                   "loopAbortWords": 0, "loopAbortChars": 0, "byType": engine.errors_by_type,
                   "toolFailures": engine.tool_failures},
        "undocumentedCalls": {"calls": sum(engine.undocumented.values()), "operations": dict(engine.undocumented)},
        "issuesCreated": len(board.impl.issues) if board else 0, "issuesCompleted": len(engine.issues_done),
        "slotCosts": [{"profileId": p, "modelId": m, "tokens": _full(t)} for (p, m), t in engine.slots.items()],
        "effectiveTools": root.offered_tools() if root else [],
        "limits": engine.spec.capability_set()["limits"],
    }
    if breach:
        summary["limitHit"] = breach
    engine.telemetry.emit("session_summary", root, summary=summary)
    engine.telemetry.emit("session_ended", root, status=status)
    engine.telemetry.flush()



def _full(tokens):
    return {key: tokens.get(key) for key in ("uncachedInput", "cachedInput", "output", "reasoning")}
