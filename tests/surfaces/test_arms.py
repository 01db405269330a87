"""The eleven arms: every arm spells every operation, and spell() matches the spec's examples."""

import re

import pytest

from surfaces.arms import ARMS, LANGUAGES, spell, spelling_for, surface_apis
from surfaces.catalogue import BY_ID, MODULES, OPERATIONS
from surfaces.grants import Grants
from tests.paths import SHARED

SPEC = (SHARED / "spec" / "operations.md").read_text()

# §4.2's columns; TypeScript and JavaScript share one.
COLUMNS = ("typescript", "python", "ruby", "purescript", "java", "kotlin", "rust", "swift", "cpp", "csharp")


def _examples():
    section = SPEC[SPEC.index("### 4.2 Example spellings"):SPEC.index("More of the TS names")]
    examples = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 11 or not cells[0].startswith("`") or "." not in cells[0]:
            continue
        op_id = cells[0].strip("`")
        for language, cell in zip(COLUMNS, cells[1:]):
            spelled = re.match(r"`([^`]+)`", cell).group(1)
            examples.append((language, op_id, spelled))
            if language == "typescript":
                examples.append(("javascript", op_id, spelled))
    return examples


EXAMPLES = _examples()


def test_examples_cover_all_eleven_arms():
    assert len(EXAMPLES) == 7 * 11
    assert {language for language, _, _ in EXAMPLES} == set(LANGUAGES) == set(ARMS)


@pytest.mark.parametrize("language, op_id, expected", EXAMPLES)
def test_spell_matches_the_spec(language, op_id, expected):
    assert spell(language, op_id) == expected


def test_spell_matches_the_sdk_tests_and_design_examples():
    assert spell("csharp", "views.open_text") == "Gg.Views.OpenText"
    assert spell("cpp", "session.request_changes") == "gg::session::request_changes"
    assert spell("java", "session.request_changes") == "gg.session.Session.requestChanges"
    assert spell("ruby", "files.read_file") == "GG::Files.read_file"


def test_typescript_names_match_the_sdk():
    listed = SPEC[SPEC.index("More of the TS names"):SPEC.index("Failure type per arm")]
    verified = {(module, name) for module, names in re.findall(r"^- (\w+): (.+)$", listed, re.M)
                for name in re.findall(r"`(\w+)`", names)}
    live = {(op.module, ARMS["typescript"].name(op)) for op in OPERATIONS if not op.retired}
    assert len(verified) == 48
    assert verified <= live  # the list omits only files.readFile (§4.2) and skills.readSkill


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_arm_spells_every_operation_distinctly(language):
    spellings = [spell(language, op.id) for op in OPERATIONS]
    assert len(spellings) == len(set(spellings)) == 52
    arm = ARMS[language]
    for op in OPERATIONS:
        assert spell(language, op.id).startswith(arm.module_path(op.module) + arm.sep)
    for module in MODULES:
        names = [name for name, _ in arm.functions(module.id)]
        assert len(names) == len(set(names))  # two rows in one module never share a name
    assert arm.sep == ("::" if language in ("rust", "cpp") else ".")


RECEIVER_SPELLINGS = {
    "typescript": "gg.board.IssueCreated.wait",
    "javascript": "gg.board.IssueCreated.wait",
    "python": "gg.board.IssueCreated.wait",
    "java": "gg.board.Board.IssueCreated#await",
    "kotlin": "gg.board.IssueCreated.wait",
    "rust": "gg::board::IssueCreated::wait",
    "swift": "gg.board.IssueCreated.wait",
    "cpp": "gg::board::issue_created::wait",
    "csharp": "Gg.Board.IssueCreated.Wait",
}


@pytest.mark.parametrize("language", LANGUAGES)
def test_receiver_aliases_follow_the_canonical_function(language):
    arm = ARMS[language]
    board = arm.functions("board")
    assert board[0] == (arm.name("board.create_epic"), "board.create_epic")
    aliases = [(name, op) for module in ("board", "memories", "delegation", "programs")
               for name, op in arm.functions(module) if name != arm.name(op)]
    if language == "purescript":
        assert aliases == []  # no receivers in PureScript
        return
    assert [op for _, op in aliases] == ["board.wait_for_issue", "memories.read_memory",
                                         "delegation.send_message", "programs.get"]
    if language in RECEIVER_SPELLINGS:
        wait = next(name for name, op in aliases if op == "board.wait_for_issue")
        assert arm.module_path("board") + arm.sep + wait == RECEIVER_SPELLINGS[language]
    # The canonical binding precedes the alias, so the first-match rule yields the free function.
    apis = surface_apis(language, Grants(capabilities=["project-management"]))
    assert spelling_for(apis, language, "board.wait_for_issue") == spell(language, "board.wait_for_issue")


def test_import_lines_and_failure_types():
    assert ARMS["typescript"].import_line() == 'import * as gg from "gg";'
    assert ARMS["python"].import_line("files") == "import gg"
    assert ARMS["java"].import_line("files") == "import gg.files.Files;"
    assert ARMS["rust"].import_line("board") == "use gg::board;"
    assert ARMS["cpp"].import_line("files") == "#include <gg/files.hpp>"
    assert ARMS["purescript"].import_line("files") == "import Gg.Files as Gg.Files"
    assert ARMS["kotlin"].import_line("files") == "import gg.files.*"
    assert ARMS["csharp"].failure_type == "ApiException"
    assert ARMS["ruby"].failure_type == "GG::Core::ApiError"


def test_spell_refuses_unknowns_by_name():
    with pytest.raises(ValueError, match="'go'"):
        spell("go", "files.read_file")
    with pytest.raises(ValueError, match="'files.readFile'"):
        spell("typescript", "files.readFile")


def test_spelling_for_surface_then_catalogue_then_id():
    apis = [{"module": "files", "path": "gg.files", "description": "x",
             "functions": [{"name": "readFile", "operation": "files.read_file"},
                           {"name": "readAgain", "operation": "files.read_file"}]},
            {"module": "board", "path": "gg::board", "functions": [{"name": "IssueCreated::wait",
                                                                     "operation": "board.wait_for_issue"}]}]
    assert spelling_for(apis, "typescript", "files.read_file") == "gg.files.readFile"  # first wins
    assert spelling_for(apis, "rust", "board.wait_for_issue") == "gg::board::IssueCreated::wait"
    assert spelling_for(apis, "typescript", "shell.shell") == "shell.shell"  # a surface that lacks it: no guess
    assert spelling_for(None, "rust", "files.read_file") == "gg::files::read_file"
    assert spelling_for([], "csharp", "docs.close_all") == "Gg.Docs.CloseAll"
    assert spelling_for(None, None, "files.read_file") == "files.read_file"
    assert spelling_for(None, "cobol", "files.read_file") == "files.read_file"
    assert spelling_for(None, "python", "files.unknown_op") == "files.unknown_op"


def test_surface_apis_is_the_granted_projection():
    grants = Grants(capabilities=["memories"], operations=["memories.read_memory"], role="review")
    apis = surface_apis("python", grants)
    assert [a["module"] for a in apis] == ["memories", "docs", "views", "session"]
    memories = apis[0]
    assert memories["path"] == "gg.memories"
    assert memories["description"] == "Durable notes that survive a compaction of the context window."
    assert memories["functions"] == [{"name": "read_memory", "operation": "memories.read_memory"},
                                     {"name": "MemoryHit.read", "operation": "memories.read_memory"}]
    everything = Grants(capabilities=[op.binding.capability for op in OPERATIONS if op.binding.capability],
                        machine=True)
    every = {f["operation"] for a in surface_apis("rust", everything) for f in a["functions"]}
    assert every == set(BY_ID) - {"session.approve", "session.request_changes"} - {
        op.id for op in OPERATIONS if op.retired}
    read_file = Grants(capabilities=["read-file"], operations=["files.read_file", "files.read_text_file", "views.open_file"])
    assert read_file.permits("files.read_text_file")  # still serviced: recorded streams carry it
    assert {f["operation"] for a in surface_apis("python", read_file) for f in a["functions"]} \
        == {"files.read_file", "views.open_file", "docs.search", "views.open_text", "views.open_docs_view",
            "session.finish"}
