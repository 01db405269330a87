"""The TypeScript arm: every program type-checked by the real warm compiler against gg.d.ts and run
in the real SpiderMonkey guest; every record validated against gg's telemetry schema as emitted."""

import json

import pytest

from runs.engine.sandbox import compiler as ts_compiler
from runs.engine.sandbox import typescript
from runs.engine.sandbox.guest import get_sandbox
from surfaces.typescript import declarations
from tests.sandbox_run import context, run


@pytest.fixture(scope="module", autouse=True)
def guest():
    return get_sandbox("typescript")  # builds on first use when var/ holds no current artifact


def ts(tmp_path, **options):
    return context(tmp_path, language="typescript", **options)


def test_a_program_reads_a_file_and_opens_a_view_through_the_membrane(tmp_path):
    ctx = ts(tmp_path, capabilities=["read-file"])
    (ctx[0].workspace.root / "notes.txt").write_text("one\ntwo\n")
    result = run(ctx, """
        import * as gg from "gg";
        const read = gg.files.readFile("notes.txt", { limit: 1 });
        if (read.kind !== "text" || read.totalLines !== 2) throw new Error(JSON.stringify(read));
        gg.views.openText("first line", read.contents);
        console.log("read", read.lastLine);
    """)
    assert result.outcome.ok, result.outcome.error
    assert [(r["type"], r["operation"]) for r in result.records if r["type"].startswith("api_")] == [
        ("api_call", "files.read_file"), ("api_result", "files.read_file"),
        ("api_call", "views.open_text"), ("api_result", "views.open_text")]
    assert [v.heading for v in result.outcome.views] == ["View: first line"]
    assert result.outcome.views[0].body == "one\n"
    assert result.outcome.model_messages == []
    assert result.of("code_execution")[0]["logs"] == ["read 1"]  # console.log goes to the operator only


def test_named_imports_records_flat_variants_and_receiver_methods(tmp_path):
    result = run(ts(tmp_path, capabilities=["project-management", "subagents"]), """
        import { board, views, ApiError } from "gg";
        const created = board.createIssue({ title: "t", agent: "coder" });
        let ack: string;
        try {
          ack = created.wait();  // the alias is recorded under board.wait_for_issue
        } catch (err) {
          ack = (err as ApiError).operation;
        }
        board.updateIssue(created.id, { description: { set: "why" }, status: "in-progress" });
        views.openText("issue", `${created.id} ${created.board.issues} ${ack}`);
    """)
    assert result.outcome.ok, result.outcome.error
    assert [r["operation"] for r in result.of("api_call")] == [
        "board.create_issue", "board.wait_for_issue", "board.update_issue", "views.open_text"]
    assert result.outcome.views[0].body.endswith(" 1 wait_for_issue")


def test_a_type_error_is_a_compiler_error_verbatim_and_none_of_the_program_runs(tmp_path):
    result = run(ts(tmp_path, capabilities=["write-file", "tasks"]), """
        import * as gg from "gg";
        gg.files.writeFile("ran.txt", "x");
        const n: number = "text";
        gg.tasks.addTask({ title: "x" });
    """)
    heading, body = result.outcome.model_messages[-1]
    assert heading == "Compiler error" and result.outcome.error_type == "transpile_syntax"
    assert body.startswith("program.ts(4,7): error TS2322: Type 'string' is not assignable to type 'number'.")
    assert "program.ts(5,18): error TS2345" in body and "Property 'id' is missing" in body
    assert result.of("api_call") == [] and not (result.ctx.workspace.root / "ran.txt").exists()
    assert result.of("code_execution")[0]["error"] == body


def test_a_compiler_error_keeps_only_the_first_few_diagnostics(tmp_path):
    source = "\n".join(f"const v{i}: number = 'x{i}';" for i in range(12))
    body = run(ts(tmp_path), source).outcome.error
    assert body.count("error TS2322") == 5
    assert body.splitlines()[0].startswith("program.ts(1,7)") and "program.ts(6," not in body


def test_a_compiler_that_could_not_start_is_a_notice_and_an_operator_error(tmp_path, monkeypatch):
    monkeypatch.setattr(ts_compiler, "WORKER", tmp_path / "missing-compiler.js")
    monkeypatch.setattr(ts_compiler, "_POOLS", {})
    result = run(ts(tmp_path), 'import * as gg from "gg";\ngg.views.openText("a", "b");')
    assert result.outcome.model_messages == [("Notice", "Your program was not run: the TypeScript compiler could not "
                                              "finish. Nothing about the program was rejected; write it again.")]
    assert result.outcome.retry and result.outcome.error_type is None and result.of("api_call") == []
    (crash,) = result.logs("error")
    assert "compiler crashed or could not start" in crash and "missing-compiler.js" in crash


def test_a_compiler_that_crashed_on_a_program_is_a_notice_and_the_next_program_compiles(tmp_path):
    nested = "const x = " + "(" * 20000 + "1" + ")" * 20000 + ";"
    result = run(ts(tmp_path), nested)
    assert result.outcome.model_messages[0][0] == "Notice" and "was not run" in result.outcome.model_messages[0][1]
    assert any("Maximum call stack" in line or "exited" in line for line in result.logs("error"))
    after = run(ts(tmp_path), 'import * as gg from "gg";\ngg.views.openText("after", "fine");')
    assert after.outcome.ok, after.outcome.error


def test_the_compiler_stays_warm_across_programs(tmp_path):
    compiler = ts_compiler.get_compiler(typescript.declarations_path(tmp_path))
    try:
        for i in range(3):
            assert compiler.compile("program.ts", f"const a{i}: number = {i};")["ok"]
        assert compiler.starts == 1
    finally:
        compiler.close()


def test_a_compile_holding_one_worker_holds_up_no_other(tmp_path):
    """One worker, serialised, made every TypeScript agent of the server wait behind a program the
    checker was slow on (up to 30 s); a second compile now takes the other worker."""
    pool = ts_compiler.get_compiler(typescript.declarations_path(tmp_path))
    busy = pool.free.get()  # as a compile in progress holds it
    try:
        assert pool.compile("program.ts", "const a: number = 1;")["ok"]
    finally:
        pool.free.put(busy)
        pool.close()


def test_the_deadline_stops_a_program(tmp_path):
    result = run(ts(tmp_path, timeout_secs=0.5), "while (true) {}")
    assert result.outcome.error_type == "sandbox_timeout"
    assert result.outcome.model_messages[-1] == ("Runtime error", "The program was stopped: it ran past its wall-clock "
                                                                  "limit of 0.5 s.")
    assert any("did not run to a result" in line for line in result.logs("warn"))


def test_the_memory_ceiling_stops_a_program_and_the_next_one_runs(tmp_path):
    result = run(ts(tmp_path, max_memory_bytes=64 * 1024 * 1024), """
        const kept: number[][] = [];
        while (true) kept.push(new Array(1 << 20).fill(1));
    """)
    assert result.outcome.error_type == "sandbox_out_of_memory", result.outcome.error
    assert "memory limit of 64 MiB" in result.outcome.error
    assert run(ts(tmp_path), 'import * as gg from "gg";\ngg.views.openText("after", "fine");').outcome.ok


@pytest.mark.parametrize("source, expected", [
    ("Date.now();", "no filesystem, network, environment, clock"),
    ("new Date();", "no filesystem, network, environment, clock"),
    ('declare function fetch(url: string): unknown;\nfetch("http://example.com");', "no filesystem, network, environment, clock"),
    ("declare const process: any;\nprocess.env;", "ReferenceError: process is not defined"),
    ("declare function require(m: string): any;\nrequire('fs');", "Cannot find module 'fs'"),
])
def test_nothing_outside_the_membrane_is_reachable(tmp_path, source, expected):
    result = run(ts(tmp_path), source)
    assert not result.outcome.ok and expected in result.outcome.error


def test_api_error_carries_operation_code_message_and_serialises_through_to_json(tmp_path):
    result = run(ts(tmp_path, capabilities=["read-file"]), """
        import * as gg from "gg";
        try {
          gg.files.readFile("absent.txt");
        } catch (err) {
          const e = err as gg.ApiError;
          gg.views.openText("err", JSON.stringify({ err, op: e.operation, code: e.code, own: e.message }));
        }
    """)
    assert result.outcome.ok, result.outcome.error
    view = json.loads(result.outcome.views[0].body)
    assert view["err"] == {"operation": "read_file", "code": "not-found", "message": "absent.txt does not exist"}
    assert view["op"] == "read_file" and view["code"] == "not-found"


def test_a_binding_level_type_error_is_retagged_as_an_api_error_in_the_sdks_spelling(tmp_path):
    result = run(ts(tmp_path, capabilities=["tasks"]), """
        import * as gg from "gg";
        gg.tasks.addTask(JSON.parse('{"title": "x"}'));
    """)
    assert result.outcome.error_type == "program_api_error"
    first = result.outcome.error.splitlines()[0]
    assert first.startswith("`addTask` failed (invalid-argument): ") and "expected a string" in first
    assert result.outcome.error.splitlines()[1] == "    at line 3, column 10"
    assert result.of("api_result") == [{"type": "api_result", "operation": "tasks.add_task", "ok": False,
                                        "failure": "invalid-argument"}]


def test_a_bindings_fault_is_classified_by_its_brand_not_instanceof(tmp_path):
    # The bindings' TypeError is not `instanceof Error` in the program's realm; the SDK still
    # re-tags it, and the program sees an ApiError it can branch on.
    result = run(ts(tmp_path, capabilities=["read-file"]), """
        import * as gg from "gg";
        try {
          gg.files.readFile(42 as any);
        } catch (err) {
          gg.views.openText("e", [err instanceof gg.ApiError, err instanceof Error,
            Object.prototype.toString.call(err), (err as gg.ApiError).operation].join(" "));
        }
    """)
    assert result.outcome.views[0].body == "true true [object Error] readFile"


def test_a_reference_error_is_answered_with_ggs_modules_and_lib_when_code_is_loaded(tmp_path):
    ctx = ts(tmp_path, capabilities=["read-file"])
    source = 'declare function readFile(path: string): string;\nreadFile("x");'
    result = run(ctx, source)
    assert result.outcome.error_type == "program_unknown_name"
    assert result.outcome.error.startswith("ReferenceError: readFile is not defined. gg's modules are gg.files, gg.shell")
    assert "gg.core" in result.outcome.error and "lib" not in result.outcome.error.split("gg's modules", 1)[1]
    assert result.outcome.error.splitlines()[1] == "    at line 2, column 1"
    ctx[0].lib.load("csv-tools", "export function parse(text: string): string[] { return text.split(','); }",
                    "typescript")
    assert "and lib (the code you loaded)" in run(ctx, source).outcome.error


def test_a_refusal_is_worded_in_typescript_with_the_short_key_on_the_error(tmp_path):
    result = run(ts(tmp_path, role="review"), """
        import * as gg from "gg";
        try {
          gg.session.finish("done");
        } catch (err) {
          const e = err as gg.ApiError;
          gg.views.openText("refused", `${e.operation}|${e.code}|${e.message}`);
        }
    """)
    operation, code, message = result.outcome.views[0].body.split("|")
    assert (operation, code) == ("finish", "unavailable")
    assert message == "`gg.session.finish` is not available. Use `gg.session.approve` or `gg.session.requestChanges` instead."
    assert {"type": "api_result", "operation": "session.finish", "ok": False, "failure": "unavailable"} in result.records
    assert any("`gg.session.finish` call was refused before it ran" in line for line in result.logs("warn"))


def test_an_ungranted_call_is_refused_and_uncaught_records_as_program_unknown_name(tmp_path):
    result = run(ts(tmp_path, capabilities=["read-file"]), 'import * as gg from "gg";\ngg.programs.history();')
    assert result.outcome.error_type == "program_unknown_name"
    assert result.outcome.error.startswith("`history` failed (unavailable): `gg.programs.history` is not available.")
    assert "in this run" not in result.outcome.error
    assert "program-library" not in result.outcome.error


def test_the_role_is_checked_before_the_shape(tmp_path):
    result = run(ts(tmp_path), 'import * as gg from "gg";\ngg.session.requestChanges([]);')
    assert ": `gg.session.requestChanges` is not available. Use `gg.session.finish` instead.\n" in result.outcome.error
    assert result.of("api_result")[-1]["failure"] == "unavailable"


def test_shell_is_carved_out_a_process_that_ran_is_a_value(tmp_path):
    ctx = ts(tmp_path, capabilities=["shell", "write-file", "read-file"])
    result = run(ctx, """
        import * as gg from "gg";
        gg.files.writeFile("kept.txt", "landed");
        const out = gg.shell.shell("exit 7");
        gg.views.openText("code", String(out.exitCode));
        gg.files.readFile("absent.txt");
        gg.files.writeFile("never.txt", "x");
    """)
    root = ctx[0].workspace.root
    assert result.outcome.views[0].body == "7"
    assert (root / "kept.txt").read_text() == "landed" and not (root / "never.txt").exists()
    assert result.outcome.error.endswith("    at line 6, column 10")


def test_endings_set_a_flag_the_last_stands_and_a_throw_revokes_it(tmp_path):
    result = run(ts(tmp_path), """
        import * as gg from "gg";
        gg.session.finish("first");
        gg.session.finish("second");
        gg.views.openText("ran on", "after declaring");
        gg.session.finish("third");
    """)
    assert result.outcome.ending == ("session.finish", {"summary": "third"}) and result.outcome.views
    assert any("2 more time(s)" in line for line in result.logs("warn"))
    revoked = run(ts(tmp_path), 'import * as gg from "gg";\ngg.session.finish("done");\nthrow new Error("late");')
    assert revoked.outcome.ending is None and revoked.outcome.error_type == "program_throw"
    assert revoked.outcome.model_messages == [("Runtime error", "Error: late\n    at line 3, column 7")]
    assert any("and then failed, so the session was NOT ended: done" in line for line in revoked.logs("warn"))


def test_runtime_errors_are_located_in_the_programs_own_coordinates_with_sdk_frames_cut(tmp_path):
    result = run(ts(tmp_path, capabilities=["read-file"]), """
        import * as gg from "gg";

        interface Plan {
          path: string;
        }

        function helper(plan: Plan): gg.files.FileRead {
          return gg.files.readFile(plan.path);
        }

        helper({ path: "missing.txt" });
    """)
    heading, body = result.outcome.model_messages[-1]
    assert heading == "Runtime error" and result.outcome.error_type == "program_api_error"
    assert body == ("`read_file` failed (not-found): missing.txt does not exist\n"
                    "    at helper, line 9, column 19\n"
                    "    at line 12, column 7")  # SpiderMonkey places a plain call at its parenthesis
    thrown = run(ts(tmp_path), "type T = { a: number };\nconst t = null as unknown as T;\nconst n: number = t.a;")
    assert thrown.outcome.error == "TypeError: can't access property \"a\", t is null\n    at line 3, column 19"


def test_lib_modules_load_under_typescript_keys_deduplicated(tmp_path):
    ctx = ts(tmp_path, capabilities=["memories"])
    result = run(ctx, """
        import * as gg from "gg";
        gg.memories.writeMemory({ name: "csv-tools", description: "csv", body: "b",
          code: "export function cols(s: string): number { return s.split(',').length; }" });
        gg.memories.writeMemory({ name: "csv_tools", description: "csv", body: "b",
          code: "export const rows = (s: string): number => 2;" });
    """)
    assert result.outcome.ok, result.outcome.error
    assert list(ctx[0].lib.modules) == ["csvTools", "csvTools2"]
    used = run(ctx, """
        import * as csvTools from "lib:csvTools";
        import * as csvTools2 from "lib:csvTools2";
        import { views } from "gg";
        views.openText("n", `${csvTools.cols("a,b,c")}${csvTools2.rows("")}`);
    """)
    assert used.outcome.ok, used.outcome.error
    assert used.outcome.views[0].body == "32"
    missing = run(ctx, 'import * as other from "lib:other";\nother.x();')
    assert missing.outcome.error_type == "transpile_syntax" and "'lib:other'" in missing.outcome.error


def test_loaded_code_opens_a_documentation_view_per_exported_function(tmp_path):
    ctx = ts(tmp_path, capabilities=["memories"])
    result = run(ctx, """
        import * as gg from "gg";
        gg.memories.writeMemory({ name: "csv-tools", description: "csv", body: "b", code: [
          "/** Count the columns of one CSV line. */",
          "export function cols(line: string): number { return line.split(',').length; }",
          "const hidden = 1;",
          "export { hidden as shown };",
          "export type Row = string[];",
        ].join("\\n") });
    """)
    assert result.outcome.ok, result.outcome.error
    (view,) = result.outcome.views
    assert view.heading == "Documentation: lib.csvTools.cols"
    assert view.body.splitlines()[0] == "lib.csvTools.cols(line: string): number"
    assert 'import * as csvTools from "lib:csvTools";' in view.body and "Count the columns" in view.body
    assert "hidden" not in view.body  # the module's source is never shown


def test_documentation_views_speak_typescript(tmp_path):
    result = run(ts(tmp_path, capabilities=["read-file"], doc_view_types="return+errors"), """
        import * as gg from "gg";
        const page = gg.docs.search({ query: "file" });
        const keys = page.hits.map((hit) => hit.key);
        if (!keys.includes("gg.files.readFile") || keys.includes("gg.files.writeFile")) throw new Error(keys.join());
        gg.views.openDocsView("gg.files.readFile");
    """)
    assert result.outcome.ok, result.outcome.error
    assert [v.heading for v in result.outcome.views] == [
        "View: search results", "Documentation: gg.files.readFile", "Documentation: gg.files.FileRead",
        "Documentation: gg.core.ApiError"]
    function, file_read, api_error = (v.body for v in result.outcome.views[1:])
    assert function.startswith("gg.files.readFile(path: string, options?: { offset?: number; limit?: number }): FileRead")
    assert 'import * as gg from "gg";' in function
    assert file_read == 'type FileRead = ({ kind: "text" } & TextRead) | ({ kind: "image" } & ImageRead);'
    assert api_error.startswith("class ApiError extends Error {") and "toJSON()" in api_error


def test_a_module_that_fails_is_a_notice_naming_its_key_never_its_source(tmp_path):
    ctx = ts(tmp_path)
    ctx[0].lib.load("broken-helper", "const SECRET_SOURCE = 1;\nthrow new RangeError('boom');\nexport {};", "typescript")
    ctx[0].lib.load("mistyped", "export const n: number = 'SECRET_TEXT';", "typescript")
    result = run(ctx, """
        import * as broken from "lib:brokenHelper";
        import * as mistyped from "lib:mistyped";
        import { views } from "gg";
        views.openText("ok", `carried on ${Object.keys(broken).length} ${Object.keys(mistyped).length}`);
    """)
    assert result.outcome.ok, result.outcome.error
    assert result.outcome.views[0].body == "carried on 0 0"
    (h1, boom), (h2, typed) = result.outcome.model_messages
    assert h1 == h2 == "Notice"
    assert "`broken-helper`" in boom and "lib.brokenHelper" in boom and "RangeError: boom" in boom
    assert "`mistyped`" in typed and "error TS2322" in typed and "mistyped.ts(1,14)" in typed
    assert "SECRET" not in boom + typed
    unused = run(ctx, 'import { views } from "gg";\nviews.openText("a", "b");')
    assert unused.outcome.model_messages == []  # a module nothing imports is never evaluated


def test_the_declarations_cover_every_operation_in_the_arms_spelling():
    from surfaces.arms import arm
    from surfaces.catalogue import OPERATIONS

    text = declarations()
    for op in OPERATIONS:
        assert f"export function {arm('typescript').name(op)}(" in text, op.id
    assert "wait(): string;" in text and "export class IssueCreated" in text
    assert "readFile(path: string, options?: { offset?: number; limit?: number }): FileRead;" in text
    assert 'spawnSubagent(request: SpawnRequest)' in text
    assert 'type SpawnRequest = { agent: string } & ({ prompt: string } | { issueId: string });' in text
