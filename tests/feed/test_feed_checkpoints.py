"""Opening the feed anywhere costs the same on a run of any size: the row state at a seq comes from
the last `FeedCheckpoint` at or before it (kept by the write path) and at most `EVERY` events since,
and equals a fold of the whole log up to that seq."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.feed import checkpoints, history
from runs.feed.filters import FeedFilter
from runs.feed.rows import has_row
from runs.feed.state import Ev, FeedState
from runs.feed.windows import FeedRenderer
from runs.ingest.rebuild import rebuild_projections
from runs.ingest.writer import append
from runs.models import Event, FeedCheckpoint, Run

pytestmark = pytest.mark.django_db

EVERY = 50


@pytest.fixture(autouse=True)
def small_checkpoints(monkeypatch):
    monkeypatch.setattr(checkpoints, "EVERY", EVERY)


def records(n, agents=4):
    out = [{"type": "session_started", "timestamp": "2026-08-03T10:00:00Z"}]
    for i in range(1, n):
        agent = f"agent-{i % agents}"
        kind = i % 7
        if kind == 0:
            rec = {"type": "agent_surface", "programLanguage": "python", "executionMode": "responses_as_code", "tools": [],
                   "apis": [{"module": "files", "path": f"gg.files{i}", "description": "",
                             "functions": [{"name": "read_file", "operation": "files.read_file"}]}]}
        elif kind in (1, 4):
            rec = {"type": "api_call", "operation": "files.read_file"}
        elif kind == 2:
            rec = {"type": "api_result", "operation": "files.read_file", "ok": True}
        elif kind == 3:
            rec = {"type": "tool_call", "name": "shell", "args": {"cmd": f"echo {i}"}}
        elif kind == 5:
            rec = {"type": "turn_started"} if i % 3 else {"type": "tool_result", "name": "shell", "summary": f"ran {i}"}
        else:
            rec = {"type": "log", "level": "info", "message": f"line {i}"}
        out.append({"agentId": agent, "timestamp": f"2026-08-03T10:00:00.{i:06d}Z", **rec})
    return out


def stored(name, n, chunk_lines=333):
    run = Run.objects.create(name=name)
    append(run, records(n), chunk_lines=chunk_lines)
    return run


def folded_from_the_start(run, seq):
    """The state after `seq` as a fold of every event before it (no checkpoint)."""
    events = [Ev._make(e) for e in Event.objects.filter(run=run, seq__lte=seq).order_by("seq").values_list(*Ev._fields)]
    renderer = FeedRenderer(run.pk, FeedState(run.pk, 0))
    renderer.rows(events)
    return renderer.state


def test_the_state_at_any_seq_is_the_fold_of_the_log_before_it():
    run = stored("fold", 620)
    assert FeedCheckpoint.objects.filter(run=run).count() == 620 // EVERY
    assert any(folded_from_the_start(run, s).absorbed for s in range(1, 620, 7))
    for seq in (0, 1, 49, 50, 51, 99, 100, 333, 334, 499, 600, 619, 620, *range(101, 140)):
        want, got = folded_from_the_start(run, seq), FeedState.at(run.pk, seq)
        assert got.open_calls == want.open_calls, seq
        assert got.absorbed == want.absorbed, seq
        got.read_surfaces(list(got.surface_seqs))
        assert got.surfaces == want.surfaces, seq
        rows = sum(1 for e in Event.objects.filter(run=run, seq__lte=seq).values_list("type", flat=True) if has_row(e))
        assert checkpoints.row_count(run.pk, seq) == rows, seq


def test_opening_the_feed_reads_the_same_on_a_run_ten_times_larger(monkeypatch):
    folded = []
    real_fold = checkpoints.State.fold

    def counting(state, events):
        events = list(events)
        folded.append(len(events))
        return real_fold(state, events)

    small, large = stored("small", 400), stored("large", 4000)
    monkeypatch.setattr(checkpoints.State, "fold", counting)
    monkeypatch.setattr(history, "CHUNK", 120)  # a page reads a few chunks, none from the run's start

    def cost(run, **where):
        folded.clear()
        with CaptureQueriesContext(connection) as ctx:
            page = history.page(run.pk, FeedFilter(), **where)
        assert page.rows
        return len(ctx.captured_queries), sum(folded)

    for where in ({}, {"before": 377}, {"after": 123}):  # the tail, a scroll back, a jump
        (q_small, f_small), (q_large, f_large) = cost(small, **where), cost(large, **where)
        assert q_small == q_large
        assert f_small <= EVERY and f_large <= EVERY  # events folded to open a page: never the run's size
    (q_mid, f_mid) = cost(large, after=2987)
    assert q_mid == q_small and f_mid <= EVERY
    # The feed page itself (its footer's counts): the same queries, and never more than EVERY events read.
    from django.test import Client
    from django.contrib.auth.models import User
    from django.urls import reverse

    client = Client()
    client.force_login(User.objects.create_user("looker"))

    def page_cost(run):
        folded.clear()
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(reverse("runs:feed", args=[run.pk])).status_code == 200
        return len(ctx.captured_queries), sum(folded)

    (pq_small, pf_small), (pq_large, pf_large) = page_cost(small), page_cost(large)
    assert pq_small == pq_large and pf_small <= EVERY and pf_large <= EVERY


def test_rebuild_and_a_run_stored_before_checkpoints_get_the_same_checkpoints():
    run = stored("rebuilt", 333, chunk_lines=1)  # one event a transaction: checkpoints as the engine writes them
    want = list(FeedCheckpoint.objects.filter(run=run).order_by("seq").values_list("seq", "open_calls", "surfaces"))
    assert [s for s, _, _ in want] == [50, 100, 150, 200, 250, 300]
    rebuild_projections(run)
    assert list(FeedCheckpoint.objects.filter(run=run).order_by("seq").values_list("seq", "open_calls", "surfaces")) == want
    FeedCheckpoint.objects.filter(run=run).delete()  # as a run stored before they existed
    state = FeedState.at(run.pk, 320)
    assert state.open_calls == folded_from_the_start(run, 320).open_calls
    assert list(FeedCheckpoint.objects.filter(run=run).order_by("seq").values_list("seq", "open_calls", "surfaces")) == want
