"""The timeline (runs/pages/timeline.py): a lane per agent, turns linking to their pages."""

import re

import pytest
from django.urls import reverse

from tests.pages_helpers import authored, rows

pytestmark = pytest.mark.django_db


def test_the_timeline_has_one_lane_per_agent_with_turn_links(viewer_client):
    run = authored()
    html = viewer_client.get(reverse("runs:timeline", args=(run.pk,))).content.decode()
    assert [a for a, _ in rows(html, "data-agent")] == ["root", "agent-0"]
    for agent, n in (("root", 4), ("agent-0", 2)):
        assert html.count(f'href="/runs/{run.pk}/agents/{agent}/turns/') >= 1
        assert f'href="/runs/{run.pk}/agents/{agent}/turns/{n}/"' in html
    assert 'class="turn error"' in html and 'class="wait"' in html and "tick failed" in html
    zoomed = viewer_client.get(reverse("runs:timeline", args=(run.pk,)) + "?start=0&end=50")
    assert zoomed.status_code == 200 and 'id="zoom-out"' in zoomed.content.decode()
    assert viewer_client.get(reverse("runs:timeline", args=(run.pk,)) + "?start=x&end=nan").status_code == 200


def stamped_run(name, n, records=None):
    """A run of the synthetic stream's n records (or of `records`), each stamped 1 ms after the one before."""
    from runs.ingest import writer as ingest
    from runs.models import Run
    from tests.pages_helpers import synthetic_stream

    records = records or synthetic_stream(n)
    for i, record in enumerate(records):
        s, ms = divmod(i, 1000)
        record["timestamp"] = f"2026-07-24T04:{s // 60:02d}:{s % 60:02d}.{ms:03d}Z"
    run = Run.objects.create(name=name)
    assert ingest.append(run, records).stored == n
    return run


def test_a_long_run_draws_a_bounded_picture_in_the_same_queries(viewer_client):
    """Thousands of turns draw as merged blocks (a few hundred a lane at most) and each lane's calls as
    two paths, in as many queries as a short run."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from runs.pages.timeline import WIDTH

    pages, zoomed = {}, {}
    for name, n in (("short", 200), ("long", 20_000)):
        run = stamped_run(name, n)
        with CaptureQueriesContext(connection) as queries:
            html = viewer_client.get(reverse("runs:timeline", args=(run.pk,))).content.decode()
        pages[name] = html, len(queries), run.agents.get(agent_id="root").turns
        with CaptureQueriesContext(connection) as queries:  # its middle fifth, or a fifth of a second
            viewer_client.get(reverse("runs:timeline", args=(run.pk,)) + f"?start={n // 10 * 4}&end={n // 10 * 6}")
        zoomed[name] = len(queries)
    (_, short_queries, _), (long, long_queries, turns) = pages["short"], pages["long"]
    # The long run's whole window is read by bucket, the short run's by turn: in the same queries.
    assert long_queries == short_queries and zoomed["long"] == zoomed["short"]
    lanes = long.split('<g class="lane"')[1:]
    assert len(lanes) == 2 and turns > 1500
    for lane in lanes:
        assert 0 < lane.count('class="turn-block"') <= WIDTH // 2 < turns
        assert lane.count('<path class="tick') <= 2
    assert 'href="/runs/' in long and "turn 1–" in long  # merged blocks name their range and open its first turn


def _picture(run, start=None, end=None):
    """{agent: (pixels its blocks cover, error blocks' pixels, tick columns, failed tick columns)}."""
    from runs.pages.common import run_agents
    from runs.pages.timeline import build

    out = {}
    for row in build(run, run_agents(run), start, end)["rows"]:
        covered, errors = set(), set()
        for rect in re.finditer(r'<rect class="turn( error)?" x="([\d.]+)" y="6" width="([\d.]+)"', str(row["blocks"])):
            x, w = float(rect[2]), float(rect[3])
            (errors if rect[1] else covered).update(range(int(x), int(x + w)))
        ticks = {cls: {int(px) for px in re.findall(r"M(\d+) ", d)} for cls, d in row["ticks"]}
        out[row["agent"].agent_id] = covered, errors, ticks.get("tick", set()), ticks.get("tick failed", set())
    return out


def _near(a: set, b: set, by: int) -> bool:
    """Every pixel of each set within `by` of one of the other's."""
    return all(any(abs(x - y) <= by for y in b) for x in a) and all(any(abs(x - y) <= by for y in a) for x in b)


@pytest.mark.parametrize("window", [(None, None), (3000.0, 15000.0)])
def test_a_dense_window_read_by_bucket_draws_what_its_turns_draw(window, monkeypatch):
    """The buckets (a window of thousands of turns) and the turn spans draw the same picture: blocks
    over the same pixels, and ticks, failed ones too, in the same columns to a pixel (a bucket is two
    to eight pixels wide, and marks its calls and failed results by slots of half a pixel at most)."""
    from runs.pages import timeline

    run = stamped_run("dense", 20_000)
    monkeypatch.setattr(timeline, "DENSE", 10**9)
    by_turn = _picture(run, *window)
    monkeypatch.setattr(timeline, "DENSE", 0)
    by_bucket = _picture(run, *window)
    assert by_turn.keys() == by_bucket.keys() == {"root", "t1"}
    for agent, (covered, errors, ticks, failed) in by_turn.items():
        b_covered, b_errors, b_ticks, b_failed = by_bucket[agent]
        assert len(covered) > 1000 and len(ticks | failed) > 1000 and (agent == "t1") == (not failed)
        assert len(covered ^ b_covered) <= 4 and errors == b_errors == set()
        assert _near(ticks | failed, b_ticks | b_failed, 1) and _near(failed, b_failed, 1)


def test_a_saturated_lane_reads_wider_buckets_and_a_sparse_one_beside_it_does_not(monkeypatch):
    """In a window of a turn a pixel or more a lane (root and t1 here, 1,818 turns over 1,160 px), those
    lanes read buckets four times as wide and draw a few dozen blocks, the picture their turns draw;
    a sparse lane in the same window (s1: a 30 ms turn every 300 ms, gaps of ~15 px) reads the finer
    buckets, so no bucket merges two of its turns across the gap between them."""
    from runs.pages import timeline
    from tests.pages_helpers import synthetic_stream

    records = synthetic_stream(20_000)
    stream = records[:8] + [{"type": "agent_spawned", "agentId": "s1", "parentAgentId": "root", "profileId": "tool",
                             "modelId": "m", "depth": 1}]
    for i, record in enumerate(records[8:], 8):
        if i % 300 in (0, 30):
            stream.append({"type": "turn_started" if i % 300 == 0 else "turn_timing", "agentId": "s1",
                           "parentAgentId": "root"})
        stream.append(record)
    run = stamped_run("saturated", len(stream), stream)
    monkeypatch.setattr(timeline, "DENSE", 10**9)
    by_turn = _picture(run)
    monkeypatch.setattr(timeline, "DENSE", 0)
    by_bucket = _picture(run)
    blocks = {row["agent"].agent_id: str(row["blocks"]).count('class="turn-block"')
              for row in timeline.build(run, run.agents.all())["rows"]}
    assert blocks["s1"] == 66 and all(0 < blocks[agent] <= timeline.WIDTH // 24 + 1 for agent in ("root", "t1"))
    for agent, (covered, errors, ticks, failed) in by_turn.items():
        b_covered, b_errors, b_ticks, b_failed = by_bucket[agent]
        assert 100 < len(covered) and len(covered ^ b_covered) <= 4 and errors == b_errors == set()
        assert _near(ticks | failed, b_ticks | b_failed, 1) and _near(failed, b_failed, 1)


def test_a_dense_window_reads_buckets_two_to_eight_pixels_wide():
    """At most one bucket row a lane for two pixels, and slots (a sixteenth of a bucket) of half a pixel
    at most; a pixel narrower than the finest bucket allows is drawn from its turns."""
    from runs.models.timeline import SLOTS
    from runs.pages.timeline import _window_level

    for pixel_ms in (1.5, 2.0, 3.7, 59.05, 118.1, 1000.0, 123_456.0):
        level = _window_level(pixel_ms)
        assert 2 <= 2 ** level / pixel_ms < 8 and 2 ** level / SLOTS / pixel_ms <= 0.5
    assert _window_level(0.9) is None


def test_a_bucket_marks_each_call_and_failed_result_in_its_slot_at_every_level():
    """A bucket's call_slots / fail_slots hold the slot of every call / failed result the lane's turns
    hold in that bucket, at every level, and nothing else."""
    from collections import defaultdict

    from runs.models import TimelineBucket, TimelineLane, TurnSpan
    from runs.models.timeline import LEVELS, read_ticks, slot

    run = stamped_run("slots", 3_000)
    want = defaultdict(lambda: [0, 0])
    for agent_id, ticks in [*TurnSpan.objects.filter(run=run).values_list("agent_id", "ticks"),
                            *TimelineLane.objects.filter(run=run).values_list("agent_id", "ticks")]:
        for ms, failed in read_ticks(ticks):
            for level in LEVELS:
                want[agent_id, level, int(ms // 2 ** level)][failed] |= slot(ms, level)
    got = {(agent_id, level, b): [calls, fails] for agent_id, level, b, calls, fails in TimelineBucket.objects.filter(
        run=run).values_list("agent_id", "level", "b", "call_slots", "fail_slots") if calls or fails}
    assert got == dict(want) and any(fails for _, fails in got.values())
    assert {bin(calls).count("1") > 1 for calls, _ in got.values()} == {True, False}  # several calls share a bucket


@pytest.mark.parametrize("dense", [0, 10**9])
def test_stamps_that_go_backwards_and_span_centuries_still_draw(viewer_client, monkeypatch, dense):
    """A hostile stream's stamps (1901 and 9999 among millisecond steps, some going back) fold into
    buckets at every level and draw, by bucket or by turn, whole and zoomed, with ticks in the picture."""
    from runs.ingest import writer as ingest
    from runs.models import Run
    from runs.pages import timeline
    from tests.pages_helpers import synthetic_stream

    records = synthetic_stream(3_000)
    for i, record in enumerate(records):
        record["timestamp"] = (f"2026-07-24T04:00:{(i // 1000) % 60:02d}.{(i * 7) % 1000:03d}Z" if i % 97
                               else ("1901-01-01T00:00:00Z" if i % 2 else "9999-12-31T23:59:59.999Z"))
    run = Run.objects.create(name="hostile stamps")
    assert ingest.append(run, records).stored == 3_000
    monkeypatch.setattr(timeline, "DENSE", dense)
    url = reverse("runs:timeline", args=(run.pk,))
    for query in ("", "?start=0&end=1e15", "?start=3.5e12&end=3.5e12", "?start=-5&end=1e300"):
        response = viewer_client.get(url + query)
        assert response.status_code == 200, query
    assert 'class="tick' in viewer_client.get(url).content.decode()


def test_the_timeline_projection_rebuilds_as_it_was_folded():
    """Lanes, turn spans, waits and buckets folded record by record == folded again from the log."""
    from runs.ingest import rebuild
    from runs.ingest import writer as ingest
    from runs.models import Run
    from tests.inspect_stream import inspect_stream
    from tests.streams import projection_dump

    run = Run.objects.create(name="one-by-one")
    ingest.append(run, inspect_stream(), chunk_lines=1)
    folded = projection_dump(run)["timeline"]
    assert all(folded[table] for table in ("TimelineLane", "TurnSpan", "WaitSpan", "TimelineBucket"))
    assert any(span["error"] for span in folded["TurnSpan"]) and any(span["failed"] for span in folded["TurnSpan"])
    rebuild.rebuild_projections(run)
    assert projection_dump(run)["timeline"] == folded


def test_a_run_of_hundreds_of_agents_is_drawn_a_page_of_lanes_at_a_time(viewer_client, django_assert_max_num_queries):
    """Lanes in pages of LANES_SHOWN (forest order), the axis the whole run's on each, the zoom keeping
    the lane page; the same few queries whatever the number of agents."""
    from runs.ingest import writer as ingest
    from runs.models import Run
    from runs.pages.timeline import LANES_SHOWN

    n = LANES_SHOWN * 2 + 50
    records = [{"type": "session_started", "agentId": "root", "timestamp": "2026-07-24T04:00:00Z"}]
    for i in range(1, n):
        stamp = f"2026-07-24T04:{i // 60:02d}:{i % 60:02d}Z"
        records += [{"type": "agent_spawned", "agentId": f"a{i:03d}", "parentAgentId": "root", "timestamp": stamp},
                    {"type": "turn_started", "agentId": f"a{i:03d}", "turn": 1, "timestamp": stamp}]
    run = Run.objects.create(name="many-lanes")
    ingest.append(run, records)
    url = reverse("runs:timeline", args=(run.pk,))
    with django_assert_max_num_queries(12):
        first = viewer_client.get(url).content.decode()
    assert [a for a, _ in rows(first, "data-agent")] == ["root", *(f"a{i:03d}" for i in range(1, LANES_SHOWN))]
    assert f"of +{n - 1}.000 s · lanes 1–{LANES_SHOWN} of {n}" in first and 'id="lanes-earlier"' not in first  # the whole run's axis
    assert f'id="lanes-later" href="?lanes={LANES_SHOWN}"' in first
    with django_assert_max_num_queries(12):
        last = viewer_client.get(url + f"?lanes={LANES_SHOWN * 2}").content.decode()
    assert [a for a, _ in rows(last, "data-agent")] == [f"a{i:03d}" for i in range(LANES_SHOWN * 2, n)]
    assert f"of +{n - 1}.000 s · lanes {LANES_SHOWN * 2 + 1}–{n} of {n}" in last and 'id="lanes-later"' not in last
    assert f'href="/runs/{run.pk}/agents/a{n - 1:03d}/turns/1/"' in last
    assert re.search(rf'id="zoom-in" href="\?start=[\d.]+&amp;end=[\d.]+&amp;lanes={LANES_SHOWN * 2}"', last)
    assert f'id="lanes-earlier" href="?lanes={LANES_SHOWN}"' in last


def test_a_chunk_merges_its_buckets_into_the_stored_ones_without_reading_them():
    """A coarse level's bucket holds every agent active in its span (a run of 12,000 incarnations read
    60,000 a chunk for the hundred it touched): the database merges a chunk's rows into the stored
    buckets on their key, and the write path reads none. What it stores equals one fold of it all."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from runs.ingest import rebuild
    from runs.ingest import writer as ingest
    from runs.models import Run
    from runs.models.timeline import LEVELS
    from tests.streams import projection_dump

    def stamp(ms):
        return f"2026-07-24T04:00:{ms // 1000:02d}.{ms % 1000:03d}Z"

    records = []
    for i in range(60):
        records += [{"type": "agent_spawned", "agentId": f"a{i:03d}", "timestamp": stamp(i)},
                    {"type": "turn_started", "agentId": f"a{i:03d}", "turn": 1, "timestamp": stamp(i)},
                    {"type": "tool_call", "agentId": f"a{i:03d}", "name": "read_file", "timestamp": stamp(i + 1)}]
    run = Run.objects.create(name="shared-buckets")
    ingest.append(run, records)
    later = [{"type": "tool_call", "agentId": "a007", "name": "shell", "timestamp": stamp(500)},
             {"type": "turn_outcome", "agentId": "a007", "outcome": "error", "timestamp": stamp(600)},
             {"type": "turn_started", "agentId": "a007", "turn": 2, "timestamp": stamp(700)},
             {"type": "tool_result", "agentId": "a007", "name": "shell", "ok": False, "timestamp": stamp(9000)},
             {"type": "turn_started", "agentId": "a007", "turn": 3, "timestamp": stamp(9500)}]
    with CaptureQueriesContext(connection) as queries:
        for record in later:  # a chunk each: each merges into what the one before stored
            ingest.append(run, [record])
    assert not [q["sql"] for q in queries if q["sql"].startswith("SELECT") and '"runs_timelinebucket"' in q["sql"]]
    folded = projection_dump(run)["timeline"]["TimelineBucket"]
    coarse = [row for row in folded if row["agent_id"] == "a007" and row["level"] == LEVELS[-1]]
    assert [(r["turns"], r["first_turn"], r["last_turn"], r["error"]) for r in coarse] == [(2, 1, 2, True)]
    rebuild.rebuild_projections(run)
    assert projection_dump(run)["timeline"]["TimelineBucket"] == folded

