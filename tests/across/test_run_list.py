"""The runs list at scale: search and every filter on authored runs (each expected set derived from
the runs' own reports), sort by every column, keyset paging, bounded queries."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from runs.ingest import facts as run_facts
from runs.across.run_list import COLUMNS
from runs.ingest import services
from runs.models import Event, Run, RunFacts
from runs.pages.report import build_report
from tests.pages_helpers import rows
from tests.streams import REAL_MOCK, STREAMS, import_stream

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus():
    multi, _ = import_stream(STREAMS / "multi_agent.ndjson", "multi-lang")
    pages, _ = import_stream(STREAMS / "pages_run.ndjson", "pages-run")
    mock, _ = import_stream(REAL_MOCK, "echo-mock")
    Run.objects.filter(pk=pages.pk).update(source=Run.Source.ENGINE, launch_spec={"task": "Tidy the Vendor CSV"})
    pages.refresh_from_db()
    run_facts.refresh(pages)
    return {"multi-lang": multi, "pages-run": pages, "echo-mock": mock}


def listed(client, **params) -> list[str]:
    response = client.get(reverse("runs:list"), params)
    assert response.status_code == 200
    return [name for name, _text in rows(response.content, "data-run")]


def having(corpus, test) -> set[str]:
    """The runs whose report has an agent passing `test`."""
    return {name for name, run in corpus.items() if any(test(a) for a in build_report(run)["agents"])}


def test_search_reads_name_session_task_model_and_profile(viewer_client, corpus):
    assert set(listed(viewer_client, q="pages-1")) == {"pages-run"}  # session id
    assert set(listed(viewer_client, q="vendor csv")) == {"pages-run"}  # task, any case
    assert set(listed(viewer_client, q="vendor/mini")) == having(corpus, lambda a: a["modelId"] == "vendor/mini")
    assert set(listed(viewer_client, q="JAVA-CODER")) == having(corpus, lambda a: a["profileId"] == "java-coder")
    assert set(listed(viewer_client, q="echo-m")) == {"echo-mock"}  # name
    assert listed(viewer_client, q="nothing-like-this") == []


@pytest.mark.parametrize("param, field, value", [
    ("mode", "executionMode", "tool_calling"), ("mode", "executionMode", "responses_as_code"),
    ("language", "programLanguage", "python"), ("language", "programLanguage", "rust"),
    ("docViewTypes", "docViewTypes", "return"), ("docViewTypes", "docViewTypes", "none"),
    ("model", "modelId", "vendor/big"), ("model", "modelId", "vendor/small"),
    ("profile", "profileId", "writer"), ("profile", "profileId", "reviewer"),
])
def test_each_agent_level_filter_matches_the_reports(viewer_client, corpus, param, field, value):
    expected = having(corpus, lambda a: a[field] == value)
    assert expected  # the corpus exercises the filter
    assert set(listed(viewer_client, **{param: value})) == expected


def test_run_level_filters(viewer_client, corpus):
    reports = {name: build_report(run)["run"] for name, run in corpus.items()}
    assert set(listed(viewer_client, source="engine")) == {"pages-run"}
    assert set(listed(viewer_client, source="import")) == {"multi-lang", "echo-mock"}
    for flag, count in (("divergences", "divergences"), ("refusals", "refused")):
        some = {n for n, r in reports.items() if r["counts"][count]}
        assert some and some != set(corpus), flag
        assert set(listed(viewer_client, **{flag: "yes"})) == some
        assert set(listed(viewer_client, **{flag: "no"})) == set(corpus) - some
    completed = {n for n, r in reports.items() if r["status"] == "completed"}
    assert set(listed(viewer_client, status="completed")) == completed
    services.run_set_status(corpus["echo-mock"], Run.Status.INTERRUPTED)
    assert listed(viewer_client, status="interrupted") == ["echo-mock"]
    # Combined: AND across filters.
    assert set(listed(viewer_client, source="import", language="python")) == {"multi-lang"}


def test_stale_is_a_running_run_nothing_wrote_to_for_a_while_as_its_header_says(viewer_client, corpus, settings):
    settings.RUN_STALE_SECONDS = 600
    run = corpus["multi-lang"]
    services.run_set_status(run, Run.Status.RUNNING, ended_at=None)  # a stream that stopped without session_ended
    assert listed(viewer_client, status="stale") == []
    RunFacts.objects.filter(run=run).update(last_event_at=timezone.now() - timedelta(seconds=599))
    assert listed(viewer_client, status="stale") == [] and "multi-lang" in listed(viewer_client, status="running")
    since = timezone.now() - timedelta(hours=1)
    RunFacts.objects.filter(run=run).update(last_event_at=since)
    assert listed(viewer_client, status="stale") == ["multi-lang"]
    assert "multi-lang" not in listed(viewer_client, status="running")  # the badge says stale, not running
    html = viewer_client.get(reverse("runs:list"), {"status": "stale"}).content.decode()
    row = html.split('data-run="multi-lang"')[1].split("</tr>")[0]
    assert ">stale</span>" in row and f"nothing received since {since:%Y-%m-%d %H:%M:%S} UTC" in row
    assert ">running</span>" not in row
    # The run's own header reads the same (its last record's arrival is the facts' stamp).
    Event.objects.filter(run=run).update(received_at=since)
    header = viewer_client.get(reverse("runs:header", args=[run.pk])).content.decode()
    assert ">stale</span>" in header and f"nothing received since {since:%Y-%m-%d %H:%M:%S} UTC" in header
    # So does a comparison, on its page and in its JSON (whose status is the stored one still).
    page = viewer_client.get(reverse("runs:compare"), {"a": run.pk, "b": run.pk}).content.decode()
    assert all(">stale</span>" in page.split(f'id="side-{side}"')[1].split("</td>")[0] for side in "ab")
    compared = viewer_client.get(reverse("runs:api_compare"), {"a": run.pk, "b": corpus["echo-mock"].pk}).json()
    assert (compared["a"]["state"], compared["a"]["status"]) == ("stale", "running")
    assert compared["b"]["state"] == compared["b"]["status"] == corpus["echo-mock"].status
    # A queued run reads queued in its header however long it waits (no session_started yet), and
    # in the list; the filter takes running runs only. A run that ended is never stale.
    queued = Run.objects.create(name="queued-long-ago", status=Run.Status.QUEUED)
    Run.objects.filter(pk=queued.pk).update(created_at=timezone.now() - timedelta(hours=2))
    services.run_set_status(corpus["echo-mock"], Run.Status.COMPLETED)
    assert listed(viewer_client, status="stale") == ["multi-lang"]


def test_started_between(viewer_client, corpus):
    day = {name: run.started_at.date() for name, run in corpus.items()}
    for name, d in day.items():
        expected = {n for n, other in day.items() if other == d}
        assert set(listed(viewer_client, **{"from": d.isoformat(), "to": d.isoformat()})) == expected
    first = min(day.values())
    assert set(listed(viewer_client, to=(first - timedelta(days=1)).isoformat())) == set()
    response = viewer_client.get(reverse("runs:list"), {"from": "yesterday"})
    assert "is not a date" in response.content.decode() and len(rows(response.content, "data-run")) == 3


def test_sort_by_every_column_both_ways(viewer_client, corpus):
    reports = {name: build_report(run)["run"] for name, run in corpus.items()}
    keys = {"turns": lambda r: r["counts"]["turns"], "agents": lambda r: r["counts"]["agents"],
            "calls": lambda r: r["counts"]["calls"], "errors": lambda r: r["counts"]["errorTurns"],
            "refusals": lambda r: r["counts"]["refused"], "divergences": lambda r: r["counts"]["divergences"],
            "cost": lambda r: r["usage"]["cost"].get("comparable") or -1,
            "name": lambda r: r["name"], "duration": lambda r: r["durationSeconds"] or -1}
    for column in COLUMNS:
        for sign in ("", "-"):
            names = listed(viewer_client, sort=sign + column)
            assert sorted(names) == sorted(corpus), column
            if column in keys:
                values = [keys[column](reports[n]) for n in names]
                assert values == sorted(values, reverse=bool(sign)), (column, sign, names)


def test_the_list_shows_tokens_cost_and_duration(viewer_client, corpus):
    html = viewer_client.get(reverse("runs:list"), {"q": "multi-lang"}).content.decode()
    report = build_report(corpus["multi-lang"])["run"]
    assert "$0.0425" in html and report["usage"]["cost"]["comparable"] == pytest.approx(0.0425)
    facts = RunFacts.objects.get(run=corpus["multi-lang"])
    tokens = report["usage"]["tokens"]
    # all four classes, reasoning included, as gg's header adds them
    assert facts.total_tokens == tokens["uncachedInput"] + tokens["cachedInput"] + tokens["output"] + tokens["reasoning"]
    assert facts.duration_seconds == report["durationSeconds"]


def test_the_list_reads_no_per_agent_facts(viewer_client, corpus):
    """Its columns are the facts' figures: the maps keyed by agent (~150 KB a run of 8,000 agents, decoded
    for each of a page's runs) are not read, and the figures beside them still are."""
    with CaptureQueriesContext(connection) as ctx:
        html = viewer_client.get(reverse("runs:list"), {"q": "multi-lang"}).content.decode()
    read = " ".join(q["sql"] for q in ctx.captured_queries)
    assert "total_tokens" in read and "$0.0425" in html
    assert not any(field in read for field in ("peak_context", "refusals_by_agent", '"runs_runfacts"."agents"'))


def test_keyset_pages_walk_every_run_once_with_bounded_queries(viewer_client):
    Run.objects.bulk_create([Run(name=f"run-{i:03d}", turn_count=i % 7) for i in range(120)])
    run_facts.catch_up()
    seen, url, counts = [], reverse("runs:list") + "?sort=-turns", []
    while url:
        with CaptureQueriesContext(connection) as ctx:
            response = viewer_client.get(url)
        counts.append(len(ctx.captured_queries))
        seen += [n for n, _ in rows(response.content, "data-run")]
        nxt = [a for a in response.content.decode().split('href="') if 'rel="next"' in a.split(">")[0]]
        url = ("/" + nxt[0].split('"')[0].replace("&amp;", "&")) if nxt else None
    assert sorted(seen) == sorted(f"run-{i:03d}" for i in range(120)) and len(seen) == 120
    turns = dict(Run.objects.values_list("name", "turn_count"))
    assert [turns[n] for n in seen] == sorted(turns.values(), reverse=True)
    # session, user, the count, the page, the saved views, the deletions going, the permissions (2).
    assert len(counts) == 3 and max(counts) <= 8 and len(set(counts)) == 1


def test_a_forged_cursor_shows_the_first_page_with_a_message(viewer_client, corpus):
    response = viewer_client.get(reverse("runs:list"), {"after": "not-a-cursor"})
    assert "not one this list made" in response.content.decode()
    assert len(rows(response.content, "data-run")) == 3


def test_previous_page_link_returns_the_page_before(viewer_client):
    Run.objects.bulk_create([Run(name=f"r-{i:03d}") for i in range(110)])
    first = viewer_client.get(reverse("runs:list"))
    first_names = [n for n, _ in rows(first.content, "data-run")]
    html = first.content.decode()
    after = html.split('rel="next"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    second = viewer_client.get("/" + after.lstrip("/"))
    html2 = second.content.decode()
    before = html2.split('rel="prev"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    back = viewer_client.get("/" + before.lstrip("/"))
    assert [n for n, _ in rows(back.content, "data-run")] == first_names


def test_a_fault_folding_the_facts_costs_the_chunk_nothing(monkeypatch, caplog):
    from runs.ingest import writer as ingest

    def broken(agents, refusals, held=None):
        raise TypeError("a shape nothing foresaw")
    monkeypatch.setattr(run_facts, "agent_sums", broken)
    run = Run.objects.create(name="odd")
    assert ingest.append_lines(run, (STREAMS / "pages_run.ndjson").read_bytes().splitlines()).stored == 120
    assert run.events.count() == 120 and "facts could not be folded" in caplog.text
    assert run_facts.behind().filter(pk=run.pk).exists()
    monkeypatch.undo()
    assert run_facts.catch_up() == 1 and not run_facts.behind().exists()


def test_refresh_facts_folds_the_runs_stored_before_the_table():
    import io

    from django.core.management import call_command

    run, _ = import_stream(STREAMS / "pages_run.ndjson", "older")
    want = RunFacts.objects.get(run=run)
    RunFacts.objects.all().delete()
    out = io.StringIO()
    call_command("refresh_facts", stdout=out)
    assert "refreshed the facts of 1 run(s)" in out.getvalue()
    got = RunFacts.objects.get(run=run)
    for field in ("search", "languages", "divergences", "refusals", "refusals_by_agent", "peak_context", "agents",
                  "total_tokens", "cost", "duration_seconds", "failed_calls", "seq"):
        assert getattr(got, field) == getattr(want, field), field
    call_command("refresh_facts", "--all", stdout=out)
    assert "refreshed the facts of 1 run(s)" in out.getvalue().splitlines()[-1]


@pytest.mark.django_db(transaction=True)
def test_migrating_a_database_from_before_run_facts_folds_them_without_a_command():
    from django.core.management import call_command

    run, _ = import_stream(STREAMS / "pages_run.ndjson", "older")
    fields = ("search", "languages", "divergences", "refusals", "refusals_by_agent", "peak_context", "agents",
              "total_tokens", "cost", "duration_seconds", "failed_calls", "seq")
    want = RunFacts.objects.filter(run=run).values(*fields).get()
    call_command("migrate", "runs", "0004", verbosity=0)  # the schema before RunFacts (0005)
    call_command("migrate", "runs", "0005", verbosity=0)  # short of the latest: nothing folded yet
    assert not RunFacts.objects.exists()
    call_command("migrate", verbosity=0)
    assert not run_facts.behind().exists()
    # The schema before the fold's newer projections: the run reads as an older fold's until it is
    # rebuilt, and its facts are folded from what it holds (no refusal roster yet), then refolded.
    run.refresh_from_db()
    assert run.stale
    assert RunFacts.objects.filter(run=run).values_list("refusals", flat=True).get() == 0 < want["refusals"]
    call_command("rebuild_projections", stale=True, verbosity=0)
    assert RunFacts.objects.filter(run=run).values(*fields).get() == want


def test_the_words_beside_the_title_say_which_they_are(viewer_client):
    """Two bare "?" beside "Runs" led to two glossary entries with nothing to say which was which."""
    html = viewer_client.get(reverse("runs:list")).content.decode()
    assert html.count('<span class="term-named">') == 2
    assert '<span class="term-named">divergence<a class="term" href="/glossary/#divergence"' in html
