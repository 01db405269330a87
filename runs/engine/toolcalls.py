"""A tool-calling agent's turn (`run_turn`) and its registry tools: each gg tool name dispatched to
the typed tool implementations (runs.engine.tools) the membrane uses too, with the parameter shape
the model is offered. Delegation (runs.engine.delegation), wait_for_issue (runs.engine.issues) and
the ending tools change who runs: the turn hands them on rather than dispatching them here.

A handler returns `(summary, content, snapshots)`: the short result summary for `tool_result`, the
text the model reads back, and the store kinds whose `*_state` snapshot the call changed.
"""

import json

from runs.engine import issues, thread
from runs.engine.agents import message
from runs.engine.store_records import StoreRecords
from runs.engine.tools.errors import ToolError, bounded
from runs.engine.tools.workspace import shell_bounds, shell_records

S, I = {"type": "string"}, {"type": "integer"}
STRINGS = {"type": "array", "items": S}
DELEGATION = ("spawn_subagent", "wait_for_subagents", "send_message", "exec", "fork", "transition_state")
ENDING_TOOLS = ("finish", "approve", "request_changes")


def _schema(required, **props):
    return {"type": "object", "properties": props, "required": list(required)}


def _text(value):
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)


def _arg(args, name, kind=str, required=True):
    value = args.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ToolError("invalid-argument", f"`{name}` must be a {'string' if kind is str else kind.__name__}")
    return value


def _read_file(ctx, args):
    kind, result = ctx.workspace.read_file(_arg(args, "path"), _arg(args, "offset", int, False),
                                           _arg(args, "limit", int, False))
    if kind == "image":
        return f"{args['path']} is an image ({result['bytes']} bytes)", _text(result), ()
    return (f"read lines {result['first_line']}-{result['last_line']} of {result['total_lines']}",
            result["contents"], ())


def _write_file(ctx, args):
    written = ctx.workspace.write_file(_arg(args, "path"), _arg(args, "contents"))
    return f"wrote {written} bytes", f"wrote {written} bytes to {args['path']}", ()


def _edit_file(ctx, args):
    ctx.workspace.edit_file(_arg(args, "path"), _arg(args, "old_string"), _arg(args, "new_string"))
    return f"edited {args['path']}", f"edited {args['path']}", ()


def _list_dir(ctx, args):
    entries = ctx.workspace.list_dir(_arg(args, "path", str, False))
    return f"{len(entries)} entries", _text(entries), ()


def _tree(ctx, args):
    tree = ctx.workspace.tree(_arg(args, "path", str, False), _arg(args, "depth", int, False))
    return f"{len(tree.splitlines())} lines", tree, ()


def _search(ctx, args):
    matches = ctx.workspace.search(_arg(args, "query"), _arg(args, "path", str, False),
                                   _arg(args, "limit", int, False))
    return f"{len(matches)} matches", _text(matches), ()


def _shell(ctx, args):
    result, record = ctx.workspace.shell(_arg(args, "command"), _arg(args, "timeout_secs", int, False),
                                         **shell_bounds(ctx.params("shell")))
    for kind, fields in shell_records(result, dict(record, origin="tool")):
        ctx.emit(kind, **fields)
    return f"exit {record['exitCode']}", result["output"], ()


def _memory(method):
    def handler(ctx, args):
        store = ctx.store("memories")
        if method == "read":
            return f"read {args.get('name')}", store.read(_arg(args, "name")), ()
        if method == "search":
            hits = store.search(_arg(args, "keywords", list))
            return f"{len(hits)} hits", _text(hits), ()
        if method == "edit":
            revision = store.edit(_arg(args, "name"), _arg(args, "search"), _arg(args, "replace"))
        elif method == "delete":
            revision = store.delete(_arg(args, "name"))
        else:
            memory = {"name": _arg(args, "name"), "description": _arg(args, "description", str, False) or "",
                      "body": _arg(args, "body")}
            revision = getattr(store, method)(memory)
        ctx.emit("memory_revision", **revision)
        return f"{revision['change']} {revision['name']}", f"{revision['change']} {revision['name']}", ("memories",)
    return handler


def _tasks(method):
    def handler(ctx, args):
        store = ctx.store("tasks")
        task_id = _arg(args, "id")
        if method == "add":
            result = store.add(args)
        elif method == "update":
            result = store.update(task_id, {k: v for k, v in args.items() if k != "id"})
        elif method == "set_blocked_by":
            result = store.set_blocked_by(task_id, _arg(args, "blocked_by", list))
        else:
            result = getattr(store, method)(task_id)
        return f"{method} {task_id}", _text(result), ("tasks",)
    return handler


def _board(method, *keys):
    def handler(ctx, args):
        store = ctx.store("board")
        positional = [_arg(args, key) for key in keys]
        rest = {k: v for k, v in args.items() if k not in keys}
        result = getattr(store, method)(*positional, *([rest] if method not in _BOARD_BY_ID else []))
        return method.replace("_", " "), _text(result), ("board",)
    return handler


_BOARD_BY_ID = ("remove_epic", "remove_issue", "set_issue_blocked_by")


def _read_skill(ctx, args):
    body = ctx.store("skills").read(_arg(args, "name"))
    return f"read skill {args['name']}", body, ("skills",)


def _search_archive(ctx, args):
    result = ctx.store("archive").search(_arg(args, "query"))
    return f"{len(result['hits'])} hits", _text(result), ()


def _archive_thread(ctx, args):
    ranges = _arg(args, "ranges", list)
    if not all(isinstance(r, dict) for r in ranges):
        raise ToolError("invalid-argument", "each range is an object {from, to} of turn numbers")
    report = thread.archive(ctx, [(_arg(r, "from", int), _arg(r, "to", int)) for r in ranges])
    return report["detail"], _text(report), ()  # archive emits its own context_managed and archive_state


def _evict_file_view(ctx, args):
    report = thread.evict_file_views(ctx, _arg(args, "path", str, False))
    return report["detail"], _text(report), ()


def _compact(ctx, args):
    summary = _arg(args, "summary")
    if not summary.strip():
        raise ToolError("invalid-argument", "a compaction needs a summary")
    ctx.compaction = {"summary": bounded(summary, "a compaction's summary"),
                      "files": _arg(args, "files", list, False) or []}  # the last one stands
    return "compaction declared", "the window is compacted to your summary when the next turn starts", ()


MEMORY_ARGS = _schema(["name", "body"], name=S, description=S, body=S)

# name -> (parameters schema, handler)
TOOLS = {
    "shell": (_schema(["command"], command=S, timeout_secs=I), _shell),
    "read_file": (_schema(["path"], path=S, offset=I, limit=I), _read_file),
    "write_file": (_schema(["path", "contents"], path=S, contents=S), _write_file),
    "edit_file": (_schema(["path", "old_string", "new_string"], path=S, old_string=S, new_string=S), _edit_file),
    "list_dir": (_schema([], path=S), _list_dir),
    "tree": (_schema([], path=S, depth=I), _tree),
    "search": (_schema(["query"], query=S, path=S, limit=I), _search),
    "read_skill": (_schema(["name"], name=S), _read_skill),
    "write_memory": (MEMORY_ARGS, _memory("write")),
    "update_memory": (MEMORY_ARGS, _memory("update")),
    "create_memory": (MEMORY_ARGS, _memory("create")),
    "read_memory": (_schema(["name"], name=S), _memory("read")),
    "edit_memory": (_schema(["name", "search", "replace"], name=S, search=S, replace=S), _memory("edit")),
    "search_memories": (_schema(["keywords"], keywords=STRINGS), _memory("search")),
    "delete_memory": (_schema(["name"], name=S), _memory("delete")),
    "add_task": (_schema(["id", "title"], id=S, title=S, description=S, blocked_by=STRINGS), _tasks("add")),
    "update_task": (_schema(["id"], id=S, title=S, description=S, status=S), _tasks("update")),
    "set_blocked_by": (_schema(["id", "blocked_by"], id=S, blocked_by=STRINGS), _tasks("set_blocked_by")),
    "complete_task": (_schema(["id"], id=S), _tasks("complete")),
    "remove_task": (_schema(["id"], id=S), _tasks("remove")),
    "create_epic": (_schema(["prefix", "title"], prefix=S, title=S, description=S), _board("create_epic")),
    "create_issue": (_schema(["title", "agent"], title=S, description=S, in_scope=STRINGS, out_of_scope=STRINGS,
                             completion_criteria=STRINGS, blocked_by=STRINGS, epic_id=S, agent=S,
                             reviewers=STRINGS), _board("create_issue")),
    "update_issue": (_schema(["issue_id"], issue_id=S, title=S, description=S), _board("update_issue", "issue_id")),
    "set_issue_blocked_by": (_schema(["issue_id", "blocked_by"], issue_id=S, blocked_by=STRINGS),
                             _board("set_issue_blocked_by", "issue_id", "blocked_by")),
    "remove_epic": (_schema(["epic_id"], epic_id=S), _board("remove_epic", "epic_id")),
    "remove_issue": (_schema(["issue_id"], issue_id=S), _board("remove_issue", "issue_id")),
    "evict_file_view": (_schema([], path=S), _evict_file_view),
    "archive_thread": (_schema(["ranges"], ranges={"type": "array", "items": _schema(["from", "to"], **{"from": I, "to": I})}),
                       _archive_thread),
    "search_archive": (_schema(["query"], query=S), _search_archive),
    "compact": (_schema(["summary"], summary=S, files=STRINGS), _compact),
}

# The loop's own tools: delegation and issue waits (who runs next) and the endings (synthetic, by role).
LOOP_TOOLS = {
    "wait_for_issue": _schema(["issue_id"], issue_id=S),
    "spawn_subagent": _schema(["agent", "prompt"], agent=S, prompt=S),
    "wait_for_subagents": _schema([], ids=STRINGS),
    "send_message": _schema(["to", "message"], to=S, message=S),
    "exec": _schema(["agent"], agent=S, prompt=S),
    "fork": _schema(["prompt"], prompt=S),
    "transition_state": _schema(["to"], to=S, prompt=S),
    "finish": _schema(["summary"], summary=S),
    "approve": _schema([]),
    "request_changes": _schema(["items"], items=STRINGS),
}


def schema(name):
    if name in LOOP_TOOLS:
        return LOOP_TOOLS[name]
    return TOOLS[name][0] if name in TOOLS else _schema([])


def dispatch(ctx, name, args):
    """Run one registry tool; ToolError for a failed call (its code is the failure class)."""
    if name not in TOOLS:
        raise ToolError("unavailable", f"`{name}` is not a tool the built-in engine carries out")
    if not isinstance(args, dict):
        raise ToolError("invalid-argument", "the arguments must be an object")
    return TOOLS[name][1](ctx, args)


def run_turn(engine, agent, reply, offered):
    """A tool-calling turn: each of the reply's tool calls, bracketed by tool_call/tool_result.
    Returns the turn's (error, errorType), or None."""
    if not reply.tool_calls:
        agent.window.append(message("user", "Your reply called no tool. Work by calling tools, and end the "
                                    "session with one of: " + ", ".join(t for t in offered if t in ENDING_TOOLS)
                                    + ".", "system"))
        return ("missing_completion", "missing_completion_no_call")
    records = StoreRecords(lambda record: _emit(agent, record))
    try:
        for call in reply.tool_calls:
            _call(engine, agent, call, offered, records)
    finally:
        records.finish(lambda level, text: agent.emit("log", level=level, message=text),
                       lambda kind: agent.holdings[kind].impl)
    return None


def _emit(agent, record):
    fields = dict(record)
    agent.emit(fields.pop("type"), **fields)


def _call(engine, agent, call, offered, records):
    """One tool call of the reply, bracketed by tool_call/tool_result; its answer joins the window."""
    agent.emit("tool_call", name=call.name, args=call.args)
    try:
        if call.name not in offered:
            raise ToolError("unavailable", f"`{call.name}` is not a tool this agent was offered")
        if call.name in ENDING_TOOLS:
            summary, content = ending(agent, call.name, call.args)
        elif call.name in DELEGATION:
            summary, content = engine.delegate(agent, call.name, call.args)
        elif call.name == "wait_for_issue":
            content = issues.wait(engine, agent, call.args.get("issue_id"))
            summary = content.split(":", 1)[0]
        else:
            summary, content, changed = dispatch(agent, call.name, call.args)
            agent.tool_calls += 1
            for kind in changed:
                engine.snapshot(agent, kind, records)
        agent.emit("tool_result", name=call.name, ok=True, summary=summary)
    except (ToolError, OSError) as exc:  # an OSError's reason, never the host path it names
        exc = exc if isinstance(exc, ToolError) else ToolError("io-error", exc.strerror or "an I/O error")
        summary, content = None, f"error ({exc.code}): {exc.message}"
        engine.tool_failures[exc.code] = engine.tool_failures.get(exc.code, 0) + 1
        agent.emit("tool_result", name=call.name, ok=False, summary=exc.message, failure=exc.code)
    agent.window.append(message("tool", content, "tool_output", toolCallId=call.id))


def ending(agent, name, args):
    """An ending tool: the agent's ending, which the turn's close applies."""
    if name == "finish":
        summary = args.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            raise ToolError("invalid-argument", "finish needs a non-empty summary")
        agent.ending = ("finish", bounded(summary.strip(), "a finish summary"), None)
    elif name == "approve":
        agent.ending = ("approve", "approved", None)
    else:
        items = [i.strip() for i in args.get("items") or [] if isinstance(i, str) and i.strip()]
        if not items:
            raise ToolError("invalid-argument", "request_changes needs at least one change")
        bounded("\n".join(items), "the changes asked for")
        agent.ending = ("request_changes", "changes requested:\n" + "\n".join(f"- {i}" for i in items), items)
    return name.replace("_", " "), "the session ends when this turn closes"
