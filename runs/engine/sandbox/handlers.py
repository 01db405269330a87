"""One typed handler per operation: `HANDLERS[op_id](membrane, **arguments)`.

Arguments and results are the plain forms of runs/engine/wit_values.py (records as dicts,
variants as (case, payload)). A handler raises ToolError for a failed call; the membrane has
already emitted api_call and asked the gate before a handler runs.
"""

import contextlib

from runs.engine.tools import docs
from runs.engine.tools.errors import ToolError, bounded
from runs.engine.tools.context_views import SEARCH_RESULTS, docs_view, file_view, text_view
from runs.engine.tools.workspace import shell_records
from surfaces.catalogue import BY_ID, OPERATIONS

HANDLERS = {}
BLOCKING = {"delegation.wait_for_subagents", "board.wait_for_issue"}  # calls during which other agents take their turns
# A call's host work (a listing, a walk, a write) stops this long before the program's deadline, so the
# program still runs to meet the call's limit-exceeded error: at the deadline the epoch stops the guest.
REPORT_SECS = 0.1


def host_clock(m, op_id):
    """What bounds a call's host work: the program's budget, less the moment the program needs to see
    a call cut short; nothing for a wait, whose budget stops while other agents run."""
    if op_id in BLOCKING:
        return contextlib.nullcontext()
    return m.ctx.workspace.until(m.deadline - REPORT_SECS, m.budget)


def handles(op_id):
    def register(fn):
        assert op_id in BY_ID, op_id
        HANDLERS[op_id] = fn
        return fn
    return register


# -- shell --------------------------------------------------------------------------------------
@handles("shell.shell")
def _shell(m, command, timeout_secs):
    budget = m.remaining()
    timeout = min(timeout_secs, budget) if timeout_secs is not None else budget
    if timeout <= 0:
        raise ToolError("limit-exceeded", f"{m.budget} is spent")
    result, record = m.ctx.workspace.shell(command, timeout, **m.ctx.shell_bounds)
    for kind, fields in shell_records(result, record):
        m.emit({"type": kind, **fields})
    return result  # a process that ran is a success whatever it exited with


# -- files --------------------------------------------------------------------------------------
@handles("files.read_file")
def _read_file(m, path, offset, limit):
    return m.ctx.workspace.read_file(path, offset, limit)


@handles("files.read_text_file")
def _read_text_file(m, path, offset, limit):
    kind, read = m.ctx.workspace.read_file(path, offset, limit)
    if kind != "text":
        raise ToolError("invalid-argument", f"{path} is not a text file")
    return read


@handles("files.write_file")
def _write_file(m, path, contents):
    return m.ctx.workspace.write_file(path, contents)


@handles("files.edit_file")
def _edit_file(m, path, old_string, new_string):
    m.ctx.workspace.edit_file(path, old_string, new_string)


@handles("files.list_dir")
def _list_dir(m, path):
    return m.ctx.workspace.list_dir(path)


@handles("files.search")
def _search(m, query, path, limit):
    return m.ctx.workspace.search(query, path, limit)


@handles("files.tree")
def _tree(m, path, depth):
    return m.ctx.workspace.tree(path, depth)


# -- skills -------------------------------------------------------------------------------------
@handles("skills.read_skill")
def _read_skill(m, name):
    library = m.store("skills")
    text = library.read(name)
    m.load_code(name, library.code_module(name))  # a code skill loads into lib for the next program
    m.queue_on_use("skill", name, library.on_use_script(name, m.ctx.language))
    m.snapshot("skills")
    return text


# -- memories -----------------------------------------------------------------------------------
def _mutated(m, revision):
    m.snapshot("memories")
    m.store_records.add({"type": "memory_revision", **revision}, "memories")
    return m.store("memories").usage()


def _memory(m, action, memory):
    revision = getattr(m.store("memories"), action)(memory)
    m.load_code(memory["name"], memory.get("code"))  # a code memory loads into lib
    return _mutated(m, revision)


@handles("memories.write_memory")
def _write_memory(m, memory):
    return _memory(m, "write", memory)


@handles("memories.update_memory")
def _update_memory(m, memory):
    return _memory(m, "update", memory)


@handles("memories.create_memory")
def _create_memory(m, memory):
    return _memory(m, "create", memory)


@handles("memories.read_memory")
def _read_memory(m, name):
    store = m.store("memories")
    text = store.read(name)
    m.queue_on_use("memory", name, store.memories[name].get("on_use"))
    return text


@handles("memories.edit_memory")
def _edit_memory(m, edit):
    return _mutated(m, m.store("memories").edit(edit["name"], edit["search"], edit["replace"]))


@handles("memories.search_memories")
def _search_memories(m, keywords):
    return m.store("memories").search(keywords)


@handles("memories.delete_memory")
def _delete_memory(m, name):
    return _mutated(m, m.store("memories").delete(name))


# -- tasks --------------------------------------------------------------------------------------
def _tasks(m, action, *args):
    result = getattr(m.store("tasks"), action)(*args)
    m.snapshot("tasks")
    return result


@handles("tasks.add_task")
def _add_task(m, task):
    return _tasks(m, "add", task)


@handles("tasks.update_task")
def _update_task(m, id, patch):  # noqa: A002 — the WIT's parameter name
    return _tasks(m, "update", id, patch)


@handles("tasks.set_blocked_by")
def _set_blocked_by(m, id, blocked_by):  # noqa: A002
    return _tasks(m, "set_blocked_by", id, blocked_by)


@handles("tasks.complete_task")
def _complete_task(m, id):  # noqa: A002
    return _tasks(m, "complete", id)


@handles("tasks.remove_task")
def _remove_task(m, id):  # noqa: A002
    return _tasks(m, "remove", id)


# -- board --------------------------------------------------------------------------------------
def _board(m, action, *args):
    result = getattr(m.store("board"), action)(*args)
    m.snapshot("board")
    return result


@handles("board.create_epic")
def _create_epic(m, epic):
    return _board(m, "create_epic", epic)


@handles("board.create_issue")
def _create_issue(m, issue):
    return _board(m, "create_issue", issue)


@handles("board.update_issue")
def _update_issue(m, id, patch):  # noqa: A002
    return _board(m, "update_issue", id, patch)


@handles("board.set_issue_blocked_by")
def _set_issue_blocked_by(m, id, blocked_by):  # noqa: A002
    return _board(m, "set_issue_blocked_by", id, blocked_by)


@handles("board.remove_epic")
def _remove_epic(m, id):  # noqa: A002
    return _board(m, "remove_epic", id)


@handles("board.remove_issue")
def _remove_issue(m, id):  # noqa: A002
    return _board(m, "remove_issue", id)


@handles("board.wait_for_issue")
def _wait_for_issue(m, id):  # noqa: A002
    # Blocking in the run loop: the issue's implementers and reviewers run inside the call.
    if m.ctx.delegation is None:
        raise ToolError("unavailable", f"`{m.spelled('board.wait_for_issue')}` needs a run loop to dispatch "
                                       "the issue; this program runs outside one")
    return m.ctx.delegation.wait_for_issue(id)


# -- context ------------------------------------------------------------------------------------
@handles("context.evict_file_view")
def _evict_file_view(m, path):
    window = m.ctx.window
    paths = [v.selector for v in window.views if v.kind == "file" and (path is None or v.selector == path)]
    evicted = [view for selector in paths for view in window.close(selector, kinds=("file",))]
    m.closed(path or "every file view", evicted, "evict_file_views")
    return {"items": len(evicted), "reclaimed_tokens": sum(v.tokens for v in evicted), "paths": paths,
            "detail": f"{len(evicted)} file view(s) evicted"}


@handles("context.archive_thread")
def _archive_thread(m, ranges):
    m.store("archive")
    if m.ctx.thread is None:
        raise ToolError("unavailable", "this program runs outside a run loop, so it has no thread to archive")
    return m.ctx.thread.archive(ranges)


@handles("context.search_archive")
def _search_archive(m, query):
    return m.store("archive").search(query)


@handles("context.compact")
def _compact(m, summary, files):
    if not summary.strip():
        raise ToolError("invalid-argument", "a compaction needs a summary")
    # the last one stands
    m.outcome.compaction = {"summary": bounded(summary, "a compaction's summary"), "files": list(files)}
    return None


# -- session: endings set a flag; the last declaration stands --------------------------------------
@handles("session.finish")
def _finish(m, summary):
    if not summary.strip():
        raise ToolError("invalid-argument", f"`{m.spelled('session.finish')}` needs a non-empty summary of what you did")
    m.declare_ending("session.finish", {"summary": bounded(summary, "a finish summary")})


@handles("session.approve")
def _approve(m):
    m.declare_ending("session.approve", {})


@handles("session.request_changes")
def _request_changes(m, items):
    kept = [item.strip() for item in items if item.strip()]
    if not kept:
        raise ToolError("invalid-argument",
                        f"`{m.spelled('session.request_changes')}` needs at least one change to ask for")
    bounded("\n".join(kept), "the changes asked for")
    m.declare_ending("session.request_changes", {"items": kept})


# -- docs and views -----------------------------------------------------------------------------
@handles("docs.search")
def _docs_search(m, query, modules, type_name, kind, offset, limit):
    page = docs.search(m.ctx.grants, m.ctx.language, query, modules, type_name, kind, offset, limit, m.lib_entries())
    lines = [f"{page['total']} entr{'y' if page['total'] == 1 else 'ies'}"
             + (f" for {query!r}" if query else "") + (f" in {', '.join(modules)}" if modules else "")]
    lines += [f"{hit['key']} ({hit['kind']}) — {hit['summary']}" for hit in page["hits"]]
    m.place(text_view(SEARCH_RESULTS, "\n".join(lines)))
    return page


@handles("docs.close")
def _docs_close(m, key):
    return m.closed(key, m.ctx.window.close(key, kinds=("docs",)))


@handles("docs.close_all")
def _docs_close_all(m):
    return m.closed("all documentation views", m.ctx.window.close_kind("docs"), "close_docs_views", "all of them")


@handles("views.open_docs_view")
def _open_docs_view(m, name):
    entry = docs.lookup(m.ctx.grants, m.ctx.language, name, m.lib_entries())
    if m.ctx.window.find("docs", entry.key) is None:  # the documentation band is append-only
        m.place(docs_view(entry.key, entry.body))
    for type_entry in docs.type_views(entry, m.ctx.language, m.ctx.doc_view_types):
        if m.ctx.window.find("docs", type_entry.key) is None:
            m.place(docs_view(type_entry.key, type_entry.body))


@handles("views.open_text")
def _open_text(m, label, body):
    m.place(text_view(label, body))


@handles("views.open_file")
def _open_file(m, path, offset, limit, max_line_chars):
    kind, read = m.ctx.workspace.read_file(path, offset, limit)
    if kind == "text":
        if max_line_chars:
            read["contents"] = "".join(line[:max_line_chars] + ("\n" if line.endswith("\n") and
                                                                len(line) > max_line_chars + 1 else "")
                                       if len(line.rstrip("\n")) > max_line_chars else line
                                       for line in read["contents"].splitlines(keepends=True))
        m.place(file_view(path, read))
    return (kind, read)


@handles("views.close")
def _views_close(m, selector):
    return m.closed(selector, m.ctx.window.close(selector))


@handles("views.current")
def _views_current(m):
    return [{"kind": v.kind, "selector": v.selector, "tokens": v.tokens, "region": None} for v in m.ctx.window.views]


# -- programs -----------------------------------------------------------------------------------
def _library(m):
    if m.ctx.programs is None:
        raise ToolError("unavailable", "this agent keeps no program library")
    return m.ctx.programs


@handles("programs.history")
def _history(m):
    return [{"id": p["id"], "turn": p["turn"], "lines": p["source"].count("\n") + 1, "chars": len(p["source"]),
             "ok": p["ok"], "error": p.get("error")} for p in _library(m)]


@handles("programs.get")
def _get(m, id):  # noqa: A002
    for program in _library(m):
        if program["id"] == id:
            return program["source"]
    raise ToolError("not-found", f"there is no stored program {id}")


@handles("programs.rerun")
def _rerun(m, source):
    if not source.strip():
        raise ToolError("invalid-argument", "the program to rerun is empty")
    if m.outcome.rerun is not None:
        raise ToolError("refused", "this program already handed one over; the first one stands")
    m.outcome.rerun = source


# -- delegation ---------------------------------------------------------------------------------
@handles("delegation.spawn_subagent")
def _spawn_subagent(m, request):
    if m.ctx.delegation is not None:
        return m.ctx.delegation.spawn(request)
    handle = {"id": m.mint(), "slot": 0, "model_id": ""}
    m.outcome.delegations.append(("delegation.spawn_subagent", {**request, "id": handle["id"]}))
    return handle


@handles("delegation.wait_for_subagents")
def _wait_for_subagents(m, ids):
    if m.ctx.delegation is not None:
        return m.ctx.delegation.wait(ids)
    m.outcome.delegations.append(("delegation.wait_for_subagents", {"ids": ids}))
    return []


@handles("delegation.send_message")
def _send_message(m, agent_id, message):
    if m.ctx.delegation is not None:
        return m.ctx.delegation.send(agent_id, message)
    m.outcome.delegations.append(("delegation.send_message", {"agent_id": agent_id, "message": message}))


@handles("delegation.transition_state")
def _transition_state(m, state, note):
    m.declare_succession("delegation.transition_state", {"state": state, "note": note})


@handles("delegation.exec")
def _exec(m, agent, prompt):
    if not agent.strip():
        raise ToolError("invalid-argument", "name the agent profile to hand the session to")
    m.declare_succession("delegation.exec", {"agent": agent, "prompt": prompt})


@handles("delegation.fork")
def _fork(m, prompt):
    handle = {"id": m.mint(), "slot": 0, "model_id": ""}
    m.outcome.forks.append({"id": handle["id"], "prompt": prompt})  # the copy starts when the turn closes
    return handle


assert set(HANDLERS) == {op.id for op in OPERATIONS}, sorted({op.id for op in OPERATIONS} - set(HANDLERS))
