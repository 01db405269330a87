"""Run pages: login everywhere, the runs list, the run header, the upload form, the download link."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.models import Run
from tests.streams import REAL_MOCK, STREAMS, import_stream

pytestmark = pytest.mark.django_db


def test_anonymous_is_redirected_to_login_everywhere(client):
    run, _ = import_stream(REAL_MOCK)
    for name, args in [("runs:list", []), ("runs:detail", [run.pk]), ("runs:import", []), ("runs:export", [run.pk])]:
        response = client.get(reverse(name, args=args))
        assert response.status_code == 302, name
        assert response["Location"].startswith(reverse("login"))


def test_runs_list_newest_first_with_figures(viewer_client):
    old, _ = import_stream(REAL_MOCK, "older")
    new, _ = import_stream(STREAMS / "multi_agent.ndjson", "newer")
    response = viewer_client.get(reverse("runs:list"))
    html = response.content.decode()
    assert html.index('data-run="newer"') < html.index('data-run="older"')
    row = html[html.index('data-run="newer"'):html.index('data-run="older"')]
    for figure in (">completed<", ">7<", ">11<", ">42<", ">4<", ">2 · 8<", "$0.0425"):
        assert figure in row, figure


def test_runs_list_is_paginated_with_bounded_queries(viewer_client):
    Run.objects.bulk_create([Run(name=f"run-{i:03d}") for i in range(120)])
    with CaptureQueriesContext(connection) as ctx:
        response = viewer_client.get(reverse("runs:list"))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('href="/runs/') >= 50 and "run-119" in html and "run-069" not in html
    assert 'rel="next"' in html and "120 runs" in html
    assert len(ctx.captured_queries) <= 8  # the keyset paging itself: tests/across/test_run_list.py


def test_run_page_header(viewer_client):
    run, _ = import_stream(REAL_MOCK)
    response = viewer_client.get(reverse("runs:detail", args=[run.pk]))
    html = response.content.decode()
    header = html[html.index('id="run-header"'):html.index('class="tabs"')]
    assert "real-mock-session" in header and "completed" in header
    assert "<b>1</b><span>agents</span>" in header
    assert "<b>2</b><span>turns</span>" in header
    assert "<b>1</b><span>calls</span>" in header
    assert "<b>0</b><span>error turns</span>" in header
    assert "<b>2.8k</b><span>tokens</span>" in header
    assert "$0.0063" in header
    assert reverse("runs:export", args=[run.pk]) in header
    assert 'aria-current="page">Overview<' in html
    assert 'id="usage-uncached">2.6k<' in html and 'id="usage-output">240<' in html
    # untrusted payloads are escaped: the fixture's write_file body holds a <script>
    assert "<script>\n" not in html


def test_run_page_lists_rejected_lines(viewer_client):
    run, _ = import_stream(STREAMS / "malformed_tail.ndjson")
    html = viewer_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'id="rejected-lines"' in html and "blank line" in html and "not a JSON object (a JSON array)" in html
    assert "<b>5</b><span>rejected lines</span>" in html


def test_the_headers_zero_rejected_lines_links_to_a_section_saying_so(viewer_client):
    run, _ = import_stream(REAL_MOCK)
    html = viewer_client.get(reverse("runs:agents", args=[run.pk])).content.decode()
    assert f'href="{reverse("runs:detail", args=[run.pk])}#rejected-lines"><b>0</b>' in html
    html = viewer_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'id="rejected-lines"' in html and "None: every record this run received is stored." in html


def test_run_page_queries_do_not_grow_with_events(viewer_client):
    small, _ = import_stream(REAL_MOCK, "small")
    big, _ = import_stream(STREAMS / "multi_agent.ndjson", "big")
    counts = []
    for run in (small, big):
        with CaptureQueriesContext(connection) as ctx:
            assert viewer_client.get(reverse("runs:detail", args=[run.pk])).status_code == 200
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]


def test_download_link_returns_the_stored_stream(viewer_client):
    run, _ = import_stream(REAL_MOCK)
    response = viewer_client.get(reverse("runs:export", args=[run.pk]))
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="real-mock-session.ndjson"'
    assert b"".join(response.streaming_content) == REAL_MOCK.read_bytes()


def test_upload_form_reports_counts_and_rejected_lines(operator_client):
    assert operator_client.get(reverse("runs:import")).status_code == 200
    upload = SimpleUploadedFile("tail.ndjson", (STREAMS / "malformed_tail.ndjson").read_bytes())
    response = operator_client.post(reverse("runs:import"), {"file": upload, "name": ""})
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="result-stored">stored 6<' in html and 'id="result-rejected">rejected 5<' in html
    for number, reason in [(7, "blank line"), (9, "not a JSON object (a JSON array)"), (10, "not a JSON object (a JSON string)")]:
        assert f'<td class="num">{number}</td><td>{reason}</td>' in html
    run = Run.objects.get(name="tail")
    assert run.created_by.username == "operator" and run.last_seq == 6
    # the same file into the same run: nothing stored twice
    upload = SimpleUploadedFile("tail.ndjson", (STREAMS / "malformed_tail.ndjson").read_bytes())
    html = operator_client.post(reverse("runs:import"), {"file": upload, "name": "tail"}).content.decode()
    assert "stored 0" in html and "6 already stored" in html
    assert Run.objects.get(name="tail").last_seq == 6
    assert 'value="tail"' not in html  # a blank form: the next file goes into this run only if named so


@pytest.mark.parametrize("file_name, name, said", [
    ("8.ndjson", "", "A run name cannot be digits alone"),  # named after the file
    ("tail.ndjson", "12", "A run name cannot be digits alone"),
    ("tail.ndjson", "a/b", "A run name cannot hold &#x27;/&#x27;"),
])
def test_an_import_refuses_a_name_no_address_reaches(operator_client, file_name, name, said):
    upload = SimpleUploadedFile(file_name, (STREAMS / "malformed_tail.ndjson").read_bytes())
    html = operator_client.post(reverse("runs:import"), {"file": upload, "name": name}).content.decode()
    assert said in html and not Run.objects.exists()


def test_upload_result_reads_its_counts_with_thousands_separators(operator_client):
    lines = b"".join(b'{"type":"log","message":"line %d"}\n' % n for n in range(1234)) + b"[]\n" * 1001
    html = operator_client.post(reverse("runs:import"), {"file": SimpleUploadedFile("many.ndjson", lines),
                                                       "name": ""}).content.decode()
    assert 'id="result-stored">stored 1,234<' in html and 'id="result-rejected">rejected 1,001<' in html
    assert "of 2,235 lines." in html


def test_the_upload_form_says_how_big_a_file_it_takes(operator_client, settings):
    settings.GG_MAX_REQUEST_BYTES = 3 * 1024 ** 2
    html = operator_client.get(reverse("runs:import")).content.decode()
    assert 'id="import-max">3.0\xa0MB</span> (<code>GG_MAX_REQUEST_BYTES</code>)' in html


def test_upload_without_a_file_is_a_form_error(operator_client):
    response = operator_client.post(reverse("runs:import"), {"name": "x"})
    assert response.status_code == 200
    assert "This field is required" in response.content.decode()
    assert not Run.objects.filter(name="x").exists()


def test_upload_form_lists_a_bounded_number_of_rejections_and_counts_them_all(operator_client, monkeypatch):
    from runs.ingest import views

    monkeypatch.setattr(views, "REJECTIONS_LISTED", 3)
    upload = SimpleUploadedFile("tail.ndjson", (STREAMS / "malformed_tail.ndjson").read_bytes())
    html = operator_client.post(reverse("runs:import"), {"file": upload, "name": ""}).content.decode()
    assert 'id="result-rejected">rejected 5<' in html
    table = html[html.index('id="rejections"'):html.index("</table>", html.index('id="rejections"'))]
    assert table.count("<tr><td") == 3
    assert "… and 2 more rejected lines, not listed here." in html


def test_run_page_says_when_it_lists_only_the_first_rejected_lines(viewer_client, monkeypatch):
    from runs.pages import overview

    run, _ = import_stream(STREAMS / "malformed_tail.ndjson")
    monkeypatch.setattr(overview.run_rejected_lines, "__kwdefaults__", {"limit": 2})
    html = viewer_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert "the first 2 of 5" in html


def test_importing_needs_the_permission_launching_does(viewer_client):
    """Every other write answered a viewer 403; the upload form created runs for anyone signed in."""
    import_stream(REAL_MOCK)
    assert "Import a stream" not in viewer_client.get(reverse("runs:list")).content.decode()
    assert viewer_client.get(reverse("runs:import")).status_code == 403
    upload = SimpleUploadedFile("tail.ndjson", (STREAMS / "malformed_tail.ndjson").read_bytes())
    refused = viewer_client.post(reverse("runs:import"), {"file": upload, "name": "mine"})
    assert refused.status_code == 403 and b"needs the runs.add_run permission" in refused.content
    assert not Run.objects.filter(name="mine").exists()
