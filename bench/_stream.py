"""A realistic generated gg operator stream for the benchmarks.

Deterministic for a seed: a root tool-calling agent that spawns subagents, some of them
responses-as-code agents (Python and Rust arms) with reported surfaces and module rosters, each
running turns shaped the way gg emits them (turn_started … turn_timing), with api/tool call
pairs, shell commands, state snapshots, logs and usage deltas, and each agent's message log: the
system prompt pooled once per agent, the brief, each turn's assistant reply and tool results (file
views labelled by their path) as `context_message` records, every `prompt` pointing at the whole
window, compacted past COMPACT_TOKENS. Sizes of text fields follow the real fixture (a few hundred
bytes, now and then a few KiB; a system prompt ~4 KiB, a prompt ~4 KiB of pointers).
"""

import random

SESSION = "bench-session"
KINDS = ["history", "memories", "tasks", "board", "skills", "archive"]
PY_APIS = [
    {"module": "files", "path": "gg.files", "description": "Read and write the workspace.",
     "functions": [{"name": "read_file", "operation": "files.read_file"},
                   {"name": "write_file", "operation": "files.write_file"},
                   {"name": "list_dir", "operation": "files.list_dir"}]},
    {"module": "shell", "path": "gg.shell", "description": "Run a command.",
     "functions": [{"name": "shell", "operation": "shell.shell"}]},
    {"module": "memories", "path": "gg.memories", "description": "Your notes.",
     "functions": [{"name": "write", "operation": "memories.write_memory"},
                   {"name": "read", "operation": "memories.read_memory"}]},
    {"module": "session", "path": "gg.session", "description": "End the session.",
     "functions": [{"name": "finish", "operation": "session.finish"}]},
]
RUST_APIS = [
    {**api, "path": api["path"].replace(".", "::")} for api in PY_APIS
]
TOOLS = ["read_file", "write_file", "edit_file", "list_dir", "shell", "finish"]
COMPACT_TOKENS = 24_000  # a window past this is compacted at the top of the next turn
WORDS = ("the agent reads index.html then writes a canvas game loop with keyboard input and a goal "
         "square checking distance each frame before drawing the score text in the corner").split()


STEP_US = 137  # between two records' stamps: n records span n * STEP_US microseconds


class _Clock:
    def __init__(self):
        self.micros = 0

    def stamp(self):
        self.micros += STEP_US
        s, us = divmod(self.micros, 1_000_000)
        m, s = divmod(s, 60)
        h, m = divmod(m, 60)
        return f"2026-07-24T{4 + h:02d}:{m:02d}:{s:02d}.{us:06d}Z"


def _text(rng, lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def generate(n_events, seed=7, n_agents=12, spawn=0.02):
    """Yield exactly n_events gg records (dicts) of one multi-agent session: before each turn the root
    spawns a subagent with probability `spawn`, until there are `n_agents`."""
    rng = random.Random(seed)
    clock = _Clock()
    out = []

    def emit(agent, type_, **fields):
        record = {"timestamp": clock.stamp(), "sessionId": SESSION, "type": type_}
        if agent is not None:
            record["agentId"] = agent["id"]
            if agent.get("parent"):
                record["parentAgentId"] = agent["parent"]
        record.update(fields)
        out.append(record)

    root = {"id": "root", "parent": None, "mode": "tool_calling", "language": None, "turn": 0,
            "memories": "memories-0"}
    emit(root, "session_started", capabilitySet={"agents": [
        {"name": "Root", "slug": "root", "modelId": "vendor/big"},
        {"name": "Worker", "slug": "worker", "modelId": "vendor/small"}]})
    agents = [root]
    _open_agent(emit, root, rng, "root", depth=0)
    next_store = 1
    total = 0
    while True:
        if len(agents) < n_agents and rng.random() < spawn:
            rac = rng.random() < 0.6
            child = {"id": f"agent-{len(agents)}", "parent": "root",
                     "mode": "responses_as_code" if rac else "tool_calling",
                     "language": rng.choice(["python", "rust"]) if rac else None, "turn": 0,
                     "memories": f"memories-{next_store}" if rng.random() < 0.5 else "memories-0"}
            next_store += 1
            agents.append(child)
            emit(root, "tool_call", name="spawn_agent", args={"brief": _text(rng, 8, 30)})
            _open_agent(emit, child, rng, "worker", depth=1)
        _turn(emit, rng.choice(agents), rng)
        for record in out:
            if total == n_events:
                return
            yield record
            total += 1
        out.clear()


def _open_agent(emit, agent, rng, profile, depth):
    emit(agent, "agent_spawned", profileId=profile, modelId="vendor/big", depth=depth,
         cwd="/workspace", **({"brief": _text(rng, 8, 30)} if depth else {}))
    emit(agent, "agent_modules", modules=[
        {"kind": kind, "moduleId": agent["memories"] if kind == "memories" else f"{kind}-0",
         "enabled": kind in ("history", "memories", "tasks"),
         "origin": "inherited" if kind == "memories" and depth else "created", "writable": True,
         "scope": "inherited" if kind == "memories" else None}
        for kind in KINDS])
    if agent["mode"] == "responses_as_code":
        apis = PY_APIS if agent["language"] == "python" else RUST_APIS
        emit(agent, "agent_surface", executionMode="responses_as_code", tools=[], apis=apis,
             programLanguage=agent["language"], docViewTypes="return+parameters+errors")
    else:
        emit(agent, "agent_surface", executionMode="tool_calling", tools=TOOLS)
    emit(agent, "memory_state", moduleId=agent["memories"], strategy="markdown", memories=[],
         count=0, totalLen=0, totalLines=0, scope="inherited", writable=True)


def _turn(emit, agent, rng):
    """One turn the way gg emits it, with the agent's message log: the window (system prompt, the
    brief, then each turn's assistant reply and tool results) is pooled once per agent as
    `context_message` records (new bodies only, right before the prompt) and each `prompt` points
    at every message in the window with the band it occupies this turn; a window past
    COMPACT_TOKENS is compacted at the top of a turn to the system prompt and a summary."""
    agent["turn"] += 1
    window, fresh = agent.setdefault("window", []), agent.setdefault("fresh", [])
    emit(agent, "turn_started")
    if sum(m["tokens"] for m in window) > COMPACT_TOKENS:
        before = sum(m["tokens"] for m in window)
        summary = _message(rng, "user", "history", _text(rng, 80, 300))
        window[1:] = [summary]
        fresh[:] = [summary]
        emit(agent, "compaction", strategy="self-summarization", triggerFullness=0.8, beforeTokens=before,
             afterTokens=window[0]["tokens"] + summary["tokens"], summaryTokens=summary["tokens"],
             summary=summary["content"], summaryFallback=False)
    if not window:  # the first turn: the system prompt and the brief
        fresh[:] = [_message(rng, "system", "system", _text(rng, 400, 900)),
                    _message(rng, "user", "user_prompt", _text(rng, 20, 120))]
        window.extend(fresh)
    bands = {}
    for m in window:
        bands[m["source"]] = bands.get(m["source"], 0) + m["tokens"]
    total = sum(bands.values())
    emit(agent, "context_breakdown", bySource=[{"source": b, "tokens": t} for b, t in bands.items()],
         totalTokens=total, windowLimit=128000)

    calls = _calls(agent, rng)
    if agent["mode"] == "responses_as_code":
        program = "\n".join(f"gg.{op}(...)" for op, _ in calls)
        asked = [{"id": f"call-{rng.getrandbits(40):x}", "name": "submit_program", "args": {"program": program}}]
    else:
        asked = [{"id": f"call-{rng.getrandbits(40):x}", "name": name, "args": args} for name, args in calls]
    reply = _message(rng, "assistant", "assistant", _text(rng, 5, 60), toolCalls=asked)
    for m in fresh + [reply]:
        emit(agent, "context_message", id=m["id"], role=m["role"], content=m["content"], tokens=m["tokens"],
             **{k: m[k] for k in ("label", "toolCallId") if k in m}, toolCalls=m.get("toolCalls", []), images=[])
    fresh.clear()
    output = rng.randint(40, 400)
    tokens = {"uncachedInput": total // 4, "cachedInput": total - total // 4, "output": output, "reasoning": None}
    cost = {"comparable": round(total * 2e-7 + output * 8e-7, 6), "actual": round(total * 2e-7 + output * 8e-7, 6)}
    emit(agent, "prompt", request=[{"id": m["id"], "source": m["source"]} for m in window], responseId=reply["id"],
         totalTokens=total, finishReason="tool_calls", tokens=tokens, cost=cost, durationMs=812)
    emit(agent, "usage", profileId="worker", modelId="vendor/big", tokens=tokens, cost=cost)
    emit(agent, "assistant_message", text=reply["content"])
    # What entered the window this turn is history from the next on.
    for m in window[1:]:
        m["source"] = "history"
    window.append(reply)

    results = []
    if agent["mode"] == "responses_as_code":
        for op, refused in calls:
            emit(agent, "api_call", operation=op)
            emit(agent, "api_result", operation=op, ok=not refused,
                 **({"failure": "unavailable"} if refused else {}))
            if refused:
                spelled = "gg::board::create_issue" if agent["language"] == "rust" else "gg.board.create_issue"
                emit(agent, "log", level="warn", message=f"the program's `{spelled}` "
                     f"call was refused before it ran: not offered to this agent")
        results.append(_message(rng, "tool", "tool_output", _text(rng, 10, 200), toolCallId=asked[0]["id"]))
    else:
        for call in asked:
            tool, args = call["name"], call["args"]
            emit(agent, "tool_call", name=tool, args=args)
            ok = rng.random() > 0.08
            emit(agent, "tool_result", name=tool, ok=ok, summary="done" if ok else "no such file",
                 **({} if ok else {"failure": "not-found"}))
            if tool == "shell":
                emit(agent, "shell", origin="tool", command="pytest -q", cwd={"type": "workspace"},
                     exitCode=0, stdout=_text(rng, 5, 50), stderr="")
            if tool == "read_file" and ok:  # a file view: the file's text, labelled by its path
                results.append(_message(rng, "tool", "file_view", _text(rng, 60, 700), toolCallId=call["id"],
                                        label=args["path"]))
            else:
                results.append(_message(rng, "tool", "tool_output", _text(rng, 3, 80) if ok else "no such file",
                                        toolCallId=call["id"]))
    window.extend(results)
    fresh.extend(results)
    if rng.random() < 0.1:
        emit(agent, "memory_state", moduleId=agent["memories"], strategy="markdown",
             memories=[{"name": "plan", "description": "what next", "len": 120, "lines": 4}],
             count=1, totalLen=120, totalLines=4, scope="inherited", writable=True)
    if agent["mode"] == "responses_as_code":
        emit(agent, "code_execution", ok=True, toolCalls=2, apiCalls=3, durationMs=41,
             logs=[_text(rng, 3, 12) for _ in range(rng.randint(0, 4))])
    emit(agent, "turn_outcome", outcome="progressed", consecutiveErrors=0, turns=agent["turn"])
    emit(agent, "turn_timing", promptMs=3, requestMs=812, responseMs=40)


def _calls(agent, rng):
    """The turn's 1-4 calls: (operation, refused) for a code agent, (tool, args) otherwise."""
    out = []
    for _ in range(rng.randint(1, 4)):
        if agent["mode"] == "responses_as_code":
            op = rng.choice(rng.choice(PY_APIS)["functions"])["operation"]
            refused = rng.random() < 0.05
            out.append(("board.create_issue" if refused else op, refused))
        else:
            tool = rng.choice(TOOLS[:-1])
            body = _text(rng, 20, 400) if tool == "write_file" else None
            out.append((tool, {"path": f"src/{rng.choice(WORDS)}.py", **({"contents": body} if body else {})}))
    return out


def _message(rng, role, source, content, **extra):
    """A pooled message: its id (a fingerprint, unique here), band and estimated tokens (~4 chars a token)."""
    calls = extra.get("toolCalls")
    tokens = (len(content) + (len(str(calls)) if calls else 0)) // 4 + 4
    return {"id": f"m-{rng.getrandbits(64):016x}", "role": role, "source": source, "content": content,
            "tokens": tokens, **extra}
