"""gg's hooks (capability-set.schema.json `GgHook`, `GgHookAction`, `GgHookEvent`): commands and
scripts the operator hangs on points of a run, able to stop the operation a `pre-` event precedes
and to put text in front of the model. The model is never told a hook exists.

Eight agent events are declared on a profile, `session-start` / `session-end` on the run. Hooks of
one event run in declaration order; the first to block stops the operation and the rest of that
event's hooks. A `command` runs exactly as `gg.shell` runs (confined, `runs.engine.tools.confined`):
a non-zero exit blocks where the event can block, and its output is inserted as hook output either
way. A `custom` or `built-in` script gets the event payload as its sole argument and prints one
decision (`{"action": "continue" | "block" | "message", ...}`); a script that exits non-zero, prints
no decision, or a command killed at its timeout is the hook itself failing, and the session ends
`hook_error`. Every hook run is a `log` line on the operator stream.
"""

import json
import shlex
from dataclasses import dataclass, field

from runs.engine.agents import SessionOver, message
from runs.engine.sandbox.model_text import render
from runs.engine.spec import MAX_UINT64
from runs.engine.tools.confined import ConfinementUnavailable, run_confined
from runs.engine.tools.errors import ToolError

AGENT_EVENTS = ("pre-write", "post-write", "pre-shell", "post-shell", "pre-compact", "post-compact",
                "agent-start", "agent-stop")
SESSION_EVENTS = ("session-start", "session-end")
CAN_BLOCK = frozenset({"pre-write", "pre-shell", "agent-stop"})
CANNOT_INSERT = frozenset({"pre-compact", "session-end"})
ACTIONS = ("command", "built-in", "custom")
DECISIONS = ("continue", "block", "message")
SHELL_OUTPUT_MODES = ("inline", "offload", "truncate")
OUTPUT_CHARS = 4_000  # hook output kept inline for the model and on the operator stream
SCRIPT_TIMEOUT_SECS = 60  # a script hook has no timeout field of its own
PAYLOAD_CHARS = 100_000  # one argv string; longer contents are cut (and the payload says so)

# gg's own hook scripts: worked examples an operator can copy into a custom hook.
BUILTIN_HOOKS = {
    "trace": """#!/usr/bin/python3
import json, sys
event = json.loads(sys.argv[1])
print(f"trace: {event['event']} by {event.get('agentId')}", file=sys.stderr)
print(json.dumps({"action": "continue"}))
""",
    "refuse-empty-write": """#!/usr/bin/python3
import json, sys
event = json.loads(sys.argv[1])
if event["event"] == "pre-write" and not (event.get("contents") or "").strip():
    print(json.dumps({"action": "block", "reason": f"refusing to write an empty file: {event.get('path')}"}))
else:
    print(json.dumps({"action": "continue"}))
""",
    "guard-destructive-shell": r"""#!/usr/bin/python3
import json, re, sys
event = json.loads(sys.argv[1])
DESTRUCTIVE = [r"\brm\s+(-[a-zA-Z]*[rf][a-zA-Z]*\s+)+(/|~|\*|\.)(\s|$)", r"\bgit\s+reset\s+--hard\b",
               r"\bgit\s+clean\s+-[a-zA-Z]*f", r"\bgit\s+push\s+.*--force\b", r"\bmkfs(\.\w+)?\b",
               r"\bdd\s+.*\bof=/dev/", r":\(\)\s*\{\s*:\|:&\s*\};:", r"\bchmod\s+-R\s+777\s+/"]
command = event.get("command") or ""
hit = next((p for p in DESTRUCTIVE if re.search(p, command)), None)
if event["event"] == "pre-shell" and hit:
    print(json.dumps({"action": "block", "reason": f"a destructive command was refused: {command}"}))
else:
    print(json.dumps({"action": "continue"}))
""",
}


@dataclass
class Verdict:
    blocked: str | None = None  # the blocking hook's reason
    inserts: list = field(default_factory=list)  # hook output for the model, in order


def validation_errors(hooks, where, allowed_events):
    """Field errors of one `hooks` list (a profile's or the run's), as (path, message) pairs."""
    if hooks is None:
        return []
    if not isinstance(hooks, list):
        return [(where, "hooks is a list of {event, action} objects")]
    errors = []
    for i, hook in enumerate(hooks):
        at = f"{where}[{i}]"
        if not isinstance(hook, dict):
            errors.append((at, "a hook is an object with event and action"))
            continue
        event, action = hook.get("event"), hook.get("action")
        if event not in allowed_events:
            other = "the run" if event in SESSION_EVENTS else "a profile" if event in AGENT_EVENTS else None
            errors.append((f"{at}.event", f"{event!r} is declared on {other}, not here" if other else
                           f"{event!r} is not a hook event; one of: {', '.join(allowed_events)}"))
        if not isinstance(hook.get("name", ""), str):
            errors.append((f"{at}.name", "a hook's name is text"))
        if not isinstance(action, dict) or action.get("type") not in ACTIONS:
            errors.append((f"{at}.action.type", f"the action's type is one of: {', '.join(ACTIONS)}"))
            continue
        kind = action["type"]
        if kind == "command":
            if not isinstance(action.get("command"), str) or not action["command"].strip():
                errors.append((f"{at}.action.command", "a command hook needs a command line"))
            timeout = action.get("timeoutSecs")
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_UINT64:
                errors.append((f"{at}.action.timeoutSecs", "a command hook needs timeoutSecs, a positive "
                               "number of seconds (gg has no default: a build's ceiling is the operator's)"))
            cwd = action.get("cwd")
            if cwd is not None and (not isinstance(cwd, str) or cwd.startswith("/") or ".." in cwd.split("/")):
                errors.append((f"{at}.action.cwd", "cwd is a path inside the workspace (relative, no ..)"))
            if action.get("output") is not None and action["output"] not in SHELL_OUTPUT_MODES:
                errors.append((f"{at}.action.output", f"output is one of: {', '.join(SHELL_OUTPUT_MODES)}"))
        elif kind == "built-in" and "script" not in action:
            errors.append((f"{at}.action.script", f"a built-in hook needs script, the name of one gg ships: "
                           f"{', '.join(BUILTIN_HOOKS)}"))
        elif kind == "built-in" and not (isinstance(action["script"], str) and action["script"] in BUILTIN_HOOKS):
            errors.append((f"{at}.action.script", f"{action['script']!r} is not a hook gg ships; one of: "
                           f"{', '.join(BUILTIN_HOOKS)}"))
        elif kind == "custom" and (not isinstance(action.get("source"), str) or not action["source"].strip()):
            errors.append((f"{at}.action.source", "a custom hook needs the script's source"))
    return errors


def agent_kind(agent):
    """gg's GgHookAgentKind: root, issue-implementer, issue-reviewer or subagent."""
    if agent.issue_id is not None:
        return "issue-reviewer" if agent.role == "review" else "issue-implementer"
    return "root" if agent.handle is agent.engine.root_handle else "subagent"


def label(hook):
    """A hook is always nameable: its name, else a description of its action."""
    action = hook["action"]
    return hook.get("name") or {"command": lambda: f"command `{action['command']}`",
                                "built-in": lambda: f"built-in {action['script']}",
                                "custom": lambda: "custom script"}[action["type"]]()


class Hooks:
    """The engine's hooks: `fire(event, agent, **payload)` runs the event's hooks and returns a Verdict."""

    def __init__(self, engine):
        self.engine = engine

    def declared(self, event, agent):
        source = self.engine.spec.data if event in SESSION_EVENTS else agent.profile.raw
        return [h for h in source.get("hooks") or () if h.get("event") == event]

    def fire(self, event, agent=None, **payload):
        verdict = Verdict()
        for hook in self.declared(event, agent):
            decision, text = self._run(hook, event, agent, payload)
            if text and event not in CANNOT_INSERT:
                verdict.inserts.append(f"Output of the {event} hook {label(hook)}:\n{text}")
            if decision == "block" and event in CAN_BLOCK:
                verdict.blocked = text or f"the {event} hook {label(hook)} blocked it"
                break
        return verdict

    def gate_ending(self, agent):
        """The ending gate: an ending passes the agent's agent-stop hooks. Blocked: the ending is not
        taken, the model is told why (a Notice) and the session continues. Returns whether it passed."""
        kind, summary, items = agent.ending
        verdict = self.fire("agent-stop", agent, ending=kind, summary=summary, items=items)
        self.insert(agent, verdict)
        if verdict.blocked is None:
            return True
        agent.ending = None
        agent.inbox.append(message("user", render("Notice", f"Your session did not end: a hook refused the "
                                                  f"ending ({kind}).\n\n{verdict.blocked}"), "system"))
        return False

    def insert(self, agent, verdict):
        agent.inbox.extend(message("user", text, "system") for text in verdict.inserts)

    def pre(self, event, agent, **payload):
        """A pre- event: a block refuses the operation (failure class `refused`)."""
        verdict = self.fire(event, agent, **payload)
        self.insert(agent, verdict)
        if verdict.blocked is not None:
            raise ToolError("refused", f"a {event} hook blocked this: {verdict.blocked}")

    def post(self, event, agent, **payload):
        self.insert(agent, self.fire(event, agent, **payload))

    # -- running one hook --------------------------------------------------------------------------
    def _run(self, hook, event, agent, payload):
        """(decision, output) of one hook; a failing hook ends the session hook_error."""
        action = hook["action"]
        workspace = agent.workspace if agent else self.engine.workspace  # an issue agent's is its worktree
        body = {"event": event, **({"agentId": agent.id, "agentKind": agent_kind(agent)} if agent else {}),
                **payload}
        if isinstance(body.get("contents"), str) and len(body["contents"]) > PAYLOAD_CHARS:
            body["contents"], body["contentsTruncated"] = body["contents"][:PAYLOAD_CHARS], True
        if action["type"] == "command":
            cwd = action.get("cwd")
            command = f"cd {shlex.quote(cwd)} && {action['command']}" if cwd else action["command"]
            timeout = float(action["timeoutSecs"])
        else:
            source = BUILTIN_HOOKS[action["script"]] if action["type"] == "built-in" else action["source"]
            runner = "/tmp/gg-hook" if source.startswith("#!") else "sh /tmp/gg-hook"
            command = (f"printf '%s' {shlex.quote(source)} > /tmp/gg-hook && chmod +x /tmp/gg-hook && "
                       f"{runner} {shlex.quote(json.dumps(body))}")
            timeout = SCRIPT_TIMEOUT_SECS
        self.engine.telemetry.flush(quiet=True)
        try:
            result = run_confined(command, workspace.root, timeout, interrupt=workspace.interrupt)
        except ConfinementUnavailable as exc:
            self._fail(hook, event, agent, f"it cannot run confined here: {exc}")
        output = (result.stdout + result.stderr).strip()[-OUTPUT_CHARS:]
        if result.exit_code is None:
            self._fail(hook, event, agent, f"it was stopped ({result.stopped}) after {result.duration_ms} ms", output)
        if action["type"] == "command":
            decision = "continue" if result.exit_code == 0 else "block"
            self._log(hook, event, agent, f"{decision} (exit {result.exit_code})", output)
            return decision, output
        if result.exit_code != 0:
            self._fail(hook, event, agent, f"the script exited {result.exit_code}", output)
        decision = _decision(result.stdout)
        if decision is None:
            self._fail(hook, event, agent, "the script printed no decision ({\"action\": ...})", output)
        text = decision.get("reason") or decision.get("message") or ""
        text = (text if isinstance(text, str) else json.dumps(text))[:OUTPUT_CHARS]
        self._log(hook, event, agent, decision["action"], text or result.stderr.strip()[-OUTPUT_CHARS:])
        return decision["action"], text

    def _log(self, hook, event, agent, outcome, output, level="info"):
        line = f"hook {label(hook)} ({event}, {hook['action']['type']}): {outcome}"
        if output:
            line += f"\n{output[-OUTPUT_CHARS:]}"
        if agent is not None:
            agent.emit("log", level=level, message=line)
        else:
            self.engine.telemetry.emit("log", level=level, message=line)

    def _fail(self, hook, event, agent, why, output=""):
        """The hook itself failed: the session ends hook_error. Met inside a program's call, the stop
        is held on the engine (as a run-wide stop inside a wait is): the turn closes, then the run ends."""
        self._log(hook, event, agent, f"failed — {why}", output, level="error")
        over = SessionOver("hook_error")
        self.engine.stopping = self.engine.stopping or over
        raise over


def _decision(stdout):
    """The decision object: the last line of stdout that parses as one."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("action") in DECISIONS:
            return value
    return None


class HookedWorkspace:
    """One agent's hand on the run's workspace: its writes and shells pass its pre-/post- hooks, in
    both execution modes (the tool-calling tools and the program's handlers both write through it)."""

    def __init__(self, workspace, agent):
        self._workspace, self._agent = workspace, agent

    def __getattr__(self, name):
        return getattr(self._workspace, name)

    @property
    def _hooks(self):
        return self._agent.engine.hooks

    def write_file(self, path, contents):
        full = str(self._workspace.resolve(path))
        self._hooks.pre("pre-write", self._agent, path=full, contents=contents)
        written = self._workspace.write_file(path, contents)
        self._hooks.post("post-write", self._agent, path=full, contents=contents)
        return written

    def edit_file(self, path, old_string, new_string):
        if self._hooks.declared("pre-write", self._agent) or self._hooks.declared("post-write", self._agent):
            full, after = self._workspace.edited(path, old_string, new_string)  # refused as the edit would be
            self._hooks.pre("pre-write", self._agent, path=str(full), contents=after)
            self._workspace.write_file(path, after)  # the edit's result, read and checked once
            self._hooks.post("post-write", self._agent, path=str(full), contents=after)
        else:
            self._workspace.edit_file(path, old_string, new_string)

    def shell(self, command, timeout_secs=None, **kwargs):
        self._agent.engine.telemetry.flush(quiet=True)  # the call is on the page while the command runs
        self._hooks.pre("pre-shell", self._agent, command=command)
        result, record = self._workspace.shell(command, timeout_secs, **kwargs)
        self._hooks.post("post-shell", self._agent, command=command, exitCode=record["exitCode"],
                         durationMs=result.get("duration_ms"))
        return result, record
