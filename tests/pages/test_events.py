"""A page and a JSON answer per stored record and per rejected line (runs/pages/events.py), a
program in full with its failing line."""

import json

import pytest
from django.urls import reverse

from runs.demo import DEMO_DIR
from runs.feed.windows import FeedRenderer
from runs.stream.record import parse_timestamp
from runs.models import Event, IngestToken, RejectedLine
from tests.engine_helpers import run_spec
from tests.inspect_stream import KEY_ERROR_PROGRAM
from tests.pages_helpers import authored, rows
from tests.streams import REAL_MOCK, STREAMS, import_stream

pytestmark = pytest.mark.django_db
DEMOS = ("delegation", "review", "code-root", "board")


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
