import pytest
from django.test import Client
from django.urls import reverse

from runs.ingest.writer import append
from runs.models import Run

pytestmark = pytest.mark.django_db


def test_feed_page_needs_a_login(client):
    run = Run.objects.create(name="page")
    response = client.get(reverse("runs:feed", args=[run.pk]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_feed_page_carries_its_filter_to_the_socket_and_the_pages_of_rows(viewer_client):
    run = Run.objects.create(name="page")
    append(run, [{"agentId": "root", "type": "turn_started"}, {"agentId": "agent-1", "type": "turn_started"}])
    response = viewer_client.get(reverse("runs:feed", args=[run.pk]) + "?agent=agent-1&failed=1&q=a+%3Cb%3E&kind=nope")
    html = response.content.decode()
    assert response.status_code == 200
    assert f'data-socket="/ws/runs/{run.pk}/feed/?agent=agent-1&amp;failed=1&amp;q=a+%3Cb%3E"' in html
    assert f'data-rows-url="/runs/{run.pk}/feed/rows?agent=agent-1&amp;failed=1&amp;q=a+%3Cb%3E"' in html
    assert '<option value="agent-1" selected>agent-1</option>' in html
    assert 'value="a &lt;b&gt;"' in html and 'name="failed" value="1" checked' in html
    assert 'aria-current="page">Feed</a>' in html
    # The run failed nothing: no class to offer yet (the list is there for a live run's first).
    assert 'title="a failed result\'s class; unclassified: it named none" hidden>Failure class' in html
    assert 'id="feed-rows" class="feed-rows" aria-live="polite"></div>' in html  # the script fills it


def test_the_feed_offers_the_failure_classes_the_run_counted(viewer_client):
    run = Run.objects.create(name="failing")
    append(run, [{"type": "tool_result", "name": "shell", "ok": False, "failure": "timeout"},
                 {"type": "api_result", "operation": "files.read_file", "ok": False}])
    html = viewer_client.get(reverse("runs:feed", args=[run.pk]) + "?failure=%3Cb%3E").content.decode()
    offered = html[html.index('id="feed-failure"'):html.index("</select>", html.index('id="feed-failure"'))]
    assert 'value="&lt;b&gt;" selected' in offered  # as the URL asked for it, escaped
    assert [v for v in ("timeout", "unclassified") if f'<option value="{v}">' in offered] == ["timeout", "unclassified"]
    assert f'data-socket="/ws/runs/{run.pk}/feed/?failure=%3Cb%3E"' in html


def test_a_run_of_more_agents_than_a_list_holds_takes_a_typed_agent_id(viewer_client):
    """Past AGENTS_LISTED the agent filter is a text field (a select of 12,983 options was 615 KB of
    the page), and a typed id filters as a chosen one did."""
    from runs.feed.views import AGENTS_LISTED

    run = Run.objects.create(name="crowd")
    append(run, [{"agentId": f"a{i}", "type": "turn_started"} for i in range(AGENTS_LISTED)])
    listed = viewer_client.get(reverse("runs:feed", args=[run.pk])).content.decode()
    assert '<select id="feed-agent" name="agent">' in listed and listed.count("<option value=\"a") == AGENTS_LISTED
    append(run, [{"agentId": "one-too-many", "type": "turn_started"}])
    html = viewer_client.get(reverse("runs:feed", args=[run.pk]) + "?agent=a7").content.decode()
    assert '<input id="feed-agent" name="agent" value="a7"' in html and 'title="501 agents: too many to list' in html
    assert '<option value="a' not in html and len(html) < 40_000
    assert f'data-rows-url="/runs/{run.pk}/feed/rows?agent=a7"' in html


def test_unknown_run_is_404(viewer_client):
    assert viewer_client.get(reverse("runs:feed", args=[424242])).status_code == 404


def test_the_controls_follow_the_run_as_it_grows(viewer_client):
    """A live run's page reads its controls again as the run moves (feed.js): agents, operations and
    failure classes that arrived after it opened, and the footer's counts."""
    run = Run.objects.create(name="growing")
    url = reverse("runs:feed_controls", args=[run.pk]) + "?agent=a%3Cb"
    assert Client().get(url).status_code == 302  # a login first
    before = viewer_client.get(url).content.decode()
    assert "of the run's 0 stored records" in before and '<option value="any-agent' not in before
    append(run, [{"agentId": "<b>new</b>", "type": "turn_started"},
                 {"agentId": "<b>new</b>", "type": "tool_call", "name": "shell", "args": {}},
                 {"agentId": "<b>new</b>", "type": "tool_result", "name": "shell", "ok": False, "failure": "timeout"}])
    html = viewer_client.get(url).content.decode()
    assert '<option value="&lt;b&gt;new&lt;/b&gt;">&lt;b&gt;new&lt;/b&gt;</option>' in html
    assert '<datalist id="feed-ops"><option value="shell"></datalist>' in html
    assert '<option value="timeout">timeout</option>' in html
    assert "Rows stand for at most 3 of the run's 3 stored records." in html
    assert "<b>" not in html
