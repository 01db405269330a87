"""The agent's thread (its history window) managed by the agent: archive_thread and compaction.

Every message is stamped with the turn that added it (0 for an incarnation's opening) once that
turn has closed, so `archive_thread` moves whole closed turns out of the window into the agent's
archive store: `context_managed` (what the window got back) then `archive_state` (what is now out
of it). Views are the program's to close and the system prompt is never archived.

A compaction declared by the agent (`context.compact` / the `compact` tool) is applied at the top
of its next turn: the thread is replaced by the agent's own summary, and the system prompt, the
opening, the open views and the stores (read skills, tasks, memories: the pinned state a
`compaction` event counts as retained) are carried across untouched.
"""

from runs.engine.agents import message
from runs.engine.tools.context_views import file_view
from runs.engine.tools.errors import ToolError


def stamp(messages, turn):
    """Stamp each message not yet stamped with the turn that added it."""
    for msg in messages:
        msg.setdefault("turn", turn)


def archive(agent, ranges):
    """Archive the closed turns in `ranges` ([(first, last)], 1-based, inclusive); a reclaim report."""
    store = agent.store("archive")
    for first, last in ranges:
        if first < 1 or last < first:
            raise ToolError("invalid-argument", f"the turn range {first}-{last} is not a range of turns (from 1)")
        if last >= agent.turns:
            raise ToolError("invalid-argument", f"turn {agent.turns} is still open; only closed turns are archived")
    chosen = [(i, m) for i, m in enumerate(agent.window)
              if m["role"] != "system" and "view" not in m and m.get("turn", 0) >= 1
              and any(first <= m["turn"] <= last for first, last in ranges)]
    if not chosen:
        return {"items": 0, "reclaimed_tokens": 0, "paths": [], "detail": "nothing to archive in those turns"}
    archived = len(store.entries)  # an entry's seq is its ordinal in the thread, archived messages counted
    for i, m in chosen:
        store.put(archived + i, m["role"], m["content"] or "", source=m["source"])
    removed = {id(m) for _, m in chosen}
    agent.window[:] = [m for m in agent.window if id(m) not in removed]
    tokens = sum(m["tokens"] for _, m in chosen)
    turns = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges)
    detail = f"{len(chosen)} message(s) of turn(s) {turns}"
    agent.emit("context_managed", action="archive_thread", reclaimedTokens=tokens, items=len(chosen),
               detail=detail, earliestRemoved=chosen[0][0])
    agent.engine.snapshot(agent, "archive")
    return {"items": len(chosen), "reclaimed_tokens": tokens, "paths": [], "detail": detail}


def compact(engine, agent, summary, files=()):
    """Replace the thread with `summary` (and views of `files`) and emit the `compaction` event."""
    before = list(agent.window)
    before_bands, before_tokens, fullness = engine.bands(agent, before)
    kept = [m for m in before if m["role"] == "system" or m.get("turn") == 0 or "view" in m]
    summary_msg = message("user", f"Summary of the work so far:\n\n{summary}", "history")
    reopened = []
    for path in files:
        try:
            kind, read = engine.workspace.read_file(path, None, None)
            if kind != "text":
                raise ToolError("invalid-argument", f"{path} is not a text file")
            view = file_view(path, read)
        except ToolError as exc:
            agent.emit("log", level="warn", message=f"the compaction did not re-open {path}: {exc.message}")
            continue
        ctx = getattr(agent, "ctx", None)
        if ctx is not None:  # a code agent's file view stays closable by its programs
            ctx.window.open(view)
        msg = message("user", view.message(), "file_view", label=path)
        if ctx is not None:
            msg["view"] = (view.kind, view.selector)
        reopened.append(msg)
    # The summary belongs to the turn it opens, so a later archive_thread can put it away too.
    agent.window[:] = [m for m in kept if "view" not in m or m["view"][1] not in files] + [summary_msg] + reopened
    after_bands, after_tokens, _ = engine.bands(agent, agent.window)
    agent.emit("compaction", strategy="self-summarization" if agent.profile.mode == "responses_as_code"
               else "self-compaction", triggerFullness=fullness, beforeTokens=before_tokens,
               afterTokens=after_tokens, summaryTokens=summary_msg["tokens"], beforeBySource=before_bands,
               afterBySource=after_bands, retained=_retained(agent), summary=summary, summaryFallback=False)


def _retained(agent):
    """Counts of the pinned state carried across: read skills, tasks, memories."""
    def snap(kind):
        holding = agent.holdings.get(kind)
        return holding.impl.snapshot() if holding is not None and holding.enabled and holding.impl else None

    skills, tasks, memories = snap("skills"), snap("tasks"), snap("memories")
    return {"skills": sum(1 for s in skills["skills"] if s.get("read")) if skills else 0,
            "tasks": len(tasks["tasks"]) if tasks else 0,
            "memories": memories["count"] if memories else 0}


def evict_file_views(agent, path=None):
    """A tool-calling agent's evict_file_view: the read_file results of `path` (every file when
    None) give their bodies back to the window, each leaving a one-line stub; a reclaim report."""
    reads = {c["id"]: c["args"].get("path") for m in agent.window for c in m.get("toolCalls") or []
             if c["name"] == "read_file" and (path is None or c["args"].get("path") == path)}
    evicted, tokens, earliest = [], 0, None
    for index, msg in enumerate(agent.window):
        if msg["role"] == "tool" and msg.get("toolCallId") in reads and not msg.get("evicted"):
            stub = message("tool", f"(the view of {reads[msg['toolCallId']]} was evicted)", msg["source"],
                           toolCallId=msg["toolCallId"])
            stub.update(evicted=True, turn=msg.get("turn"))
            tokens += max(0, msg["tokens"] - stub["tokens"])
            evicted.append(reads[msg["toolCallId"]])
            earliest = index if earliest is None else earliest
            agent.window[index] = stub
    detail = f"{len(evicted)} file view(s)"
    if evicted:
        agent.emit("context_managed", action="evict_file_views", reclaimedTokens=tokens, items=len(evicted),
                   detail=detail, earliestRemoved=earliest)
    return {"items": len(evicted), "reclaimed_tokens": tokens, "paths": sorted(set(evicted)), "detail": detail}
