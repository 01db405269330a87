"""Hostile query strings on the across pages: a clear message or an empty result, never a 500."""

import base64
import json

import pytest
from django.urls import reverse

from runs.models import Run
from tests.pages_helpers import rows
from tests.streams import STREAMS, import_stream

pytestmark = pytest.mark.django_db

# (a NUL is refused before any page reads it: tests/test_security.py)
ODD = ["%", "_", "\\", "'; drop table runs_run; --", "<script>alert(1)</script>", "a" * 5000, "|python|", "\u00e9"]


def test_odd_values_in_every_list_and_analysis_parameter(viewer_client):
    import_stream(STREAMS / "multi_agent.ndjson", "odd-100%")
    for value in ODD:
        for key in ("q", "status", "source", "mode", "language", "docViewTypes", "model", "profile", "divergences",
                    "refusals", "from", "to", "sort", "after", "before"):
            response = viewer_client.get(reverse("runs:list"), {key: value})
            assert response.status_code == 200, (key, value)
            assert "<script>alert" not in response.content.decode()
            assert viewer_client.get(reverse("runs:analysis"), {key: value}).status_code == 200, (key, value)
        assert viewer_client.get(reverse("runs:analysis"), {"group": value}).status_code == 400
        assert viewer_client.get(reverse("runs:compare"), {"a": value, "b": value}).status_code == 404
        run = Run.objects.get(name="odd-100%").pk
        assert viewer_client.get(reverse("runs:compare"), {"a": run, "b": run, "agent_a": value,
                                                           "agent_b": "root"}).status_code == 404, value
    # LIKE wildcards are searched as characters.
    assert [n for n, _ in rows(viewer_client.get(reverse("runs:list"), {"q": "%"}).content, "data-run")] == ["odd-100%"]
    assert rows(viewer_client.get(reverse("runs:list"), {"q": "_"}).content, "data-run") == []
    assert rows(viewer_client.get(reverse("runs:list"), {"language": "%"}).content, "data-run") == []


def test_a_selection_of_odd_ids_selects_nothing(viewer_client):
    Run.objects.create(name="kept")
    response = viewer_client.post(reverse("runs:selected"), {"run": ["x", "-1", "1e9"], "action": "export"},
                                  follow=True)
    assert "Select at least one run" in response.content.decode()
    response = viewer_client.post(reverse("runs:selected"), {"run": ["1"], "action": "explode", "back": "//evil.example"})
    assert response.status_code == 302 and response["Location"].startswith("/?")


def test_the_last_and_first_days_there_are_filter_without_failing(viewer_client):
    import_stream(STREAMS / "multi_agent.ndjson", "dated")  # started 2026: inside either bound
    for query in ({"to": "9999-12-31"}, {"from": "0001-01-01", "to": "9999-12-31"}, {"from": "9999-12-31"}):
        expected = [] if query.get("from") == "9999-12-31" else ["dated"]
        for fmt in ("", "json", "csv"):
            assert viewer_client.get(reverse("runs:analysis"), {**query, "format": fmt}).status_code == 200
        assert [n for n, _ in rows(viewer_client.get(reverse("runs:list"), query).content, "data-run")] == expected


@pytest.mark.parametrize("value, pk, sort", [
    ("x", 1, ""), (1, 10**30, ""), ({"t": "2026-01-01T00:00:00"}, 1, "name"), (10**30, 1, "cost"), (1.5, True, "turns"),
    ({"t": 5}, 1, "started"), ("x", 1, "tokens")])
def test_a_tampered_page_link_shows_the_first_page_saying_so(viewer_client, value, pk, sort):
    """A link's sort value of another column's kind, or past a database integer, was a 500."""
    import_stream(STREAMS / "multi_agent.ndjson", "kept")
    after = base64.urlsafe_b64encode(json.dumps([value, pk]).encode()).decode().rstrip("=")
    response = viewer_client.get(reverse("runs:list"), {"after": after, "sort": sort})
    assert response.status_code == 200
    assert "That page link is not one this list made" in response.content.decode()
    assert [n for n, _ in rows(response.content, "data-run")] == ["kept"]


def test_an_unknown_status_filter_says_so(viewer_client):
    """An unknown source was named as such; an unknown status showed "0 runs" and nothing else."""
    import_stream(STREAMS / "multi_agent.ndjson", "kept")
    html = viewer_client.get(reverse("runs:list"), {"status": "bogus"}).content.decode()
    assert "Unknown status &#x27;bogus&#x27; (the statuses are " in html and 'data-run="kept"' not in html
    assert "Unknown status" not in viewer_client.get(reverse("runs:list"), {"status": "completed"}).content.decode()


def test_a_page_link_of_a_float_column_holds_any_finite_figure():
    """A cost of 1e20 (a stream's to give) made the list's next-page link one it then refused."""
    from runs.across.run_list import BadCursor, decode_cursor, encode_cursor

    assert decode_cursor(encode_cursor(1e20, 5), "cost") == (1e20, 5)
    for value in (float("nan"), float("inf")):
        with pytest.raises(BadCursor):
            decode_cursor(encode_cursor(value, 5), "duration")
