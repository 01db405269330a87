"""The membrane's rules (seeds 002/003/004), each driven by a real program through the real guest."""

import json

import pytest

from tests.sandbox_run import context, run

pytestmark = pytest.mark.usefixtures("guest")


def test_an_ungranted_call_is_refused_in_the_programs_spelling_and_still_recorded(tmp_path):
    result = run(context(tmp_path, capabilities=["read-file"]), """
        import gg
        try:
            gg.programs.history()
        except gg.core.ApiError as err:
            gg.views.open_text("err", err)
    """)
    assert result.outcome.ok
    pair = [r for r in result.records if r.get("operation") == "programs.history"]
    assert pair == [{"type": "api_call", "operation": "programs.history"},
                    {"type": "api_result", "operation": "programs.history", "ok": False, "failure": "unavailable"}]
    view = result.outcome.views[0].body
    assert '"operation": "history"' in view and '"code": "unavailable"' in view  # the JSON form keeps all three
    assert "`gg.programs.history` is not available" in view and "program-library" not in view
    assert any("`gg.programs.history` call was refused before it ran" in line for line in result.logs("warn"))


def test_an_ending_outside_the_role_names_the_endings_the_agent_has(tmp_path):
    result = run(context(tmp_path, role="review"), "import gg\ngg.session.finish('done')")
    assert result.outcome.ending is None
    assert "Use `gg.session.approve` or `gg.session.request_changes` instead." in result.outcome.error
    # gg's words exactly (seed 004: the error and nothing else)
    assert result.outcome.error.endswith(
        "`gg.session.finish` is not available. Use `gg.session.approve` or `gg.session.request_changes` instead.")


def test_role_is_checked_before_shape(tmp_path):
    result = run(context(tmp_path), "import gg\ngg.session.request_changes([])")
    assert result.outcome.error.endswith("`gg.session.request_changes` is not available. Use `gg.session.finish` instead.")
    assert result.of("api_result")[-1]["failure"] == "unavailable"


def test_finish_needs_a_summary_and_request_changes_trims_and_drops_blanks(tmp_path):
    assert "non-empty summary" in run(context(tmp_path), "import gg\ngg.session.finish('  ')").outcome.error
    review = context(tmp_path, role="review")
    refused = run(review, "import gg\ngg.session.request_changes(['  ', ''])")
    assert "at least one change" in refused.outcome.error and refused.of("api_result")[-1]["failure"] == "invalid-argument"
    accepted = run(review, "import gg\ngg.session.request_changes(['  fix the test ', ' '])")
    assert accepted.outcome.ending == ("session.request_changes", {"items": ["fix the test"]})


def test_the_last_declaration_stands_and_superseded_ones_are_counted(tmp_path):
    result = run(context(tmp_path), """
        import gg
        gg.session.finish("first")
        gg.session.finish("second")
        gg.views.open_text("ran on", "after declaring")
        gg.session.finish("third")
    """)
    assert result.outcome.ending == ("session.finish", {"summary": "third"})
    assert result.outcome.views  # the program ran on after declaring
    assert any("2 more time(s)" in line for line in result.logs("warn"))
    assert result.of("code_execution")[0]["finished"] == "third"


def test_a_program_that_declares_and_then_throws_has_its_ending_revoked(tmp_path):
    result = run(context(tmp_path), "import gg\ngg.session.finish('done')\nraise ValueError('late')")
    assert result.outcome.ending is None
    assert any("and then failed, so the session was NOT ended: done" in line for line in result.logs("warn"))
    assert result.outcome.model_messages == [("Runtime error", result.outcome.error)]
    assert "finished" not in result.of("code_execution")[0]


def test_an_on_use_script_gets_no_ending_group(tmp_path):
    result = run(context(tmp_path, on_use_script=True), "import gg\ngg.session.finish('done')")
    assert result.outcome.ending is None
    assert result.outcome.error.endswith("`gg.session.finish` is not available.")  # no ending to name instead


def test_calls_before_a_failure_stay_landed_and_shell_returns_the_exit_code(tmp_path):
    ctx = context(tmp_path, capabilities=["write-file", "shell", "read-file"])
    result = run(ctx, """
        import gg
        gg.files.write_file("kept.txt", "landed")
        out = gg.shell.shell("exit 7")
        gg.views.open_text("code", str(out.exit_code))
        gg.files.read_file("absent.txt")
        gg.files.write_file("never.txt", "x")
    """)
    root = ctx[0].workspace.root
    assert (root / "kept.txt").read_text() == "landed" and not (root / "never.txt").exists()
    assert result.outcome.views[0].body == "7"
    assert result.of("shell")[0]["exitCode"] == 7
    assert "line 6" in result.outcome.error and "not-found" in result.outcome.error


def test_a_flat_name_is_answered_with_gg_modules_and_lib_when_code_is_loaded(tmp_path):
    ctx = context(tmp_path, capabilities=["read-file"])
    result = run(ctx, "read_file('x')")
    assert "gg.files, gg.shell" in result.outcome.error and "gg.core" in result.outcome.error
    assert "lib" not in result.outcome.error.split("gg's modules", 1)[1]
    assert result.outcome.error_type == "program_unknown_name"
    ctx[0].lib.load("csv-tools", "def parse(text):\n    return text.split(',')\n")
    assert "and lib" in run(ctx, "read_file('x')").outcome.error


def test_exec_and_transition_state_share_one_succession_slot(tmp_path):
    result = run(context(tmp_path, capabilities=["exec"], machine=True,
                         operations={"delegation.exec", "delegation.transition_state"}), """
        import gg
        gg.delegation.exec("reviewer", "take over")
        try:
            gg.delegation.transition_state("done", None)
        except gg.core.ApiError as err:
            gg.views.open_text("second", err.code + ": " + err.message)
    """)
    assert result.outcome.succession == ("delegation.exec", {"agent": "reviewer", "prompt": "take over"})
    assert result.outcome.views[0].body.startswith("refused: this turn already declared a succession")


def test_fork_returns_the_copys_id_at_once(tmp_path):
    result = run(context(tmp_path, capabilities=["fork", "subagents"]), """
        import gg
        handle = gg.delegation.fork("try the other approach")
        gg.views.open_text("fork", handle.id)
    """)
    assert result.outcome.views[0].body == "agent-1"
    assert result.outcome.forks == [{"id": "agent-1", "prompt": "try the other approach"}]


def test_docs_and_views_are_always_bound_and_search_shows_only_what_permits_allows(tmp_path):
    result = run(context(tmp_path, capabilities=["read-file"], doc_view_types="return+errors"), """
        import gg
        page = gg.docs.search("file")
        keys = [hit.key for hit in page.hits]
        assert "gg.files.read_file" in keys and "gg.files.write_file" not in keys, keys
        gg.views.open_docs_view("gg.files.read_file")
    """)
    assert result.outcome.ok, result.outcome.error
    headings = [v.heading for v in result.outcome.views]
    assert headings == ["View: search results", "Documentation: gg.files.read_file", "Documentation: gg.files.FileRead",
                        "Documentation: gg.core.ApiError"]
    none = run(context(tmp_path, capabilities=["read-file"], doc_view_types="none"),
               "import gg\ngg.views.open_docs_view('gg.files.read_file')")
    assert [v.heading for v in none.outcome.views] == ["Documentation: gg.files.read_file"]


def test_lib_loads_under_python_keys_with_a_suffix_for_a_second_alike(tmp_path):
    ctx = context(tmp_path, capabilities=["memories"])
    result = run(ctx, """
        import gg
        gg.memories.write_memory(name="csv-tools", description="csv", body="b", code="def cols(s):\\n    return len(s.split(','))\\n")
        gg.memories.write_memory(name="csv_tools", description="csv", body="b", code="def rows(s):\\n    return 2\\n")
    """)
    assert result.outcome.ok, result.outcome.error
    assert list(ctx[0].lib.modules) == ["csv_tools", "csv_tools2"]
    used = run(ctx, "import gg\nfrom lib import csv_tools, csv_tools2\ngg.views.open_text('n', str(csv_tools.cols('a,b,c')) + str(csv_tools2.rows('')))")
    assert used.outcome.views[0].body == "32"


def test_a_module_that_fails_to_load_is_a_notice_naming_it_never_its_source(tmp_path):
    ctx = context(tmp_path)
    ctx[0].lib.load("broken-helper", "SECRET_SOURCE = 1\nraise RuntimeError('boom')\n")
    result = run(ctx, "import gg\nfrom lib import broken_helper\ngg.views.open_text('ok', 'carried on')")
    assert result.outcome.ok
    (heading, body), = result.outcome.model_messages
    assert heading == "Notice" and "`broken-helper`" in body and "RuntimeError: boom" in body
    assert "SECRET_SOURCE" not in body


def test_notices_come_before_the_error(tmp_path):
    ctx = context(tmp_path, capabilities=["program-library"])
    ctx[0].lib.load("bad", "raise ValueError('nope')")
    result = run(ctx, "import gg\nimport lib.bad\ngg.programs.rerun('print(1)')\nraise KeyError('x')")
    assert [h for h, _ in result.outcome.model_messages] == ["Notice", "Notice", "Runtime error"]
    assert "was not run" in result.outcome.model_messages[1][1] and result.outcome.rerun is None


def test_refusal_records_are_capped_and_the_overflow_counted(tmp_path):
    result = run(context(tmp_path), """
        import gg
        for _ in range(120):
            try:
                gg.files.read_file("x")
            except gg.core.ApiError:
                pass
        gg.views.open_text("done", "yes")
    """)
    refused = [line for line in result.logs("warn") if "refused before it ran" in line]
    assert len(refused) == 100
    assert "20 further refused call(s) were not recorded" in result.logs("warn")
    record = result.of("code_execution")[0]
    assert record["apiCalls"] == 121 and record["toolCalls"] == 0 and record["refusalsSuppressed"] == 20


def test_calls_described_are_capped_at_500(tmp_path):
    result = run(context(tmp_path), "import gg\nfor i in range(520):\n    gg.views.open_text('v', str(i))")
    assert len(result.of("api_call")) == 500 and len(result.of("api_result")) == 500
    record = result.of("code_execution")[0]
    assert record["apiCalls"] == 520 and record["callsSuppressed"] == 20
    opened = [line for line in result.logs("debug") if "view `v`" in line]
    assert len(opened) == 100 and record["viewRecordsSuppressed"] == 420


def test_a_malformed_call_is_invalid_argument_naming_the_sdk_complaint_and_still_recorded(tmp_path):
    result = run(context(tmp_path, capabilities=["tasks"]), "import gg\ngg.tasks.add_task({'title': 'x'})")
    assert "`add_task` failed (invalid-argument)" in result.outcome.error and "'id'" in result.outcome.error
    assert result.outcome.error_type == "program_api_error"
    # The call the model made is on the stream like any other, failed with the SDK's class.
    assert [r for r in result.records if r["type"] in ("api_call", "api_result")] == [
        {"type": "api_call", "operation": "tasks.add_task"},
        {"type": "api_result", "operation": "tasks.add_task", "ok": False, "failure": "invalid-argument"}]
    assert result.of("code_execution")[0]["apiCalls"] == 1 and result.of("code_execution")[0]["toolCalls"] == 0


def test_a_malformed_ungranted_call_is_refused_before_its_shape_is_judged(tmp_path):
    result = run(context(tmp_path), "import gg\ngg.tasks.add_task(42)")
    assert "`add_task` failed (unavailable)" in result.outcome.error and "is not available" in result.outcome.error
    assert result.of("api_result") == [
        {"type": "api_result", "operation": "tasks.add_task", "ok": False, "failure": "unavailable"}]


def test_undocumented_calls_count_calls_without_a_documentation_view_from_an_earlier_turn(tmp_path):
    ctx = context(tmp_path, capabilities=["read-file", "docview-close"])
    ctx[0].workspace.write_file("a.txt", "alpha\n")
    ctx[0].turn = 1
    first = run(ctx, """
        import gg
        gg.views.open_docs_view("gg.files.read_file")
        gg.files.read_file("a.txt")
        gg.files.read_file("a.txt")
    """)
    assert first.of("code_execution")[0]["undocumentedCalls"] == {  # a view opened this turn does not count yet
        "calls": 3, "operations": {"views.open_docs_view": 1, "files.read_file": 2}}
    ctx[0].turn = 2
    second = run(ctx, """
        import gg
        gg.files.read_file("a.txt")
        gg.views.open_text("n", "x")
    """)
    assert second.of("code_execution")[0]["undocumentedCalls"] == {"calls": 1, "operations": {"views.open_text": 1}}
    ctx[0].turn = 3
    third = run(ctx, """
        import gg
        gg.docs.close("gg.files.read_file")
        gg.files.read_file("a.txt")
    """)
    assert third.of("code_execution")[0]["undocumentedCalls"]["operations"] == {"docs.close": 1, "files.read_file": 1}


def test_a_documented_program_reports_no_undocumented_calls(tmp_path):
    ctx = context(tmp_path)
    run(ctx, "import gg\ngg.views.open_docs_view('gg.views.open_text')")
    ctx[0].turn = 1
    result = run(ctx, "import gg\ngg.views.open_text('n', 'x')")
    assert "undocumentedCalls" not in result.of("code_execution")[0]


CSV_TOOLS = '''
__all__ = ["cols"]
def cols(s: str, sep=",") -> int:
    """How many columns a line has."""
    return len(s.split(sep))
def rows(s):
    return 2
def _private():
    pass
'''


def test_loading_code_opens_a_documentation_view_per_declared_function(tmp_path):
    ctx = context(tmp_path, capabilities=["memories", "docview-close"])
    result = run(ctx, f"""
        import gg
        gg.memories.write_memory(name="csv-tools", description="csv", body="b", code={CSV_TOOLS!r})
        gg.memories.write_memory(name="broken", description="x", body="b", code="def (:")
    """)
    assert result.outcome.ok, result.outcome.error
    docs = [v for v in result.outcome.views if v.kind == "docs"]
    assert [v.selector for v in docs] == ["lib.csv_tools.cols"]  # __all__ decides; code that does not parse opens none
    assert docs[0].heading == "Documentation: lib.csv_tools.cols"
    assert "lib.csv_tools.cols(s: str, sep=',') -> int" in docs[0].body
    assert "from lib import csv_tools" in docs[0].body and "How many columns a line has." in docs[0].body
    assert "return len" not in docs[0].body  # documentation, never the source
    closed = run(ctx, "import gg\ngg.docs.close('lib.csv_tools.cols')")  # closable like any other
    assert closed.outcome.ok and ctx[0].window.find("docs", "lib.csv_tools.cols") is None
    found = run(ctx, """
        import gg
        page = gg.docs.search("columns")
        gg.views.open_docs_view(page.hits[0].key)
    """)  # and searchable, and re-opened by its key
    assert found.outcome.ok, found.outcome.error
    assert [v.selector for v in found.outcome.views] == ["search results", "lib.csv_tools.cols"]


def test_every_wit_shape_crosses_the_membrane_intact_both_ways(tmp_path, monkeypatch):
    """Records, variants (bare and carrying), enums, options, lists, strings, s32/u32/u64/f64 and
    bools, as handlers receive them and as programs get them back. The host side converts at the
    C API's level (runs/engine/wit_values.py), so a wasmtime upgrade that moved a layout fails here."""
    from runs.engine.sandbox.handlers import HANDLERS
    from runs.engine.tools.errors import ToolError

    received = []

    def spy(op_id, result):
        def handler(m, **args):
            received.append((op_id, args))
            if isinstance(result, ToolError):
                raise result
            return result
        monkeypatch.setitem(HANDLERS, op_id, handler)

    spy("board.update_issue", None)
    spy("shell.shell", {"exit_code": None, "output": "é ☃\n", "truncated": True})
    spy("files.list_dir", [{"name": "d", "kind": "directory"}, {"name": "", "kind": "other"}])
    spy("files.read_file", ("image", {"media_type": "image/png", "label": "p.png", "bytes": 2 ** 40, "shown": False,
                                      "not_shown_reason": "not shown"}))
    spy("files.write_file", 2 ** 40 + 1)
    spy("delegation.wait_for_subagents", [{"id": "a", "status": "timed-out", "summary": ""},
                                          {"id": "b", "status": None, "summary": "s"}])
    spy("delegation.spawn_subagent", {"id": "agent-9", "slot": 4294967295, "model_id": "m"})
    spy("context.archive_thread", {"items": 0, "reclaimed_tokens": 0, "paths": [], "detail": ""})
    spy("tasks.update_task", ToolError("conflict", "a cycle ✗"))
    result = run(context(tmp_path, capabilities=["project-management", "shell", "read-file", "write-file", "list-dir",
                                                 "subagents", "tasks", "agent-managed-context"]), """
        import gg
        gg.board.update_issue("X-1", {"title": "t", "description": ("set", "d"), "in_scope": ["a", "b"],
                                      "status": "in-progress", "epic": ("set", "E")})
        gg.board.update_issue("X-2", {"description": "clear", "status": None})
        out = gg.shell.shell("true", 1.5)
        assert (out.exit_code, out.output, out.truncated) == (None, "é ☃\\n", True), out
        entries = gg.files.list_dir()
        assert [(e.name, e.kind) for e in entries] == [("d", "directory"), ("", "other")], entries
        image = gg.files.read_file("p.png", 3, None)
        assert (image.kind, image.bytes, image.shown, image.not_shown_reason) == ("image", 2 ** 40, False, "not shown")
        assert gg.files.write_file("w.txt", "") == 2 ** 40 + 1
        done = gg.delegation.wait_for_subagents()
        assert [(r.id, r.status, r.summary) for r in done] == [("a", "timed_out", ""), ("b", None, "s")], done
        gg.delegation.wait_for_subagents(["a"])
        handle = gg.delegation.spawn_subagent(agent="dev", issue_id="X-1")
        assert (handle.id, handle.slot, handle.model_id) == ("agent-9", 4294967295, "m"), handle
        gg.context.archive_thread([{"start": 1, "end": 2}])
        try:
            gg.tasks.update_task("t1", {"status": "done"})
        except gg.core.ApiError as err:
            assert (err.operation, err.code, err.message) == ("update_task", "conflict", "a cycle ✗"), err
        gg.views.open_text("done", "yes")
    """)
    assert result.outcome.ok, result.outcome.error
    assert received == [
        ("board.update_issue", {"id": "X-1", "patch": {
            "title": "t", "description": ("set", "d"), "in_scope": ["a", "b"], "out_of_scope": None,
            "completion_criteria": None, "status": "in-progress", "epic": ("set", "E")}}),
        ("board.update_issue", {"id": "X-2", "patch": {
            "title": None, "description": ("clear", None), "in_scope": None, "out_of_scope": None,
            "completion_criteria": None, "status": None, "epic": ("keep", None)}}),
        ("shell.shell", {"command": "true", "timeout_secs": 1.5}),
        ("files.list_dir", {"path": None}),
        ("files.read_file", {"path": "p.png", "offset": 3, "limit": None}),
        ("files.write_file", {"path": "w.txt", "contents": ""}),
        ("delegation.wait_for_subagents", {"ids": None}),
        ("delegation.wait_for_subagents", {"ids": ["a"]}),
        ("delegation.spawn_subagent", {"request": {"agent": "dev", "task": ("issue", "X-1")}}),
        ("context.archive_thread", {"ranges": [{"start": 1, "end": 2}]}),
        ("tasks.update_task", {"id": "t1", "patch": {"title": None, "description": ("keep", None), "status": "done"}}),
    ]


def test_an_agents_open_views_are_bounded(tmp_path):
    """20,000 text views of 5,000 characters were all taken: 100 MB in every later prompt."""
    result = run(context(tmp_path), """
        import gg
        opened = 0
        try:
            for i in range(20000):
                gg.views.open_text(f"w{i}", "y" * 5000)
                opened += 1
        except gg.core.ApiError as err:
            gg.views.open_text("w0", f"{opened} {err.code}")  # one open view replaced in place
    """)
    assert result.outcome.ok, result.outcome.error
    assert len(result.ctx.window.views) == 500  # 500 views of 5,000 characters: 2.5 M of the 4 Mi allowed
    assert result.ctx.window.find("text", "w0").body == "500 limit-exceeded"


def test_a_programs_store_records_are_bounded_and_the_last_state_still_recorded(tmp_path):
    from runs.engine.store_records import MAX_BYTES

    result = run(context(tmp_path, capabilities=["tasks"]), """
        import gg
        for i in range(20):
            gg.tasks.add_task({"id": f"t{i}", "title": "x" * 9000})
        for n in range(400):
            gg.tasks.update_task("t0", {"title": f"title {n} " + "y" * 9000})
    """)
    states = result.of("tasks_state")
    stored = sum(len(json.dumps(s, ensure_ascii=False)) for s in states[:-1])
    assert stored <= MAX_BYTES and len(states) < 40  # not 420 records of up to 190 KB each
    assert states[-1]["tasks"][0]["title"].startswith("title 399 ")  # the state the program left
    record = result.of("code_execution")[0]
    assert record["ok"] and record["storeRecordsSuppressed"] == 420 - (len(states) - 1)
    assert any("store record(s) past 4 MiB were not recorded; the state of tasks" in line
               for line in result.logs("warn"))


def test_what_a_program_hands_on_in_words_is_bounded(tmp_path):
    """A 10 MB summary was a record no stream takes and five million tokens of the next prompt."""
    huge = run(context(tmp_path), "import gg\ngg.session.finish('x' * 10_000_000)")
    assert huge.outcome.ending is None and "a finish summary is at most 64 KiB (10,000,000 bytes given)" in \
        huge.outcome.error
    fits = run(context(tmp_path), "import gg\ngg.session.finish('x' * 60_000)")
    assert fits.outcome.ending == ("session.finish", {"summary": "x" * 60_000})
    raised = run(context(tmp_path), "raise RuntimeError('y' * 5_000_000)")
    record = raised.of("code_execution")[0]
    assert not record["ok"] and 64 * 1024 <= len(record["error"].encode()) <= 64 * 1024 + 3
    assert raised.outcome.error == record["error"]
