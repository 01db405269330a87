"""Properties that must hold for every input, checked on generated ones (hypothesis).

* Any byte string fed to the import path ends as stored + rejected == lines, with no exception;
  importing it again stores nothing twice.
* Hostile but well-formed records (real gg types, fields of any JSON type) never break the fold.
* Incremental projection equals a rebuild from the log, for generated multi-agent streams cut
  into arbitrary appends.
* Spelling never invents a name: a call is shown as its agent reported it, as the catalogue
  spells it for the agent's language when no surface was reported, or as the operation id.
"""

import io
import itertools
import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from runs.ingest import rebuild
from runs.ingest import writer as ingest
from runs.feed.html import render_rows
from runs.feed.rows import RENDERERS
from runs.feed.state import Ev, FeedState
from runs.feed.windows import FeedRenderer
from runs.models import Event, RejectedLine, Run
from runs.stream.vocabulary import GG_TYPES
from surfaces.arms import ARMS, member_separator, spell, spelling_for
from surfaces.catalogue import BY_ID
from tests.streams import projection_dump

DB_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
_names = itertools.count()


def new_run():
    return Run.objects.create(name=f"prop-{next(_names)}")


def line_count(data: bytes) -> int:
    """Lines as the import counts them: split on \\n; a final terminator ends the last line."""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


# ---------------------------------------------------------------------------------------------
# Any bytes

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
gg_fields = st.sampled_from(
    ["agentId", "parentAgentId", "modules", "apis", "tools", "operation", "ok", "failure", "name",
     "status", "toAgentId", "kind", "moduleId", "depth", "tokens", "cost", "profileId", "modelId",
     "outcome", "error", "consecutiveErrors", "summary", "capabilitySet", "event", "timestamp"]
)
# Records whose type the fold acts on but whose fields are anything at all.
hostile_records = st.builds(
    lambda t, fields: {**fields, "type": t},
    st.sampled_from(sorted(GG_TYPES | {"gg"})),
    st.dictionaries(gg_fields, json_values, max_size=6),
)
line_pieces = st.one_of(
    st.binary(max_size=40),
    hostile_records.map(lambda r: json.dumps(r).encode()),
    json_values.map(lambda v: json.dumps(v).encode()),  # JSON that is not an object
    st.text(max_size=30).map(lambda s: s.encode("utf-8")),
    st.sampled_from([b"", b" ", b"\r", b"\xef\xbb\xbf{}", b'{"type":"log"}\r', b"\xff\xfe", b"NaN",
                     b'{"a":NaN}', b"[" * 3000 + b"]" * 3000, b'{"type":"gg","event":{"type":"log"}}']),
)
byte_streams = st.one_of(
    st.binary(max_size=300),
    st.lists(line_pieces, max_size=25).map(b"\n".join),
    st.tuples(st.lists(line_pieces, max_size=25), st.booleans()).map(
        lambda t: b"\n".join(t[0]) + (b"\n" if t[1] else b"")),
)


@pytest.mark.django_db
@DB_SETTINGS
@given(data=byte_streams)
@example(data=b"")
@example(data=b"\n\n")
@example(data=b'{"type":"log"}\n{"type":"log"}\n')  # a repeated identical line is kept twice
@example(data=b"x" * (1024 * 1024 + 1) + b"\n{}")  # one byte over the line bound
def test_any_bytes_end_as_stored_plus_rejected(data):
    run = new_run()
    result = ingest.append_stream(run, io.BytesIO(data))
    lines = line_count(data)
    assert result.stored + result.rejected == lines
    assert result.duplicates == 0
    assert list(Event.objects.filter(run=run).order_by("seq").values_list("seq", flat=True)) == list(
        range(1, result.stored + 1))
    assert RejectedLine.objects.filter(run=run).count() == result.rejected
    assert len(result.rejections) == result.rejected

    again = ingest.append_stream(run, io.BytesIO(data))
    assert (again.stored, again.duplicates, again.rejected) == (0, result.stored, result.rejected)
    assert Event.objects.filter(run=run).count() == result.stored
    assert RejectedLine.objects.filter(run=run).count() == result.rejected


# ---------------------------------------------------------------------------------------------
# Generated gg streams: incremental == rebuild

AGENTS = ["root", "agent-1", "agent-2", "agent-3", "AUTH-1.0i"]
KINDS = ["history", "memories", "tasks", "board", "skills", "archive"]
OPS = ["files.read_file", "files.write_file", "session.finish", "board.create_issue", "docs.search"]
TOOLS = ["read_file", "write_file", "shell", "finish", "approve", "request_changes", "select_winner"]
module_ids = st.sampled_from(["", "memories-0", "memories-1", "tasks-0", "board-0", "history-1"])
small = st.integers(0, 5)

module_rows = st.lists(st.fixed_dictionaries(
    {"kind": st.sampled_from(KINDS), "moduleId": module_ids, "enabled": st.booleans(),
     "origin": st.sampled_from(["created", "inherited", "profile", "run", "transferred", "forked"]),
     "writable": st.booleans()},
    optional={"scope": st.sampled_from(["isolated", "shared", "inherited", "read-only", None]),
              "ownership": st.sampled_from(["owned", "unowned"])},
), max_size=6)
apis = st.lists(st.fixed_dictionaries({
    "module": st.sampled_from(["files", "session", "board"]),
    "path": st.sampled_from(["gg.files", "gg::files", "Gg.Session"]),
    "functions": st.lists(st.fixed_dictionaries(
        {"name": st.sampled_from(["readFile", "read_file", "finish"]), "operation": st.sampled_from(OPS)}),
        max_size=3),
}), max_size=3)
failures = st.sampled_from(["invalid-argument", "not-found", "unavailable", "limit-exceeded", "other"])
usage_tokens = st.fixed_dictionaries({c: st.none() | st.integers(0, 5000)
                                      for c in ("uncachedInput", "cachedInput", "output", "reasoning")})
payloads = st.one_of(
    st.fixed_dictionaries({"type": st.just("agent_spawned"), "profileId": st.sampled_from(["root", "worker"]),
                           "modelId": st.just("vendor/m"), "depth": small, "cwd": st.just("/w")},
                          optional={"brief": st.text(max_size=20), "worktree": st.just("gg/issue-1"),
                                    "slot": st.just("primary")}),
    st.fixed_dictionaries({"type": st.just("agent_modules"), "modules": module_rows}),
    st.fixed_dictionaries({"type": st.just("agent_surface"),
                           "executionMode": st.sampled_from(["tool_calling", "responses_as_code", "new_mode"]),
                           "tools": st.lists(st.sampled_from(TOOLS), max_size=4)},
                          optional={"apis": apis, "programLanguage": st.sampled_from(sorted(ARMS) + ["cobol"]),
                                    "docViewTypes": st.just("return"), "withheld": st.lists(st.just("shell"))}),
    st.fixed_dictionaries({"type": st.just("agent_transition"), "kind": st.sampled_from(["exec", "fork", "fsm"]),
                           "toAgentId": st.sampled_from(AGENTS), "profileId": st.just("worker"),
                           "modules": st.lists(st.fixed_dictionaries({
                               "kind": st.sampled_from(KINDS),
                               "disposition": st.sampled_from(["carried", "copied", "linked", "dropped",
                                                               "initialized", "absent"]),
                               "fromModuleId": module_ids, "toModuleId": module_ids}), max_size=3)},
                          optional={"state": st.just("review")}),
    st.fixed_dictionaries({"type": st.just("fsm_state"), "fsmId": st.just("tdd"), "state": st.just("red"),
                           "profileId": st.just("worker")}, optional={"from": st.just("green")}),
    st.fixed_dictionaries({"type": st.just("agent_status"),
                           "status": st.sampled_from(["running", "blocked", "done", "failed"])},
                          optional={"waitingOn": st.just("issue AUTH-1.0")}),
    st.fixed_dictionaries({"type": st.just("agent_returned"), "summary": st.text(max_size=20)}),
    st.just({"type": "turn_started"}),
    st.fixed_dictionaries({"type": st.just("turn_outcome"),
                           "outcome": st.sampled_from(["progressed", "finished", "error", "fatal"]),
                           "consecutiveErrors": small, "turns": small},
                          optional={"error": st.sampled_from(["model_api", "sandbox_limit"]),
                                    "errorType": st.sampled_from(["sandbox_timeout", "model_timeout"])}),
    st.fixed_dictionaries({"type": st.just("context_breakdown"),
                           "bySource": st.lists(st.fixed_dictionaries({
                               "source": st.sampled_from(["system", "docs_view", "memory", "task_list", "board"]),
                               "tokens": st.integers(0, 5000) | st.floats(0, 100)}), max_size=4)},
                          optional={"totalTokens": st.integers(0, 10_000), "windowLimit": st.integers(1, 200_000),
                                    "fullness": st.floats(0, 2)}),
    st.fixed_dictionaries({"type": st.just("api_call"), "operation": st.sampled_from(OPS)}),
    st.fixed_dictionaries({"type": st.just("api_result"), "operation": st.sampled_from(OPS), "ok": st.booleans()},
                          optional={"failure": failures}),
    st.fixed_dictionaries({"type": st.just("tool_call"), "name": st.sampled_from(TOOLS),
                           "args": st.dictionaries(st.just("path"), st.text(max_size=10))}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "name": st.sampled_from(TOOLS), "ok": st.booleans()},
                          optional={"failure": failures, "summary": st.text(max_size=10)}),
    st.fixed_dictionaries({"type": st.just("usage"), "profileId": st.sampled_from(["root", "worker"]),
                           "modelId": st.just("vendor/m"), "tokens": usage_tokens},
                          optional={"cost": st.fixed_dictionaries({"comparable": st.floats(0, 1),
                                                                   "actual": st.none() | st.floats(0, 1)})}),
    st.fixed_dictionaries({"type": st.just("slot_usage"), "profileId": st.just("root"),
                           "modelId": st.just("vendor/m"), "tokens": usage_tokens}),
    st.fixed_dictionaries({"type": st.sampled_from(["memory_state", "tasks_state", "board_state",
                                                    "skills_state", "archive_state"]),
                           "moduleId": module_ids, "count": small}),
    st.fixed_dictionaries({"type": st.just("log"), "level": st.sampled_from(["info", "warn", "debug"]),
                           "message": st.sampled_from([
                               "the program's `gg.board.createIssue` call was refused before it ran: not offered",
                               "3 further refused call(s) were not recorded", "plain words"])}),
    st.fixed_dictionaries({"type": st.just("session_started")},
                          optional={"capabilitySet": st.just({"agents": [{"name": "Root", "slug": "root"}]})}),
    st.fixed_dictionaries({"type": st.just("session_ended"),
                           "status": st.sampled_from(["completed", "model_error", "canceled", "new_word"])}),
    st.fixed_dictionaries({"type": st.sampled_from(["brand_new_kind", "compaction", "shell"])}),
)


@st.composite
def gg_records(draw):
    record = dict(draw(payloads))
    agent = draw(st.sampled_from(AGENTS + [None]))
    if agent is not None:
        record["agentId"] = agent
    if draw(st.booleans()):
        record["parentAgentId"] = draw(st.sampled_from(AGENTS))
    record["timestamp"] = f"2026-08-03T00:00:{draw(st.integers(0, 59)):02d}Z"
    if draw(st.integers(0, 9)) == 0:
        return {"type": "gg", "timestamp": record["timestamp"], "event": record}  # host-wrapped
    if draw(st.integers(0, 19)) == 0:
        return {"type": "warning", "message": "host row"}  # the host's own kind: stored, not folded
    return record


@pytest.mark.django_db
@DB_SETTINGS
@given(records=st.lists(gg_records(), min_size=1, max_size=60),
       cuts=st.lists(st.integers(1, 20), min_size=1, max_size=8),
       chunk_lines=st.integers(1, 9))
def test_incremental_projection_equals_rebuild(records, cuts, chunk_lines):
    run = new_run()
    # The records arrive in several appends of arbitrary sizes, each cut into small chunks.
    i = 0
    for n in itertools.cycle(cuts):
        if i >= len(records):
            break
        ingest.append(run, records[i:i + n], chunk_lines=chunk_lines)
        i += n
    incremental = projection_dump(run)
    assert incremental["run"]["last_seq"] == len(records)
    stats = rebuild.rebuild_projections(run)
    assert stats == {"events": len(records), "columns_fixed": 0}
    assert projection_dump(run) == incremental


# ---------------------------------------------------------------------------------------------
# Spelling

catalogue_ops = sorted(BY_ID)
operations = st.one_of(st.sampled_from(catalogue_ops), st.text(min_size=1, max_size=15))
languages = st.one_of(st.sampled_from(sorted(ARMS)), st.text(max_size=8))
reported_apis = st.lists(st.fixed_dictionaries({
    "path": st.text(max_size=10),
    "functions": st.lists(st.fixed_dictionaries({"name": st.text(max_size=10), "operation": operations}),
                          max_size=4),
}), max_size=4)


@settings(max_examples=400, deadline=None)
@given(apis=reported_apis, language=languages, operation=operations)
def test_spelling_never_invents_a_name(apis, language, operation):
    shown = spelling_for(apis, language, operation)
    sep = member_separator(language)
    reported = [f"{api['path']}{sep}{fn['name']}" for api in apis for fn in api["functions"]
                if fn["operation"] == operation]
    if apis:
        # A reported surface is the only source: its first function over the operation, or the id.
        assert shown == (reported[0] if reported else operation)
    elif language in ARMS and operation in BY_ID:
        assert shown == spell(language, operation)
    else:
        assert shown == operation  # nobody reported it and no catalogue knows it: never a guess


# ---------------------------------------------------------------------------------------------
# Feed rows

feed_fields = st.sampled_from(
    ["text", "name", "args", "summary", "ok", "operation", "object", "function", "level", "message",
     "beforeTokens", "afterTokens", "retained", "action", "reclaimedTokens", "items", "detail", "kind",
     "toAgentId", "profileId", "agent", "state", "modules", "from", "fsmId", "fsm", "machine", "logs",
     "logsSuppressed", "stage", "status", "capabilitySet", "apis", "programLanguage", "event"]
)
feed_records = st.builds(
    lambda t, fields: {**fields, "type": t},
    st.sampled_from(sorted(set(RENDERERS) | {"agent_surface", "gg", "new_kind"})),
    st.dictionaries(feed_fields, json_values, max_size=8),
)


# The database: a bracket left open at the end of a window is read on in the log (feed.state.bridged_args).
@pytest.mark.django_db
@settings(max_examples=400, deadline=None)
@given(records=st.lists(st.tuples(st.sampled_from(["root", "agent-1", "a\nb", '"<x>']), feed_records),
                        min_size=1, max_size=8))
@example(records=[("root", {"type": "code_execution", "logs": 5}),
                  ("root", {"type": "agent_transition", "profileId": {"a": 1}, "modules": 3}),
                  ("agent-1", {"type": "fsm_state", "profileId": [1], "state": "s"})])
@example(records=[("root", {"type": "session_started", "capabilitySet": {"agents": [{"slug": {"x": 1}}, 3]}}),
                  ("root", {"type": "agent_surface", "apis": [1, {"path": 2, "functions": 5}, {"functions": [7]}],
                            "programLanguage": ["rust"]}),
                  ("root", {"type": "api_call", "operation": "files.read_file"}),
                  ("root", {"type": "api_result", "object": {"name": 1}, "function": [2], "ok": False})])
def test_any_record_of_any_type_renders_a_row_and_never_stalls_the_feed(records):
    # A row that raised would stop the feed at that seq for good (every reconnect reads it again).
    events = [Ev(seq, rec["type"], agent, "2026-08-03T00:00:00Z", json.dumps(rec), None, None, "", seq)
              for seq, (agent, rec) in enumerate(records, 1)]
    rows = FeedRenderer(1, FeedState(1)).rows(events)
    html = render_rows(rows, len(events))
    assert "<x>" not in html  # the hostile agent id, escaped wherever it is shown
    assert [r.seq for r in rows] == sorted({r.seq for r in rows})
