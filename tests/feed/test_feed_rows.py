"""Feed rows as gg's console shows them (spec/stream.md §7.2, console.md §1.4), rendered from
events stored through the real write path."""

import itertools
import re

import pytest

from runs.feed.filters import FeedFilter
from runs.feed.history import page
from runs.feed.windows import FeedRenderer
from runs.ingest.writer import append, append_lines
from runs.models import Run
from tests.feed_helpers import seqs

pytestmark = pytest.mark.django_db


_names = itertools.count()


def rows_of(records, after=0, raw=False):
    """The rows of `records` — without those listed only under the raw kind, unless `raw`."""
    run = Run.objects.create(name=f"rows-{next(_names)}")
    append(run, records)
    rows, cursor = FeedRenderer(run.pk).next_batch(after)
    return [r for r in rows if raw or r.kind != "raw"], cursor


def one(record):
    rows, _ = rows_of([record])
    assert len(rows) == 1, rows
    return rows[0]


def test_panel_events_make_no_row_but_advance_the_cursor():
    rows, cursor = rows_of([
        {"type": "usage", "tokens": {"uncachedInput": 1, "cachedInput": None, "output": 2, "reasoning": None}},
        {"type": "turn_timing", "promptMs": 1, "requestMs": 2, "responseMs": 3},
        {"type": "agent_status", "status": "running"},
    ])
    assert rows == []
    assert cursor == 3
    raw, _ = rows_of([{"type": "usage", "tokens": {}}, {"type": "agent_status", "status": "running"}], raw=True)
    assert [(r.kind, r.label, r.tone) for r in raw] == [("raw", "usage", "raw"), ("raw", "agent_status", "raw")]


def test_session_turn_and_message_rows():
    rows, _ = rows_of([
        {"type": "session_started"},
        {"type": "turn_started"},
        {"type": "assistant_message", "text": "Creating index.html."},
        {"type": "session_ended", "status": "model_error"},
    ])
    assert [(r.label, r.detail, r.tone) for r in rows] == [
        ("session", "Session started.", "system"),
        ("turn 1", "Turn 1 started.", "system"),
        ("agent", "Creating index.html.", "agent"),
        ("session", "Session ended: model_error.", "fail"),
    ]


def test_tool_call_compact_args_cut_at_160_and_failed_result():
    call = one({"type": "tool_call", "name": "write_file", "args": {"path": "index.html", "contents": "x" * 500}})
    assert call.label == "tool" and call.detail == "write_file"
    assert call.args.startswith('{"path":"index.html","contents":"xxx')
    assert len(call.args) == 160 and call.args.endswith("…")
    failed = one({"type": "tool_result", "name": "read_file", "ok": False, "summary": "no such file", "failure": "not-found"})
    assert (failed.label, failed.detail, failed.failure, failed.tone) == ("result ✗", "read_file: no such file", "not-found", "fail")


def test_log_rows_by_level():
    rows, _ = rows_of([
        {"type": "log", "level": "info", "message": "offering 5 tool(s)"},
        {"type": "log", "level": "warn", "message": "the program's `x` call was refused before it ran: no"},
        {"type": "log", "level": "error", "message": "the code sandbox could not be operated"},
        {"type": "log", "level": "debug", "message": "the program closed the view `a`"},
    ])
    assert [(r.label, r.tone, r.kind) for r in rows] == [
        ("info", "system", "log"), ("warn", "warn", "log"), ("error", "fail", "log"), ("debug", "system", "log"),
    ]


def test_compaction_and_context_managed():
    compacted = one({"type": "compaction", "strategy": "self-summarization", "beforeTokens": 12300,
                     "afterTokens": 4100, "summaryTokens": 900, "retained": {"skills": 1, "tasks": 3, "memories": 1}})
    assert compacted.detail == "Context compacted: 12.3k → 4.1k tokens."
    assert compacted.args == "retained 1 skill / 3 tasks / 1 memory"
    closed = one({"type": "context_managed", "action": "close_docs_views", "reclaimedTokens": 2400, "items": 2,
                  "detail": "closed 2 documentation view(s)"})
    assert (closed.label, closed.detail, closed.args) == (
        "close docs", "closed 2 documentation view(s)", "reclaimed 2.4k tokens · 2 items")


def test_transitions_and_fsm_entries_name_the_profile():
    capability_set = {"agents": [{"name": "Planner", "slug": "planner"}, {"name": "Coder", "slug": "coder"}]}
    rows, _ = rows_of([
        {"type": "session_started", "capabilitySet": capability_set},
        {"type": "agent_transition", "kind": "fsm", "toAgentId": "agent-1", "profileId": "coder", "state": "build",
         "modules": [{"kind": "history", "disposition": "carried", "fromModuleId": "history-0", "toModuleId": "history-0"},
                     {"kind": "tasks", "disposition": "carried"}, {"kind": "memories", "disposition": "copied"},
                     {"kind": "skills", "disposition": "initialized"}, {"kind": "board", "disposition": "absent"}]},
        {"type": "agent_transition", "kind": "fork", "toAgentId": "agent-2", "profileId": "planner", "modules": []},
        {"type": "agent_transition", "kind": "exec", "toAgentId": "agent-3", "profileId": "coder", "modules": []},
        {"agentId": "agent-1", "type": "fsm_state", "fsmId": "tdd", "state": "build", "from": "plan", "profileId": "coder"},
        {"agentId": "agent-4", "type": "fsm_state", "fsm": "tdd", "state": "plan", "agent": "planner"},
    ])
    assert [(r.label, r.detail) for r in rows[1:]] == [
        ("handoff", "Transitioned to `build` (Coder) as agent-1."),
        ("fork", "Forked a copy of this agent as agent-2."),
        ("handoff", "Continued as `Coder` (agent-3)."),
        ("state", "Entered `build` from `plan`, running Coder."),
        ("state", "Entered `plan`, running Planner."),
    ]
    assert rows[1].args == "carried history, tasks · copied memories · fresh skills"


def test_a_transition_to_an_id_of_another_shape_reads_as_json_not_python():
    """An object as the successor's id read "Continued as {'t': 'per%cent'}." (a Python repr)."""
    rows, _ = rows_of([{"type": "agent_transition", "kind": "exec", "toAgentId": {"t": "per%cent"},
                        "state": ["a"], "modules": []}])
    assert rows[0].detail == 'Continued in `["a"]` as {"t":"per%cent"}.'
    rows, _ = rows_of([{"type": "fsm_state", "state": {"t": "x"}, "from": [1], "fsmId": {"m": 1}}])
    assert (rows[0].detail, rows[0].args) == ('Entered `{"t":"x"}` from `[1]`.', 'machine {"m":1}')


def test_program_output_is_collapsible_with_the_capped_lines_note():
    rows, _ = rows_of([
        {"type": "code_execution", "ok": True, "toolCalls": 0, "logs": []},
        {"type": "code_execution", "ok": True, "toolCalls": 1, "logs": ["a", "b", "c"], "logsSuppressed": 40},
    ])
    assert len(rows) == 1  # nothing printed, no row
    assert rows[0].output == "a\nb\nc"
    assert rows[0].args == "3 lines · 40 earlier lines dropped by the capture cap"


def test_unknown_type_is_shown_raw_and_host_twins_are_not_rendered():
    rows, _ = rows_of([
        {"type": "brand_new_kind", "weird": 1},
        {"type": "agent", "message": "the host's twin of an assistant_message"},
        {"type": "system", "stage": "pull_image", "status": "failed", "message": "no such image"},
        {"type": "gg", "event": {"type": "turn_started"}},
    ])
    assert [(r.label, r.kind) for r in rows] == [("brand_new_kind", "other"), ("system", "system"), ("turn 1", "turn")]
    assert '"weird":1' in rows[0].args
    assert rows[1].detail == "pull_image failed: no such image" and rows[1].tone == "fail"


def test_real_mock_session_renders_its_rows(settings):
    from tests.paths import GG_FIXTURES

    run = Run.objects.create(name="mock")
    append_lines(run, (GG_FIXTURES / "real-mock-session.ndjson").read_bytes().splitlines())
    renderer = FeedRenderer(run.pk)
    rows, _ = renderer.next_batch(0)
    labels = [r.label for r in rows]
    assert labels[0] == "session" and labels[-1] == "session"
    assert "tool" in labels and "result" in labels
    html = renderer.render(rows, 14)
    # The fixture's write_file body holds markup: shown as text, never live.
    assert "&lt;!doctype html&gt;" in html
    assert not re.search(r"<(!doctype|html|canvas|body)\b", html, re.I)


def test_queries_per_batch_do_not_grow_with_events(django_assert_num_queries):
    surfaces = [{"agentId": a, "type": "agent_surface", "executionMode": "responses_as_code", "tools": [],
                 "programLanguage": "python", "apis": [{"module": "files", "path": "gg.files", "description": "d",
                                                        "functions": [{"name": "read_file", "operation": "files.read_file"}]}]}
                for a in ("root", "agent-1")]

    def calls(n):
        return [{"agentId": ("root", "agent-1")[i % 2], "type": "api_call", "operation": "files.read_file",
                 "timestamp": f"2026-08-03T00:00:00.{i:06d}Z"} for i in range(n)]

    small, large = Run.objects.create(name="q-small"), Run.objects.create(name="q-large")
    append(small, surfaces + calls(10) + [{"type": "system", "stage": "teardown", "status": "completed"}] * 3)
    append(large, surfaces + calls(190) + [{"type": "system", "stage": "teardown", "status": "completed"}] * 3)
    # events and the run's profiles: surfaces and agents come from the events themselves; the brackets
    # still open at the batch's end are read on for a bridged tool call (one query)
    with django_assert_num_queries(3):
        rows, _ = FeedRenderer(small.pk).next_batch(0)
    with django_assert_num_queries(3):
        rows, _ = FeedRenderer(large.pk).next_batch(0)
    assert [r.detail for r in rows if r.kind != "raw"][:2] == ["gg.files.read_file"] * 2
    # Resuming mid-run: the state at the cursor is read once — the run (profiles), its last checkpoint
    # and the events since (open brackets, which surface is whose), what the open brackets absorbed,
    # the agents, the batch's surfaces.
    with django_assert_num_queries(8):
        rows, _ = FeedRenderer(large.pk).next_batch(100)
    assert rows[0].seq == 101 and rows[0].detail == "gg.files.read_file"


def test_every_gg_type_is_either_a_row_or_a_panel_never_unknown():
    from runs.feed.rows import PANEL_KINDS, RENDERERS
    from runs.stream.vocabulary import GG_TYPES

    assert GG_TYPES - set(RENDERERS) - PANEL_KINDS == set()


def test_an_agent_filter_matches_the_id_exactly_spaces_and_all():
    """Trimmed, an id with spaces at its ends matched nothing, and an id of spaces alone was no filter."""
    run = Run.objects.create(name="spaced")
    append(run, [{"type": "log", "agentId": agent, "message": f"from {agent!r}"}
                 for agent in (" lead-and-trail ", "   ", "root")])
    for agent, seq in ((" lead-and-trail ", 1), ("   ", 2), ("root", 3)):
        assert seqs(page(run.pk, FeedFilter.parse({"agent": [agent]}), rows=10).html) == [seq], repr(agent)
