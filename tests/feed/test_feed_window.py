"""The windowed feed's server side: pages of rows by seq (runs.feed.history) that walk a run in
either direction with nothing missed or doubled, filtered exactly as a full render filtered by hand,
jumps to a turn or a time, and a bounded number of queries per page whatever the run's size."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.feed import history
from runs.feed.filters import FeedFilter
from runs.feed.state import FeedState
from runs.feed.windows import FeedRenderer
from runs.ingest.rebuild import rebuild_projections
from runs.ingest.writer import append
from runs.models import Event, Run

pytestmark = pytest.mark.django_db

AGENTS = ("root", "helper-1", "helper-2")


def records(n):
    out = [{"type": "session_started", "timestamp": "2026-08-03T10:00:00Z"}]
    for i in range(1, n):
        agent = AGENTS[i % 3]
        ts = f"2026-08-03T10:{i // 60 % 60:02d}:{i % 60:02d}Z"
        kind = i % 6
        if kind == 0:
            rec = {"type": "turn_started"}
        elif kind == 1:
            rec = {"type": "api_call", "operation": "files.read_file"}
        elif kind == 2:
            rec = {"type": "api_result", "operation": "files.read_file", "ok": i % 4 != 0, "summary": f"read {i}",
                   **({"failure": "not-found"} if i % 24 == 8 else {})}  # the other failures name no class
        elif kind == 3:
            rec = {"type": "tool_call", "name": "shell", "args": {"cmd": f"echo {i}"}}
        elif kind == 4:
            rec = {"type": "usage", "inputTokens": i}  # drives panels: no row
        else:
            rec = {"type": "log", "level": "error" if i % 10 == 5 else "info", "message": f"line {i} " + ("kiwi" if i % 25 == 0 else "")}
        out.append({"agentId": agent, "timestamp": ts, **rec})
    return out


@pytest.fixture
def run():
    run = Run.objects.create(name="window")
    append(run, records(400))
    return run


def every_row(run):
    events = [e for e in Event.objects.filter(run=run).order_by("seq").values_list(*history.Ev._fields)]
    return FeedRenderer(run.pk, FeedState.at(run.pk, 0)).rows([history.Ev._make(e) for e in events])


def row_seqs(html):
    import re

    return [int(s) for s in re.findall(r'class="feed-row[^"]*" data-seq="(\d+)"', html)]


def walk_back(run, flt, rows):
    got, p = [], history.page(run.pk, flt, rows=rows)
    assert not p.more_after and p.hi == run.last_seq
    while True:
        got = row_seqs(p.html) + got
        if not p.more_before:
            return got
        p = history.page(run.pk, flt, before=p.lo, rows=rows)


def walk_forward(run, flt, rows):
    got, p = [], history.page(run.pk, flt, after=0, rows=rows)
    while True:
        got += row_seqs(p.html)
        if not p.more_after:
            assert p.hi == run.last_seq
            return got
        p = history.page(run.pk, flt, after=p.hi, rows=rows)


FILTERS = [
    FeedFilter(),
    FeedFilter(agent="helper-1"),
    FeedFilter(kind="call"),
    FeedFilter(kind="tool", agent="root"),
    FeedFilter(op="files.read_file"),
    FeedFilter(op="shell"),
    FeedFilter(failed=True),
    FeedFilter(failure="not-found"),
    FeedFilter(failure="unclassified", agent="helper-2"),
    FeedFilter(q="kiwi"),
    FeedFilter(q="kiwi", agent="helper-2"),
    FeedFilter(kind="other"),
]


@pytest.mark.parametrize("flt", FILTERS, ids=lambda f: f.query() or "all")
def test_pages_walk_the_run_both_ways_and_filter_like_a_full_render(run, flt, monkeypatch):
    monkeypatch.setattr(history, "CHUNK", 37)  # several chunks per page, pages cut inside chunks
    monkeypatch.setattr(history, "FILTERED_MIN", 4)  # filtered pages of 11 rows read in chunks too
    monkeypatch.setattr(history, "FILTERED_MAX", 23)
    full = every_row(run)
    wanted = [r.seq for r in full if flt.keeps(r)]
    if flt.op:
        ops = dict(Event.objects.filter(run=run).values_list("seq", "operation"))
        tools = dict(Event.objects.filter(run=run).values_list("seq", "tool_name"))
        wanted = [s for s in wanted if flt.op in (ops[s], tools[s])]
    if flt.q:
        wanted = [s for s in wanted if "kiwi" in Event.objects.get(run=run, seq=s).raw]
    assert walk_back(run, flt, rows=11) == wanted
    assert walk_forward(run, flt, rows=11) == wanted
    if flt.kind == "other":
        assert wanted == []
    if flt.failure:  # a class keeps its failed results only, as many as the fold counted
        failed = Event.objects.filter(run=run, seq__in=wanted, type="api_result", ok=False).count()
        assert failed == len(wanted) > 0
        assert len(wanted) == sum(a.api_failures.get(flt.failure, 0) for a in run.agents.all()
                                  if not flt.agent or a.agent_id == flt.agent)


def test_a_filtered_page_shows_rows_as_the_unfiltered_feed_does(run):
    full = {r.seq: r for r in every_row(run)}
    page = history.page(run.pk, FeedFilter(agent="helper-2"), rows=500)
    from runs.feed.html import row_html

    assert page.html == "".join(row_html(full[s]) for s in row_seqs(page.html))


def test_a_sparse_filter_stops_at_the_scan_limit_and_says_there_is_more(run, monkeypatch):
    flt = FeedFilter(failed=True)
    unlimited = walk_back(run, flt, rows=50)
    monkeypatch.setattr(history, "SCAN_LIMIT", 40)  # the page's first chunk stops there too
    p = history.page(run.pk, flt)
    assert p.more_before and p.rows < 50
    assert walk_back(run, flt, rows=50) == unlimited  # the rest is a scroll further away


def test_a_page_costs_the_same_queries_on_a_run_ten_times_larger():
    def cost(n):
        run = Run.objects.create(name=f"size-{n}")
        append(run, records(n))
        with CaptureQueriesContext(connection) as ctx:
            history.page(run.pk, FeedFilter(agent="root"), before=n // 2)
        return len(ctx.captured_queries)

    # Both pages start mid-run (a state from a checkpoint), as on a run of any size.
    assert cost(30000) == cost(3000)


def test_jumps_to_a_turn_and_to_a_time(run):
    turn_seq = Event.objects.filter(run=run, type="turn_started", agent_id="root").order_by("seq")[2]
    assert history.jump_seq(run.pk, turn=turn_seq.turn, agent="root") == turn_seq.seq
    assert history.jump_seq(run.pk, turn=999) is None
    assert history.jump_seq(run.pk, time="10:01:30") == 91  # record i is stamped 10:mm:ss = i seconds
    assert history.jump_seq(run.pk, time="2026-08-03T10:02:00Z") == 121
    assert history.jump_seq(run.pk, time="09:00") == 1
    assert history.jump_seq(run.pk, time="23:00") is None


def test_the_rows_endpoint_pages_jumps_and_refuses_nonsense(viewer_client, run):
    url = reverse("runs:feed_rows", args=[run.pk])
    end = viewer_client.get(url, {"agent": "root"}).json()
    assert end["last_seq"] == run.last_seq and not end["more_after"] and end["status"] == "running"
    seq = viewer_client.get(url, {"seq": 100}).json()
    assert row_seqs(seq["html"])[0] >= 100 and seq["more_before"] and seq["lo"] == 100
    turn = viewer_client.get(url, {"turn": 3, "agent": "root"}).json()
    assert 'data-kind="turn"' in turn["html"].split("</div>")[0]
    assert viewer_client.get(url, {"before": "x"}).status_code == 400
    assert viewer_client.get(url, {"turn": 999}).json()["error"] == "This run has no turn 999."
    assert viewer_client.get(url, {"time": "23:00"}).json()["error"] == "This run has no record at or after '23:00'."
    for garbage in ("garbage", "25:00", "12:60", "2026-13-01T00:00Z"):  # not "no record at or after 25:00"
        answer = viewer_client.get(url, {"time": garbage})
        assert answer.status_code == 400 and answer.json()["error"].startswith("A time is HH:MM[:SS]"), garbage
    assert viewer_client.get(reverse("runs:feed_rows", args=[999999])).status_code == 404


def test_the_rows_endpoint_needs_a_login(client, run):
    assert client.get(reverse("runs:feed_rows", args=[run.pk])).status_code == 302


def test_pages_of_huge_records_stay_bounded_in_bytes_and_miss_nothing(viewer_client):
    # Every field folds at FIELD_CHARS, and a page stops at WINDOW_CHARS of text: escaping (`"` is
    # `&quot;`, then JSON's \u escapes for what is not ASCII) keeps it within a few MiB whatever comes in.
    run = Run.objects.create(name="huge")
    nasty = '"<&' + "\U0001f600" * 3 + "é"
    big = [{"type": "session_started", "timestamp": "2026-08-03T10:00:00Z"}]
    for i in range(1, 60):
        ts = f"2026-08-03T10:00:{i:02d}Z"
        if i % 2:
            big.append({"type": "log", "timestamp": ts, "level": "info", "message": f"m{i} " + nasty * 200_000})
        else:
            big.append({"type": "tool_call", "timestamp": ts, "name": "shell", "args": {"cmd": nasty * 100_000}})
    append(run, big)
    url = reverse("runs:feed_rows", args=[run.pk])
    wanted = [r.seq for r in every_row(run) if r.kind != "raw"]
    limit = 2 * 2**20
    for params, step in (({"after": 0}, "after"), ({}, "before")):
        got, more = [], True
        while more:
            response = viewer_client.get(url, params)
            assert len(response.content) <= limit
            body = response.json()
            seqs = row_seqs(body["html"])
            assert seqs, "a page always moves on"
            got = got + seqs if step == "after" else seqs + got
            more = body["more_after"] if step == "after" else body["more_before"]
            params = {step: body["hi"] if step == "after" else body["lo"]}
        assert got == wanted


def test_a_jump_to_a_turn_seeks_the_turns_first_turn_started_off_its_index(run):
    """Not by walking the run's turn_started records in seq order (79 ms on a million-event run)."""
    first = Event.objects.filter(run=run, type="turn_started", turn=3).order_by("seq").first()
    with CaptureQueriesContext(connection) as ctx:
        assert history.jump_seq(run.pk, turn=3) == first.seq
    sql = ctx.captured_queries[-1]["sql"]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # A table this small is read whole by choice; with scans off, the plan shows whether
            # the query's shape lets PostgreSQL seek the index at all.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("EXPLAIN " + sql)
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
        plan = " ".join(str(row) for row in cursor.fetchall())
    assert "event_turn_started" in plan


def test_failed_only_reads_the_failing_records_and_finds_a_program_or_log_stored_before_its_ok_column():
    run = Run.objects.create(name="programs")
    append(run, [{"type": "session_started"},
                 *({"agentId": "root", "type": "code_execution", "ok": i != 7, "logs": [f"p{i}"],
                    **({} if i != 7 else {"error": "KeyError: 'b'"})} for i in range(10)),
                 {"agentId": "root", "type": "turn_outcome", "outcome": "error"},
                 {"agentId": "root", "type": "api_result", "operation": "files.read_file", "ok": False},
                 *({"agentId": "root", "type": "log", "level": level, "message": level} for level in ("info", "warn", "error"))])
    flt = FeedFilter(failed=True)
    # Only the failed program, the failed call and the error log: no program that ran, no turn
    # outcome, no other log (a run's many info logs are not read to be dropped).
    assert list(Event.objects.filter(flt.events(run.pk)).values_list("seq", flat=True)) == [9, 13, 16]
    assert row_seqs(history.page(run.pk, flt).html) == [9, 13, 16]

    # As stored before the column held a program's or a log's ok: still found, and a rebuild sets it.
    Event.objects.filter(run=run, type__in=("code_execution", "log")).update(ok=None)
    assert row_seqs(history.page(run.pk, flt).html) == [9, 13, 16]
    rebuild_projections(run)
    assert list(Event.objects.filter(flt.events(run.pk)).values_list("seq", flat=True)) == [9, 13, 16]


def test_a_filtered_page_whose_matches_are_rows_reads_as_many_as_it_shows():
    # Failed only: every match is a row, so the page reads its 100 and folds no span past them.
    run = Run.objects.create(name="failures")
    append(run, [{"type": "session_started"}, *(
        {"agentId": "root", "type": "api_result", "operation": "files.read_file", "ok": False, "failure": "not-found"}
        for _ in range(300))])
    with CaptureQueriesContext(connection) as ctx:
        page = history.page(run.pk, FeedFilter(failed=True))
    assert page.rows == history.PAGE_ROWS and page.more_before
    reads = [q["sql"] for q in ctx.captured_queries if "NOT \"runs_event\".\"ok\"" in q["sql"]]
    assert len(reads) == 1 and reads[0].endswith(f"LIMIT {history.PAGE_ROWS}")
