"""The catalogue against the spec's own tables (read from /work/shared/spec/operations.md)."""

import re

import pytest

from surfaces import catalogue, docviews
from surfaces.catalogue import BY_ID, CAPABILITIES, ENDINGS, MODULES, OPERATIONS, TOOLS
from surfaces.grants import Grants
from tests.paths import SHARED

SPEC = (SHARED / "spec" / "operations.md").read_text()


def _section(start, end):
    return SPEC[SPEC.index(start):SPEC.index(end)]


def _spec_rows():
    """The §1.2 table: (id, family, binding, takes_input, tool, retired)."""
    rows = []
    for line in _section("### 1.2 All 52", "Notes on the marks").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7 or not cells[0].isdigit():
            continue
        _, op_cell, family, _, binding, takes_input, tool = cells
        op_id = re.search(r"`([^`]+)`", op_cell).group(1)
        tool_name = re.search(r"`([^`]+)`", tool)
        rows.append((op_id, family, binding.replace("*", "").replace("§", "").replace("`", "").strip(),
                     takes_input.replace("*", "").startswith("yes"), tool_name and tool_name.group(1),
                     "†" in op_cell))
    return rows


SPEC_ROWS = _spec_rows()


def test_spec_table_has_52_rows():
    assert len(SPEC_ROWS) == 52


def test_52_operations_in_spec_order():
    assert len(OPERATIONS) == 52
    assert [op.id for op in OPERATIONS] == [row[0] for row in SPEC_ROWS]
    assert len(BY_ID) == 52


@pytest.mark.parametrize("row", SPEC_ROWS, ids=[r[0] for r in SPEC_ROWS])
def test_each_row_as_the_spec_states(row):
    op_id, family, binding, takes_input, tool, retired = row
    op = BY_ID[op_id]
    assert op.family == family
    assert str(op.binding).lower() == binding.lower()
    assert op.takes_input is takes_input
    assert op.tool == tool
    assert op.retired is retired
    assert op.module == op.wit_interface == op_id.split(".")[0]
    assert op.wit_function == op.key.replace("_", "-")


def test_binding_counts():
    kinds = [op.binding.kind for op in OPERATIONS]
    assert (kinds.count("capability"), kinds.count("machine"), kinds.count("always"), kinds.count("ending")) \
        == (45, 1, 3, 3)
    assert [op.id for op in OPERATIONS if op.retired] == ["files.read_text_file", "views.current"]


def test_thirteen_modules_in_presentation_order_with_briefs():
    assert [m.id for m in MODULES] == ["files", "shell", "board", "tasks", "memories", "docs", "views",
                                       "context", "delegation", "skills", "programs", "session", "core"]
    briefs = dict(re.findall(r"^\| (\w+) \| \"([^\"]+)\"", _section("## 3. Module", "## 4."), re.M))
    assert {m.id: m.brief for m in MODULES} == briefs
    assert MODULES[-1].operations == () and MODULES[-1].family is None
    assert sum(len(m.operations) for m in MODULES) == 52


def _spec_capability_table():
    table = {}
    for cap, ops in re.findall(r"^\| `([a-z-]+)` \| (.+) \|$", _section("### 1.3", "Operations no capability"), re.M):
        ids = set(re.findall(r"`(\w+\.\w+)`", ops))
        for count, ns in re.findall(r"the (\d+) `(\w+)\.\*` ops", ops):
            ids |= {op.id for op in OPERATIONS if op.module == ns}
            assert len([op for op in OPERATIONS if op.module == ns]) == int(count)
        table[cap] = ids
    return table


def test_what_each_capability_buys():
    spec = _spec_capability_table()
    assert len(spec) == 17
    bought = {cap.id: set(cap.operations) for cap in CAPABILITIES.values() if cap.operations}
    assert bought == spec
    assert not any(CAPABILITIES[c].operations for c in
                   ("context-window-override", "autoload-specs", "agent-persistence", "fsm", "responses-as-code"))


def test_capability_catalogue_order_and_params():
    assert list(CAPABILITIES) == [
        "shell", "read-file", "write-file", "edit-file", "list-dir", "search", "context-window-override",
        "autoload-specs", "agent-persistence", "skills", "memories", "tasks", "compaction",
        "agent-managed-context", "project-management", "subagents", "fsm", "exec", "fork",
        "responses-as-code", "program-library", "docview-close"]
    rac = CAPABILITIES["responses-as-code"].params
    assert (rac["timeoutSecs"], rac["maxMemoryBytes"]) == (30, 268435456)
    assert docviews.parse(rac["docViewTypes"]) == docviews.DEFAULT


def test_tools_and_their_capabilities():
    assert len(TOOLS) == 37 and len({t.name for t in TOOLS}) == 37
    for tool in TOOLS:
        assert tool.capability in CAPABILITIES
        assert tool.family in catalogue.FAMILY_LABELS
    # Every tool underneath a live capability-bound operation is contributed by that capability.
    for op in OPERATIONS:
        if op.tool and op.binding.kind == "capability":
            assert catalogue.TOOLS_BY_NAME[op.tool].capability == op.binding.capability
    assert catalogue.TOOLS_BY_NAME["transition_state"].capability == "fsm"
    assert CAPABILITIES["list-dir"].tools == ("list_dir", "tree")


def test_endings_per_role():
    assert ENDINGS["standard"].tools == ("finish",)
    assert ENDINGS["standard"].operations == ("session.finish",)
    assert ENDINGS["review"].tools == ("approve", "request_changes")
    assert ENDINGS["review"].operations == ("session.approve", "session.request_changes")
    ending_ops = {op.id: op.binding.role for op in OPERATIONS if op.binding.kind == "ending"}
    assert ending_ops == {o: role for role, e in ENDINGS.items() for o in e.operations}


# --- Grants ---------------------------------------------------------------------------------

def test_capability_rows_need_the_capability_and_the_allowlist():
    everything = Grants(capabilities=list(CAPABILITIES))
    assert all(everything.permits(op.id) for op in OPERATIONS
               if op.binding.kind in ("capability", "always"))
    narrowed = Grants(capabilities=["read-file", "shell"], operations=["files.read_file"])
    assert narrowed.permits("files.read_file")
    assert not narrowed.permits("views.open_file")  # same capability, not in the allowlist
    assert not narrowed.permits("shell.shell")
    assert not Grants(capabilities=["shell"], operations=[]).permits("shell.shell")  # empty grants nothing
    assert not Grants(operations=["shell.shell"]).permits("shell.shell")  # allowlisted, capability off


def test_always_ending_and_machine_rows():
    nothing = Grants(operations=[])
    assert nothing.granted() == ("docs.search", "views.open_text", "views.open_docs_view", "session.finish")
    reviewer = Grants(role="review")
    assert not reviewer.permits("session.finish")
    assert reviewer.permits("session.approve") and reviewer.permits("session.request_changes")
    assert not Grants(role="none").permits("session.finish")
    assert not Grants(capabilities=["fsm"]).permits("delegation.transition_state")
    assert Grants(machine=True, operations=[]).permits("delegation.transition_state")
    assert not Grants(capabilities=list(CAPABILITIES)).permits("no.such_operation")
    with pytest.raises(ValueError, match="unknown ending role 'boss'"):
        Grants(role="boss")


def test_modules_follow_the_grant():
    assert [m.id for m in Grants(operations=[]).modules()] == ["docs", "views", "session"]
    assert [m.id for m in Grants(capabilities=["shell"], role="none").modules()] == ["shell", "docs", "views"]


def test_refusal_names_the_call_never_what_unlocks_it():
    grants = Grants(capabilities=["shell"], role="review")
    assert grants.refusal("shell.shell", "typescript") is None
    message = grants.refusal("programs.history", "typescript")
    assert message == "`gg.programs.history` is not available."
    assert "program-library" not in message and "capabilit" not in message
    assert grants.refusal("session.finish", "typescript") == (
        "`gg.session.finish` is not available. "
        "Use `gg.session.approve` or `gg.session.requestChanges` instead.")
    assert grants.refusal("files.read_file", "rust") == "`gg::files::read_file` is not available."
    assert grants.refusal("files.read_file", None) == "`files.read_file` is not available."


def test_offered_tools_follow_capabilities_allowlist_and_role():
    grants = Grants(capabilities=["shell", "read-file", "list-dir", "tasks"], tools=["shell", "tree", "add_task"],
                    role="review")
    assert grants.offered_tools() == ["shell", "tree", "add_task", "approve", "request_changes"]
    assert Grants().offered_tools() == ["finish"]


def test_offered_tools_extra_gates():
    scratch = Grants(capabilities={"memories": {}})
    assert scratch.offered_tools()[:-1] == ["write_memory", "update_memory", "delete_memory"]
    keyword = Grants(capabilities={"memories": {"implementation": "keyword-search"}})
    assert "search_memories" in keyword.offered_tools() and "write_memory" not in keyword.offered_tools()
    read_only = Grants(capabilities={"memories": {"implementation": "markdown", "scope": "read-only"}})
    assert read_only.offered_tools() == ["read_memory", "finish"]
    assert "compact" not in Grants(capabilities={"compaction": {}}).offered_tools()
    assert "compact" in Grants(capabilities={"compaction": {"implementation": "self-compaction"}}).offered_tools()
    delegating = Grants(capabilities=["subagents", "exec", "fork"], roster=True)
    assert delegating.offered_tools() == ["spawn_subagent", "wait_for_subagents", "send_message", "exec", "fork",
                                          "finish"]
    in_machine = Grants(capabilities=["subagents", "exec"], roster=True, machine=True)
    assert "exec" not in in_machine.offered_tools() and "transition_state" in in_machine.offered_tools()
    assert Grants(capabilities=["fork"]).offered_tools() == ["finish"]  # fork also requires subagents


# --- docViewTypes ---------------------------------------------------------------------------

@pytest.mark.parametrize("flag_id, flags", [
    ("none", set()), ("return", {"return"}), ("errors", {"errors"}), ("return+errors", {"return", "errors"}),
    ("return+parameters+errors", {"return", "parameters", "errors"}), ("parameters+errors", {"parameters", "errors"}),
])
def test_docviews_round_trip(flag_id, flags):
    assert docviews.parse(flag_id) == frozenset(flags)
    assert docviews.format(frozenset(flags)) == flag_id


@pytest.mark.parametrize("bad, named", [
    ("off", "'off'"), ("return+types", "'types'"), ("", "''"), ("errors+return", "in the order"),
    ("return+return", "in the order"), ("return-and-parameters", "'return-and-parameters'"),
])
def test_docviews_refuses_anything_else(bad, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        docviews.parse(bad)


def test_docviews_resolve_profile_param():
    assert docviews.resolve(None) == docviews.resolve(True) == docviews.resolve({}) == {"return", "errors"}
    assert docviews.resolve(False) == frozenset()
    assert docviews.resolve({"parameters": True, "errors": False}) == {"return", "parameters"}
    with pytest.raises(ValueError, match="'types'"):
        docviews.resolve({"types": True})
    with pytest.raises(ValueError, match="docViewTypes.errors"):
        docviews.resolve({"errors": "yes"})
    with pytest.raises(ValueError, match="unknown docViewTypes flag 'bogus'"):
        docviews.format({"bogus"})
