"""A realistic generated gg operator stream for the benchmarks.

Deterministic for a seed: a root tool-calling agent that spawns subagents, some of them
responses-as-code agents (Python and Rust arms) with reported surfaces and module rosters, each
running turns shaped the way gg emits them (turn_started … turn_timing), with api/tool call
pairs, shell commands, state snapshots, logs and usage deltas. Sizes of text fields follow the
real fixture (a few hundred bytes, now and then a few KiB).
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
WORDS = ("the agent reads index.html then writes a canvas game loop with keyboard input and a goal "
         "square checking distance each frame before drawing the score text in the corner").split()


class _Clock:
    def __init__(self):
        self.micros = 0

    def stamp(self):
        self.micros += 137
        s, us = divmod(self.micros, 1_000_000)
        m, s = divmod(s, 60)
        h, m = divmod(m, 60)
        return f"2026-07-24T{4 + h:02d}:{m:02d}:{s:02d}.{us:06d}Z"


def _text(rng, lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def generate(n_events, seed=7, n_agents=12):
    """Yield exactly n_events gg records (dicts) of one multi-agent session."""
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
        if len(agents) < n_agents and rng.random() < 0.02:
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
    agent["turn"] += 1
    emit(agent, "turn_started")
    emit(agent, "context_breakdown", bySource=[{"source": "system", "tokens": 900},
                                               {"source": "history", "tokens": rng.randint(0, 9000)}],
         totalTokens=rng.randint(1000, 10000), windowLimit=128000)
    emit(agent, "context_message", id=f"m{rng.getrandbits(48):x}", role="user",
         content=_text(rng, 20, 120), tokens=rng.randint(20, 400), toolCalls=[], images=[])
    emit(agent, "prompt", request=[{"id": "m0", "source": "system"}], totalTokens=1200,
         finishReason="tool_calls", tokens={"uncachedInput": 1200, "cachedInput": None,
                                            "output": 180, "reasoning": None}, durationMs=812)
    emit(agent, "usage", profileId="worker", modelId="vendor/big",
         tokens={"uncachedInput": 1200, "cachedInput": 300, "output": 180, "reasoning": None},
         cost={"comparable": 0.0042, "actual": 0.0042})
    emit(agent, "assistant_message", text=_text(rng, 5, 60))
    for _ in range(rng.randint(1, 4)):
        if agent["mode"] == "responses_as_code":
            api = rng.choice(PY_APIS)
            op = rng.choice(api["functions"])["operation"]
            refused = rng.random() < 0.05
            if refused:
                op = "board.create_issue"
            emit(agent, "api_call", operation=op)
            emit(agent, "api_result", operation=op, ok=not refused,
                 **({"failure": "unavailable"} if refused else {}))
            if refused:
                emit(agent, "log", level="warn", message=f"the program's `gg.board.create_issue` "
                     f"call was refused before it ran: not offered to this agent")
        else:
            tool = rng.choice(TOOLS[:-1])
            body = _text(rng, 20, 400) if tool == "write_file" else None
            emit(agent, "tool_call", name=tool,
                 args={"path": f"src/{rng.choice(WORDS)}.py", **({"contents": body} if body else {})})
            ok = rng.random() > 0.08
            emit(agent, "tool_result", name=tool, ok=ok, summary="done" if ok else "no such file",
                 **({} if ok else {"failure": "not-found"}))
            if tool == "shell":
                emit(agent, "shell", origin="tool", command="pytest -q", cwd={"type": "workspace"},
                     exitCode=0, stdout=_text(rng, 5, 50), stderr="")
    if rng.random() < 0.1:
        emit(agent, "memory_state", moduleId=agent["memories"], strategy="markdown",
             memories=[{"name": "plan", "description": "what next", "len": 120, "lines": 4}],
             count=1, totalLen=120, totalLines=4, scope="inherited", writable=True)
    if agent["mode"] == "responses_as_code":
        emit(agent, "code_execution", ok=True, toolCalls=2, apiCalls=3, durationMs=41,
             logs=[_text(rng, 3, 12) for _ in range(rng.randint(0, 4))])
    emit(agent, "turn_outcome", outcome="progressed", consecutiveErrors=0, turns=agent["turn"])
    emit(agent, "turn_timing", promptMs=3, requestMs=812, responseMs=40)
