"""Each run page and the report make the same number of queries for 20 events and for 10,000."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.ingest import writer as ingest
from runs.models import Run
from tests.pages_helpers import synthetic_stream

pytestmark = pytest.mark.django_db

PAGES = [("agents", ()), ("agent", ("root",)), ("agent", ("t1",)), ("stores", ()), ("divergences", ()),
         ("refusals", ()), ("arms", ()), ("detail", ())]


def make_run(name, n):
    run = Run.objects.create(name=name)
    result = ingest.append(run, synthetic_stream(n), chunk_lines=5000)
    assert result.stored == n
    return run


# The inspection pages: records (a call, its result, a program, a tool call), a turn of each agent,
# a conversation, the timeline and a record's JSON.
INSPECT = [("event", (11,)), ("event", (12,)), ("event", (16,)), ("event", (18,)), ("turn", ("root", 1)),
           ("turn", ("t1", 1)), ("conversation", ("root",)), ("timeline", ()), ("api_event", (3,))]


def urls(run, pages=PAGES):
    return [reverse(f"runs:{name}", args=(run.pk, *args)) for name, args in pages] + [
        reverse("runs:api_report", args=[run.pk])]


def test_page_queries_do_not_grow_with_events(viewer_client, django_assert_max_num_queries):
    # 20 events hold a refused call: a page reads no rows of what a run does not have.
    small, large = make_run("small", 20), make_run("large", 10_000)
    assert large.agents.get(agent_id="root").turns > 800
    for small_url, large_url in zip(urls(small), urls(large)):
        with CaptureQueriesContext(connection) as captured:
            assert viewer_client.get(small_url).status_code == 200
        with django_assert_max_num_queries(len(captured), info=large_url):
            assert viewer_client.get(large_url).status_code == 200


def test_inspection_pages_queries_do_not_grow_with_events(viewer_client, django_assert_max_num_queries):
    small, large = make_run("small", 40), make_run("large", 10_000)
    for small_url, large_url in zip(urls(small, INSPECT), urls(large, INSPECT)):
        with CaptureQueriesContext(connection) as captured:
            assert viewer_client.get(small_url).status_code == 200, small_url
        with django_assert_max_num_queries(len(captured), info=large_url):
            assert viewer_client.get(large_url).status_code == 200


def test_arms_stores_and_report_read_context_off_the_projections(viewer_client):
    run = make_run("bands", 8 + 11 * 180)  # the opening records, then 180 whole turns
    for url in (reverse("runs:arms", args=[run.pk]), reverse("runs:stores", args=[run.pk]),
                reverse("runs:api_report", args=[run.pk])):
        with CaptureQueriesContext(connection) as captured:
            assert viewer_client.get(url).status_code == 200
        assert not [q["sql"] for q in captured if "context_breakdown" in q["sql"]], url
    # and the figures are the projection's: docs_view is turn % 50 on every root turn
    root = run.agents.get(agent_id="root")
    assert root.context_bands["docs_view"] == sum(t % 50 for t in range(1, root.turns + 1))


def test_report_and_compare_stay_flat_in_the_run_size(viewer_client):
    """The report and the comparison make as many queries on 2,000 events as on 200, and read no
    stored record: latency and tokens per second come off the fold's call times and agent timing."""
    runs = {n: (make_run(f"a{n}", n), make_run(f"b{n}", n)) for n in (200, 2_000)}
    counts = {}
    for n, (a, b) in runs.items():
        urls_ = [reverse("runs:api_report", args=[a.pk]), reverse("runs:api_compare") + f"?a={a.pk}&b={b.pk}",
                 reverse("runs:compare") + f"?a={a.pk}&b={b.pk}"]
        for i, url in enumerate(urls_):
            with CaptureQueriesContext(connection) as captured:
                assert viewer_client.get(url).status_code == 200, url
            counts[(n, i)] = len(captured)
            read = [q["sql"] for q in captured if '"runs_event"."raw"' in q["sql"]]
            assert not read, (url, read)
            halves = [q["sql"] for q in captured if "'api_call'" in q["sql"] or "'tool_call'" in q["sql"]]
            assert not halves, (url, halves)
    assert [counts[(200, i)] for i in range(3)] == [counts[(2_000, i)] for i in range(3)]
