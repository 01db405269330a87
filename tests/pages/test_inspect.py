"""Inspecting every step: a page and a JSON answer per stored record (and per rejected line), a
program in full with its failing line, turns as addresses, latency from the stored stamps and
tokens per second pooled over model time."""

import json
import re

import pytest
from django.urls import reverse

from runs.demo import DEMO_DIR
from runs.feed.rows import PANEL_KINDS
from runs.feed.windows import FeedRenderer
from runs.ingest import writer as ingest
from runs.stream.record import parse_timestamp
from runs.models import Event, IngestToken, RejectedLine, Run
from runs.pages import calls
from runs.pages.report import build_report
from tests.engine_helpers import run_spec
from tests.inspect_stream import KEY_ERROR_PROGRAM, inspect_stream
from tests.pages_helpers import rows
from tests.streams import REAL_MOCK, STREAMS, import_stream

pytestmark = pytest.mark.django_db
DEMOS = ("delegation", "review", "code-root", "board")


def authored(name="inspect"):
    run = Run.objects.create(name=name)
    assert ingest.append(run, inspect_stream()).stored == len(inspect_stream())
    run.refresh_from_db()
    return run


def assert_every_event_has_its_page(client, run):
    seqs = list(run.events.order_by("seq").values_list("seq", "raw"))
    assert seqs
    for seq, raw in seqs:
        page = client.get(reverse("runs:event", args=(run.pk, seq)))
        assert page.status_code == 200, (run.name, seq)
        api = client.get(reverse("runs:api_event", args=(run.pk, seq)))
        assert api.status_code == 200 and api["Content-Type"].startswith("application/json")
        assert api.content.decode() == raw, (run.name, seq)


def test_every_event_of_every_shipped_demo_has_a_page_and_its_stored_line(viewer_client, tmp_path):
    for demo in DEMOS:
        run, _ = run_spec(json.loads((DEMO_DIR / f"{demo}.spec.json").read_text()), tmp_path / demo, name=demo)
        assert run.status == "completed"
        assert_every_event_has_its_page(viewer_client, run)


@pytest.mark.parametrize("path", [REAL_MOCK, STREAMS / "multi_agent.ndjson", STREAMS / "legacy.ndjson",
                                  STREAMS / "host_wrapped.ndjson"], ids=lambda p: p.stem)
def test_every_event_of_the_recordings_has_a_page_and_its_stored_line(viewer_client, path):
    run, _ = import_stream(path)
    assert_every_event_has_its_page(viewer_client, run)


def test_event_page_shows_fields_neighbours_and_the_other_half_with_its_duration(viewer_client):
    run, _ = import_stream(REAL_MOCK)
    call = Event.objects.get(run=run, type="tool_call")
    result = Event.objects.get(run=run, type="tool_result")
    html = viewer_client.get(reverse("runs:event", args=(run.pk, call.seq))).content.decode()
    assert f'href="/runs/{run.pk}/events/{result.seq}/"' in html and 'id="other-half"' in html
    ms = (parse_timestamp(result.timestamp) - parse_timestamp(call.timestamp)).total_seconds() * 1000
    assert f"{ms:.1f} ms between the halves" in html  # 49.8 ms, from gg's own stamps
    assert dict(rows(html, "data-field"))["name"] == "name write_file"
    assert f'href="/runs/{run.pk}/events/{call.seq - 1}/"' in html and f'href="/runs/{run.pk}/events/{call.seq + 1}/"' in html
    back = viewer_client.get(reverse("runs:event", args=(run.pk, result.seq))).content.decode()
    assert f'id="other-half" href="/runs/{run.pk}/events/{call.seq}/"' in back


def test_event_json_needs_a_login_or_a_token_and_404s_cleanly(client, viewer):
    run, _ = import_stream(REAL_MOCK)
    url = reverse("runs:api_event", args=(run.pk, 1))
    assert client.get(url).status_code == 401
    token = IngestToken.objects.create(user=viewer)
    assert client.get(url, headers={"Authorization": f"Bearer {token.key}"}).content.decode() == \
        Event.objects.get(run=run, seq=1).raw
    assert client.get(reverse("runs:event", args=(run.pk, 1))).status_code == 302  # the page: log in first
    viewer_client = client
    viewer_client.force_login(viewer)
    assert viewer_client.get(reverse("runs:api_event", args=(run.name, 1))).status_code == 200
    missing = viewer_client.get(reverse("runs:api_event", args=(run.pk, 999)))
    assert missing.status_code == 404 and "no record 999" in missing.json()["error"]
    assert viewer_client.get(reverse("runs:event", args=(run.pk, 999))).status_code == 404


def test_a_rejected_line_has_a_page_and_a_json_answer(viewer_client):
    run, _ = import_stream(STREAMS / "malformed_tail.ndjson")
    line = RejectedLine.objects.filter(run=run).order_by("line_number").first()
    page = viewer_client.get(reverse("runs:rejected", args=(run.pk, line.pk))).content.decode()
    assert f"line {line.line_number}" in page.lower() and line.reason in page
    answer = viewer_client.get(reverse("runs:api_rejected", args=(run.pk, line.pk))).json()
    assert answer == {"line": line.line_number, "reason": line.reason, "text": line.raw, "truncated": False}
    overview = viewer_client.get(reverse("runs:detail", args=(run.pk,))).content.decode()
    assert reverse("runs:rejected", args=(run.pk, line.pk)) in overview


def test_a_failed_program_is_a_red_feed_row_and_its_source_marks_the_failing_line(viewer_client):
    run = authored()
    feed, _ = FeedRenderer(run.pk).next_batch(0, limit=1000)
    failed = [r for r in feed if r.kind == "program"]
    assert [(r.label, r.detail, r.tone, r.turn) for r in failed] == [
        ("program ✗", "KeyError: 'b'", "fail", 3), ("program ✗", "SyntaxError: invalid syntax", "fail", 4)]
    seq = failed[0].seq
    html = viewer_client.get(reverse("runs:event", args=(run.pk, seq))).content.decode()
    assert 'class="failing" aria-current="true"' in html
    source = dict(rows(html, "data-line"))
    assert source["3"] == 'value = notes["b"]' and len(source) == len(KEY_ERROR_PROGRAM.split("\n"))
    assert f'id="program-{seq}-L3" value="3" data-line="3" class="failing"' in html
    assert 'data-heading="Runtime error"' in html and "program_throw" in html
    turn4 = viewer_client.get(reverse("runs:turn", args=(run.pk, "root", 4))).content.decode()
    assert 'data-heading="Compiler error"' in turn4 and 'L1" value="1" data-line="1" class="failing"' in turn4
    agent = viewer_client.get(reverse("runs:agent", args=(run.pk, "root"))).content.decode()
    assert agent.count('class="failing"') == 2 and "KeyError: &#x27;b&#x27;" in agent


def test_turn_urls_for_code_and_tool_calling_agents(viewer_client):
    run = authored()
    code = viewer_client.get(reverse("runs:turn", args=(run.pk, "root", 3))).content.decode()
    assert "/reference/?lang=python#shell.shell" in code  # the refused call, linked to its reference entry
    assert 'id="turn-refusals"' in code and "not offered" in code
    assert "reading" in code  # the program's output
    tool = viewer_client.get(reverse("runs:turn", args=(run.pk, "agent-0", 2))).content.decode()
    assert 'data-tool="shell"' in tool and "exit 2" in tool and "ls: cannot open directory" in tool
    assert viewer_client.get(reverse("runs:turn", args=(run.pk, "agent-0", 9))).status_code == 404
    assert viewer_client.get(reverse("runs:turn", args=(run.pk, "nobody", 1))).status_code == 404
    # The feed names each turn and links to it.
    renderer = FeedRenderer(run.pk)
    rendered = renderer.render(*renderer.next_batch(0, limit=1000))
    assert "TURN 3" in rendered and f'href="/runs/{run.pk}/agents/root/turns/3/"' in rendered
    assert f'class="feed-open" href="/runs/{run.pk}/events/1/"' in rendered


def test_refusals_and_programs_link_to_their_turns(viewer_client):
    run = authored()
    refusals = viewer_client.get(reverse("runs:refusals", args=(run.pk,))).content.decode()
    assert f'href="/runs/{run.pk}/agents/root/turns/3/"' in refusals
    conversation = viewer_client.get(reverse("runs:conversation", args=(run.pk, "root"))).content.decode()
    assert "Read notes.txt." in conversation and KEY_ERROR_PROGRAM.split("\n")[0].replace('"', "&quot;") in conversation
    child = viewer_client.get(reverse("runs:conversation", args=(run.pk, "agent-0"))).content.decode()
    assert "List the workspace." in child and "ls: cannot open directory" in child


def test_latency_is_the_difference_of_the_stored_stamps():
    run = authored()
    halves = list(Event.objects.filter(run=run, type__in=calls.CALL_TYPES).order_by("seq"))
    expected = {}
    for e in halves:
        if e.type == "api_call":
            result = next(r for r in halves if r.seq > e.seq and r.type == "api_result" and r.operation == e.operation)
            expected.setdefault(e.operation, []).append(
                (parse_timestamp(result.timestamp) - parse_timestamp(e.timestamp)).total_seconds() * 1000)
    table = {r["name"]: r for r in calls.latency_table(calls.pair_calls(calls.call_rows(run, agent_id="root")))}
    assert table["files.read_file"]["p50_ms"] == pytest.approx(expected["files.read_file"][0]) == pytest.approx(12)
    assert table["shell.shell"]["failures"] == 1 and table["shell.shell"]["failure_rate"] == 1
    spawn = table["delegation.spawn_subagent"]["p95_ms"]
    assert spawn == pytest.approx(expected["delegation.spawn_subagent"][0])
    report = build_report(run)
    root = next(a for a in report["agents"] if a["agentId"] == "root")
    assert {r["name"]: r["p50Ms"] for r in root["latency"]}["files.read_file"] == pytest.approx(12)
    scout = next(a for a in report["agents"] if a["agentId"] == "agent-0")
    assert {r["name"]: (r["count"], r["failures"]) for r in scout["latency"]} == {"list_dir": (1, 0), "shell": (1, 1)}


def test_tokens_per_second_pool_generated_tokens_over_model_time():
    run = authored()
    pooled = calls.generated_throughput(run)
    # 40+60+80+20 (root) + 25+25 (scout) tokens over 500+300+1000+200 + 250+250 ms: 100 tokens/s,
    # where a mean of the six per-call rates would say 110.
    assert (pooled["run"]["tokens"], pooled["run"]["ms"]) == (250, 2500)
    assert pooled["run"]["per_second"] == pytest.approx(100)
    assert pooled["agents"]["agent-0"]["per_second"] == pytest.approx(100)
    assert pooled["agents"]["root"]["per_second"] == pytest.approx(200 / 2.0)
    assert build_report(run)["run"]["generatedTokensPerSecond"] == pytest.approx(100)


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


def test_the_feed_footer_counts_the_records_its_rows_stand_for(viewer_client):
    run = authored()
    html = viewer_client.get(reverse("runs:feed", args=(run.pk,))).content.decode()
    panel = Event.objects.filter(run=run, type__in=PANEL_KINDS).count()
    footer = re.search(r'id="feed-count"[^>]*>(.*?)</p>', html, re.S)[1]
    assert f"{run.last_seq - panel} of the run" in footer and f"{run.last_seq} stored records" in footer
    assert f"the other {panel} drive the panels" in footer and 'href="?kind=raw"' in footer
    raw = viewer_client.get(reverse("runs:feed_rows", args=(run.pk,)) + "?kind=raw&after=0").json()
    assert raw["rows"] == run.last_seq  # the raw kind: one row per stored record
