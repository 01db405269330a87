"""An authored multi-agent stream for the inspection pages: a Python code agent (root) whose turn 3
throws a KeyError and whose turn 4 does not compile, and a tool-calling subagent — with prompts,
pool messages, usage deltas, turn_timing and stamps placed to the microsecond, so durations,
latency and tokens per second can be worked out by hand.

    from tests.inspect_stream import inspect_stream, KEY_ERROR_PROGRAM
"""

from datetime import datetime, timedelta, timezone

START = datetime(2026, 8, 3, 10, 0, 0, tzinfo=timezone.utc)

KEY_ERROR_PROGRAM = 'notes = {"a": 1}\nprint("reading")\nvalue = notes["b"]\ngg.views.open_text("v", str(value))'
KEY_ERROR = ('Traceback (most recent call last):\n  File "<program>", line 3, in <module>\n    value = notes["b"]\n'
             '            ~~~~~^^^^^\nKeyError: \'b\'')
SYNTAX_PROGRAM = "def f(:\n    pass"
SYNTAX_ERROR = '  File "<program>", line 1\n    def f(:\n          ^\nSyntaxError: invalid syntax'
OK_PROGRAM = 'text = gg.files.read_file("notes.txt")\ngg.views.open_file("notes.txt")'


class _Clock:
    def __init__(self):
        self.now = START

    def at(self, ms):
        """A stamp `ms` milliseconds after the previous one, with nanoseconds as gg writes them."""
        self.now += timedelta(milliseconds=ms)
        return self.now.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"


def inspect_stream():
    clock = _Clock()
    out = []

    def ev(agent, type_, ms=1, **fields):
        rec = {"timestamp": clock.at(ms), "sessionId": "inspect", "agentId": agent, "type": type_, **fields}
        if agent == "agent-0":
            rec["parentAgentId"] = "root"
        out.append(rec)
        return rec

    apis = [{"module": "files", "path": "gg.files", "description": "Files.",
             "functions": [{"name": "read_file", "operation": "files.read_file"}]},
            {"module": "views", "path": "gg.views", "description": "Views.",
             "functions": [{"name": "open_text", "operation": "views.open_text"},
                           {"name": "open_file", "operation": "views.open_file"}]},
            {"module": "shell", "path": "gg.shell", "description": "Shell.",
             "functions": [{"name": "shell", "operation": "shell.shell"}]}]
    ev("root", "session_started", capabilitySet={"agents": [{"slug": "lead", "name": "Lead"}, {"slug": "scout", "name": "Scout"}]})
    ev("root", "agent_spawned", profileId="lead", modelId="m/lead", depth=0)
    ev("root", "agent_surface", executionMode="responses_as_code", tools=[], apis=apis, programLanguage="python",
       docViewTypes="return")

    def code_turn(n, program, *, calls=(), ok=True, error=None, error_kind=None, error_type=None, logs=(),
                  output=40, request_ms=500, views=()):
        ev("root", "turn_started", 10)
        ev("root", "context_breakdown", bySource=[{"source": "system", "tokens": 100}, {"source": "user_prompt", "tokens": 20}],
           totalTokens=120, windowLimit=1000)
        if n == 1:
            ev("root", "context_message", id="m-sys", role="system", content="You are Lead.", tokens=100, toolCalls=[], images=[])
            ev("root", "context_message", id="m-task", role="user", content="Read notes.txt.", tokens=20, toolCalls=[], images=[])
        reply = f"m-reply-{n}"
        ev("root", "context_message", id=reply, role="assistant", tokens=30, images=[],
           toolCalls=[{"id": f"call-{n}", "name": "submit_program", "args": {"program": program}}])
        ev("root", "prompt", request=[{"id": "m-sys", "source": "system"}, {"id": "m-task", "source": "user_prompt"}],
           responseId=reply, totalTokens=120, finishReason="tool_calls",
           tokens={"uncachedInput": 120, "cachedInput": None, "output": output, "reasoning": None}, durationMs=request_ms)
        ev("root", "usage", profileId="lead", modelId="m/lead",
           tokens={"uncachedInput": 120, "cachedInput": None, "output": output, "reasoning": None})
        for operation, took_ms, failure in calls:
            ev("root", "api_call", 3, operation=operation)
            if failure == "unavailable":
                ev("root", "log", level="warn",
                   message=f"the program's `gg.{operation}` call was refused before it ran: not offered")
            result = {"operation": operation, "ok": failure is None}
            if failure:
                result["failure"] = failure
            ev("root", "api_result", took_ms, **result)
        for selector in views:
            ev("root", "log", level="debug", message=f"the program opened the text view `{selector}` (~5 tokens)")
        record = {"ok": ok, "toolCalls": len(calls), "durationMs": 7, "logs": list(logs)}
        if error:
            record["error"] = error
        ev("root", "code_execution", 2, **record)
        outcome = {"outcome": "error", "error": error_kind, "errorType": error_type} if error_kind else {"outcome": "progressed"}
        ev("root", "turn_outcome", consecutiveErrors=0, turns=n, **outcome)
        ev("root", "turn_timing", promptMs=5, requestMs=request_ms, responseMs=40)

    code_turn(1, OK_PROGRAM, calls=[("files.read_file", 12, None), ("views.open_file", 4, None)], output=40, request_ms=500)
    # The scout runs inside root's turn 2.
    ev("root", "turn_started", 10)
    ev("root", "context_message", id="m-reply-2", role="assistant", tokens=12, images=[],
       toolCalls=[{"id": "call-2", "name": "submit_program", "args": {"program": "gg.agents.spawn('scout')"}}])
    ev("root", "prompt", request=[{"id": "m-sys", "source": "system"}], responseId="m-reply-2", totalTokens=100,
       finishReason="tool_calls", tokens={"uncachedInput": 100, "cachedInput": None, "output": 60, "reasoning": None},
       durationMs=300)
    ev("root", "usage", profileId="lead", modelId="m/lead",
       tokens={"uncachedInput": 100, "cachedInput": None, "output": 60, "reasoning": None})
    ev("root", "api_call", operation="delegation.spawn_subagent")
    ev("agent-0", "agent_spawned", profileId="scout", modelId="m/scout", depth=1, brief="List the workspace.")
    ev("agent-0", "agent_surface", executionMode="tool_calling", tools=["list_dir", "shell", "finish"])
    ev("root", "agent_status", status="blocked", waitingOn="agent-0")
    for n, (tool, args, took_ms, ok) in enumerate([("list_dir", {}, 20, True), ("shell", {"command": "ls"}, 80, False)], 1):
        ev("agent-0", "turn_started", 5)
        ev("agent-0", "context_message", id=f"s-{n}", role="assistant", tokens=9, images=[],
           toolCalls=[{"id": f"t-{n}", "name": tool, "args": args}])
        ev("agent-0", "prompt", request=[{"id": "s-0", "source": "system"}], responseId=f"s-{n}", totalTokens=9,
           finishReason="tool_calls", tokens={"uncachedInput": 9, "cachedInput": None, "output": 25, "reasoning": None},
           durationMs=250)
        ev("agent-0", "usage", profileId="scout", modelId="m/scout",
           tokens={"uncachedInput": 9, "cachedInput": None, "output": 25, "reasoning": None})
        ev("agent-0", "tool_call", name=tool, args=args)
        if tool == "shell":
            ev("agent-0", "shell", origin="tool", command="ls", cwd={"type": "workspace"}, exitCode=2, stdout="",
               stderr="ls: cannot open directory")
        result = {"name": tool, "ok": ok, "summary": "1 entries" if ok else "exit 2"}
        if not ok:
            result["failure"] = "io-error"
        ev("agent-0", "tool_result", took_ms, **result)
        ev("agent-0", "turn_outcome", outcome="progressed", consecutiveErrors=0, turns=n)
        ev("agent-0", "turn_timing", promptMs=1, requestMs=250, responseMs=took_ms)
    ev("agent-0", "agent_returned", summary="done")
    ev("root", "agent_status", status="running")
    ev("root", "api_result", operation="delegation.spawn_subagent", ok=True)
    ev("root", "code_execution", ok=True, toolCalls=1, durationMs=3, logs=[])
    ev("root", "turn_outcome", outcome="progressed", consecutiveErrors=0, turns=2)
    ev("root", "turn_timing", promptMs=5, requestMs=300, responseMs=700)
    code_turn(3, KEY_ERROR_PROGRAM, calls=[("shell.shell", 1, "unavailable")], ok=False, error=KEY_ERROR,
              error_kind="program_fault", error_type="program_throw", logs=["reading"], output=80, request_ms=1000)
    code_turn(4, SYNTAX_PROGRAM, ok=False, error=SYNTAX_ERROR, error_kind="transpile", error_type="transpile_syntax",
              output=20, request_ms=200)
    ev("root", "session_ended", status="completed")
    return out
