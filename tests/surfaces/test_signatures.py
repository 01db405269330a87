"""Each operation's signature, read from the WIT and written in an arm's conventions, and the
identifier filter that lets long names wrap only between their parts."""

import pytest

from surfaces.arms import LANGUAGES, spell
from surfaces.catalogue import OPERATIONS
from surfaces.signatures import signature
from surfaces.templatetags.identifiers import ident
from surfaces.wit import function


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_operation_has_a_signature_in_every_arm(language):
    for op in OPERATIONS:
        sig = signature(language, op.id)
        assert sig is not None, op.id
        assert spell(language, op.id) + "(" in sig.text
        assert len(sig.params) == len(function(op.id).params)
        assert bool(sig.params) is op.takes_input, op.id


def test_signatures_read_the_way_each_arm_writes_them():
    assert signature("typescript", "files.read_file").text == \
        "gg.files.readFile(path: string, offset?: number, limit?: number): FileRead"
    assert signature("python", "files.read_file").text == \
        "gg.files.read_file(path: str, offset: int | None = None, limit: int | None = None) -> FileRead"
    assert signature("rust", "tasks.update_task").text == \
        "gg::tasks::update_task(id: String, patch: TaskPatch) -> Result<(), ApiError>"
    assert signature("java", "delegation.wait_for_subagents").text == \
        "List<SubagentResult> gg.delegation.Delegation.waitForSubagents(Optional<List<String>> ids)"
    assert signature("csharp", "files.edit_file").text == \
        "void Gg.Files.EditFile(string path, string oldString, string newString)"
    assert signature("typescript", "session.approve").text == "gg.session.approve(): void"


def test_error_cases_come_from_the_wit():
    sig = signature("typescript", "files.edit_file")
    assert sig.errors == (("not-found", "when old-string is absent"), ("conflict", "when it matches more than once"))
    assert sig.wit == "files/edit-file(path: string, old-string: string, new-string: string) -> result<_, api-error>"
    assert sig.doc == "a missing string is not-found, several matches a conflict."
    documented = [op.id for op in OPERATIONS if function(op.id).errors]
    assert len(documented) >= 45  # nearly every function names its own failure classes


def test_identifiers_wrap_between_parts_only():
    assert ident("gg.memories.write_memory") == "gg.<wbr>memories.<wbr>write_memory"
    assert ident("gg::files::read_file") == "gg::<wbr>files::<wbr>read_file"
    assert ident("return+parameters+errors") == "return+<wbr>parameters+<wbr>errors"
    assert ident("result<file-read, api-error>") == \
        '<span class="nobr">result&lt;file-read,</span> <span class="nobr">api-error&gt;</span>'
    assert ident("<b>") == "&lt;b&gt;"  # escaped like any text
