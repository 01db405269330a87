"""Records are untrusted: a known type in a shape gg never writes (an array where an object goes, a
number where a list goes, ...) is stored like any other, and every run page and the report still
answer — a malformed record must neither fail the write path nor take a page down."""

import pytest
from django.urls import reverse

from runs.ingest import writer as ingest
from runs.models import Run
from runs.stream.record import whole_number

pytestmark = pytest.mark.django_db

ODD = [[1], {"a": 1}, None, 3, "x", True, [], ""]
PAGES = [("detail", ()), ("agents", ()), ("agent", ("root",)), ("agent", ("s1",)), ("stores", ()),
         ("divergences", ()), ("refusals", ()), ("arms", ()), ("api_report", ()), ("turn", ("root", 1)),
         ("conversation", ("root",)), ("timeline", ())]


def odd_stream(odd):
    """One run's records with `odd` standing in every field the fold or a page reads."""
    return [
        {"type": "session_started", "capabilitySet": {
            "agents": [odd, {"slug": odd, "capabilities": odd},
                       {"slug": "p", "capabilities": [odd, {"id": "memories", "params": odd}]}],
            "limits": odd}},
        {"type": "agent_spawned", "agentId": "root", "profileId": "p", "depth": odd, "brief": odd},
        {"type": "agent_modules", "agentId": "root", "modules": [
            odd, {"kind": odd, "moduleId": odd, "enabled": True, "origin": odd, "scope": odd},
            {"kind": "memories", "moduleId": "memories-0", "enabled": True, "origin": "created", "scope": "inherited"}]},
        {"type": "agent_modules", "agentId": "s0", "modules": odd},
        {"type": "agent_surface", "agentId": "root", "executionMode": odd, "tools": [odd, "finish"],
         "apis": [odd, {"module": odd, "path": odd, "functions": [odd, {"name": odd, "operation": odd}]},
                  {"module": "files", "path": "gg.files", "functions": odd}],
         "programLanguage": odd, "docViewTypes": odd, "withheld": [odd]},
        {"type": "agent_surface", "agentId": "s0", "tools": odd, "apis": odd, "withheld": odd},
        {"type": "turn_started", "agentId": "root"},
        {"type": "api_call", "agentId": "root", "operation": odd},
        {"type": "api_result", "agentId": "root", "operation": odd, "ok": False, "failure": odd},
        {"type": "api_call", "agentId": "root", "operation": "shell.shell"},
        {"type": "api_result", "agentId": "root", "operation": "shell.shell", "ok": False, "failure": "unavailable"},
        {"type": "log", "agentId": "root", "level": "warn",
         "message": f"the program's `{odd}` call was refused before it ran: {odd}"},
        {"type": "log", "agentId": "root", "level": "warn", "message": odd},
        {"type": "tool_call", "agentId": "root", "name": odd},
        {"type": "tool_result", "agentId": "root", "name": odd, "ok": False, "failure": odd},
        {"type": "code_execution", "agentId": "root", "ok": odd, "logs": odd, "error": odd, "finished": odd,
         "logsSuppressed": odd, "apiCalls": odd},
        {"type": "context_breakdown", "agentId": "root", "bySource": odd, "totalTokens": odd, "windowLimit": odd},
        {"type": "context_breakdown", "agentId": "root", "bySource": [odd, {"source": odd, "tokens": 5}]},
        {"type": "memory_state", "agentId": "root", "moduleId": "memories-0", "memories": odd, "count": odd},
        {"type": "tasks_state", "agentId": "root", "moduleId": odd, "tasks": [odd]},
        {"type": "tasks_state", "agentId": "root", "moduleId": "tasks-0", "tasks": odd},
        {"type": "board_state", "agentId": "root", "moduleId": "board-0", "epics": odd, "issues": [odd]},
        {"type": "skills_state", "agentId": "root", "moduleId": "skills-0", "skills": odd},
        {"type": "archive_state", "agentId": "root", "moduleId": "archive-0", "entries": [odd]},
        {"type": "agent_transition", "agentId": "root", "kind": odd, "toAgentId": "s1", "state": odd,
         "modules": [odd, {"kind": odd, "disposition": "carried", "fromModuleId": odd, "toModuleId": "memories-9"}]},
        {"type": "agent_transition", "agentId": "root", "kind": "exec", "toAgentId": "s2", "modules": odd},
        {"type": "agent_spawned", "agentId": "s1", "parentAgentId": odd, "profileId": odd},
        {"type": "fsm_state", "agentId": "s1", "fsmId": odd, "state": odd},
        {"type": "context_message", "agentId": "root", "id": odd, "role": odd, "content": odd, "tokens": odd,
         "toolCalls": [odd, {"name": "submit_program", "args": odd}, {"name": "submit_program", "args": {"program": odd}}]},
        {"type": "context_message", "agentId": "root", "id": "m1", "toolCalls": odd},
        {"type": "prompt", "agentId": "root", "request": [odd, {"id": odd, "source": odd}], "responseId": odd,
         "tokens": odd, "durationMs": odd, "totalTokens": odd, "finishReason": odd},
        {"type": "prompt", "agentId": "root", "request": odd, "responseId": "m1"},
        {"type": "shell", "agentId": "root", "command": odd, "exitCode": odd, "cwd": odd, "stdout": odd, "stderr": odd,
         "origin": odd},
        {"type": "turn_timing", "agentId": "root", "promptMs": odd, "requestMs": odd, "responseMs": odd},
        {"type": "turn_outcome", "agentId": "root", "outcome": "error", "error": odd, "errorType": odd},
        {"type": "usage", "agentId": "root", "tokens": odd, "cost": odd, "profileId": odd},
        {"type": "slot_usage", "profileId": odd, "tokens": odd, "cost": odd},
        {"type": "agent_status", "agentId": "root", "status": odd, "timestamp": odd},
        {"type": "session_summary", "summary": odd},
        {"type": "session_ended", "status": odd, "timestamp": odd},
    ]


@pytest.mark.parametrize("odd", ODD, ids=[repr(v) for v in ODD])
def test_odd_shapes_are_stored_and_every_page_answers(viewer_client, odd):
    run = Run.objects.create(name="odd")
    records = odd_stream(odd)
    result = ingest.append(run, records)
    assert (result.stored, result.rejected) == (len(records), 0)
    for name, args in PAGES:
        response = viewer_client.get(reverse(f"runs:{name}", args=(run.pk, *args)))
        assert response.status_code == 200, (name, args)
    for seq in range(1, len(records) + 1):  # every record's own page
        assert viewer_client.get(reverse("runs:event", args=(run.pk, seq))).status_code == 200, seq


def test_figures_past_a_floats_range_print_as_they_are():
    # PostgreSQL's jsonb hands 1e308 back as a 309-digit integer: the filters must not overflow on it
    from runs.templatetags.runs_extras import tokens, usd

    huge = 10**400
    assert tokens(huge) == str(huge) and usd(huge) == str(huge)
    assert tokens(12345) == "12.3k" and usd(0.0063) == "$0.0063"


@pytest.mark.parametrize("huge", [1e308, 10**400], ids=["1e308", "10**400"])
def test_usage_near_a_floats_limit_leaves_every_page_answering(viewer_client, huge):
    """A token holder's usage of 1e308 tokens twice: the Agents tab's shares overflowed (a 500)."""
    run = Run.objects.create(name="huge")
    usage = {"uncachedInput": huge, "cachedInput": huge, "output": huge, "reasoning": huge}
    records = [{"type": "agent_spawned", "agentId": "root", "profileId": "p"},
               {"type": "agent_spawned", "agentId": "s1", "profileId": "p", "parentId": "root"},
               {"type": "turn_started", "agentId": "root"},
               {"type": "usage", "agentId": "root", "tokens": usage, "cost": huge},
               {"type": "usage", "agentId": "root", "tokens": usage, "cost": huge},
               # Peaks of 1e308 in two agents: their mean and the chart's scale overflowed (a 500).
               *({"type": "context_breakdown", "agentId": agent, "totalTokens": huge,
                  "bySource": [{"source": "band", "tokens": huge}]} for agent in ("root", "s1"))]
    ingest.append(run, records)
    for name, args in PAGES:
        assert viewer_client.get(reverse(f"runs:{name}", args=(run.pk, *args))).status_code == 200, (name, args)


def test_stream_keys_named_like_a_dicts_methods_leave_every_page_answering(viewer_client):
    """An operation, a model or a limit named "items": the template's `d.items` read that key rather than
    the method (a 500 on the Overview, and on the Analysis for every user while the run matched)."""
    run = Run.objects.create(name="items", source=Run.Source.ENGINE)
    records = [{"type": "session_started", "capabilitySet": {"limits": {"items": 3, "keys": 2}}},
               {"type": "agent_spawned", "agentId": "root", "profileId": "p"},
               {"type": "agent_spawned", "agentId": "s1", "profileId": "p", "parentId": "root"},
               {"type": "turn_started", "agentId": "root"},
               {"type": "api_call", "agentId": "root", "operation": "items"},
               {"type": "api_result", "agentId": "root", "operation": "items", "ok": False, "failure": "items"},
               {"type": "usage", "agentId": "root", "modelId": "items", "tokens": {"output": 10}},
               {"type": "turn_timing", "agentId": "root", "modelMs": 100}]
    ingest.append(run, records)
    for name, args in PAGES:
        assert viewer_client.get(reverse(f"runs:{name}", args=(run.pk, *args))).status_code == 200, (name, args)
    analysis = viewer_client.get(reverse("runs:analysis"), {"source": "engine", "group": "arm"})
    assert analysis.status_code == 200 and 'data-operation="items"' in analysis.content.decode()


AGENT_IDS = ["a\nb", "a b", "a/b", "a?b#c", "a%2Fb", "x\r", "é☃", "<s>"]


def test_agent_ids_of_any_text_list_on_every_page_and_link_where_a_url_can_carry_them(viewer_client):
    run = Run.objects.create(name="ids")
    records = []
    for agent in AGENT_IDS:
        records += [
            {"type": "agent_spawned", "agentId": agent, "parentAgentId": "root"},
            {"type": "agent_modules", "agentId": agent, "modules": [
                {"kind": "memories", "moduleId": f"m-{agent}", "enabled": True, "origin": "created", "scope": "inherited"}]},
            {"type": "api_call", "agentId": agent, "operation": "shell.shell"},
            {"type": "api_result", "agentId": agent, "operation": "shell.shell", "ok": False, "failure": "unavailable"},
        ]
    ingest.append(run, records)
    for name in ("agents", "stores", "divergences", "refusals", "arms", "timeline"):
        response = viewer_client.get(reverse(f"runs:{name}", args=[run.pk]))
        assert response.status_code == 200, name  # a line break in one id took each of these down
    roster = viewer_client.get(reverse("runs:agents", args=[run.pk])).content.decode()
    assert "<code>&lt;s&gt;</code>" in roster and "<s>" not in roster
    assert '<code title="no link: no URL can carry this id">a\nb</code>' in roster
    for agent in AGENT_IDS[1:]:
        url = reverse("runs:agent", args=[run.pk, agent])
        assert f'href="{url}"' in roster
        assert viewer_client.get(url).status_code == 200, agent
    for seq in range(1, len(records) + 1):
        assert viewer_client.get(reverse("runs:event", args=(run.pk, seq))).status_code == 200, seq


UNLINKABLE = [".", "..", "a/../b", "./x", "x/.", "x/turns/3", "x/conversation", "a\nb", "\ud800"]
LINKABLE = ["root", "a/b", "...", ".x", "x.", "a%2e", "turns", "x/turns", "x\r", "a?b#c"]


def test_one_rule_decides_which_agent_ids_a_link_can_carry():
    from runs.access import agent_linkable, agent_url, turn_url

    for agent in UNLINKABLE + ["", None, 5, ["a"]]:
        assert not agent_linkable(agent) and agent_url(1, agent) == "" and turn_url(1, agent, 2) == "", repr(agent)
    for agent in LINKABLE:
        assert agent_linkable(agent), repr(agent)
        assert agent_url(7, agent) == reverse("runs:agent", args=(7, agent))
        assert turn_url(7, agent, 2) == reverse("runs:turn", args=(7, agent, 2))
        assert turn_url(7, agent, 0) == turn_url(7, agent, None) == turn_url(7, agent, "x") == ""


def test_dot_segment_agent_ids_get_no_link_the_browser_would_rewrite(viewer_client):
    from runs.access import agent_url

    run = Run.objects.create(name="dots")
    ids = [i for i in UNLINKABLE if i != "\ud800"] + ["root", "x"]
    records = [{"type": "session_started", "capabilitySet": {"agents": [{"slug": "p"}]}}]
    for agent in ids:
        records += [
            {"type": "agent_spawned", "agentId": agent, "parentAgentId": "root", "profileId": "p"},
            {"type": "turn_started", "agentId": agent},
            {"type": "api_call", "agentId": agent, "operation": "files.read_file", "args": {"path": "a"}},
            {"type": "api_result", "agentId": agent, "operation": "files.read_file", "ok": True},
        ]
    assert ingest.append(run, records).stored == len(records)
    pages = {name: viewer_client.get(reverse(f"runs:{name}", args=[run.pk])) for name in
             ("agents", "stores", "divergences", "refusals", "arms", "timeline", "feed_rows", "detail")}
    assert {name: r.status_code for name, r in pages.items()} == dict.fromkeys(pages, 200)
    text = "".join(r.content.decode() for r in pages.values())
    base = reverse("runs:agents", args=[run.pk])
    for agent in ids[:-2]:
        assert agent_url(run.pk, agent) == ""
        for href in (f'{base}{agent}/"', f'{base}{agent}/turns/1/"'):
            assert href not in text and href.replace("/", "\\/") not in text, (agent, href)
    assert f'href="{base}root/"' in pages["agents"].content.decode()
    assert f'{base}x/turns/1/' in pages["feed_rows"].content.decode()  # a linkable id keeps its turn link
    for seq in range(1, len(records) + 1):
        assert viewer_client.get(reverse("runs:event", args=(run.pk, seq))).status_code == 200, seq


def test_a_band_named_like_markup_stays_text_in_the_agent_pages_charts(viewer_client):
    # The context and timing charts are built as markup in Python (runs/templatetags): every value
    # from the stream is escaped there.
    run = Run.objects.create(name="bands")
    ingest.append(run, [
        {"type": "turn_started", "agentId": "root"},
        {"type": "context_breakdown", "agentId": "root", "totalTokens": 30, "windowLimit": 100,
         "bySource": [{"source": "<img src=x onerror=alert(1)>", "tokens": 20}, {"source": "system", "tokens": 10}]},
        {"type": "turn_timing", "agentId": "root", "promptMs": 5, "requestMs": 20, "responseMs": 1},
    ])
    html = viewer_client.get(reverse("runs:agent", args=(run.pk, "root"))).content.decode()
    assert "<img src=x" not in html
    assert 'data-band="&lt;img src=x onerror=alert(1)&gt;"' in html
    assert "turn 1: 30 tokens of 100\nsystem 10\n&lt;img src=x onerror=alert(1)&gt; 20</title>" in html
    assert "turn 1: 26 ms\nprompt 5.0 ms\nrequest 20 ms\nresponse 1.0 ms</title>" in html


def test_a_carried_pointer_named_like_markup_stays_text_on_the_conversation_page(viewer_client):
    # The carried pointers' list items are built in Python (runs/templatetags/run_pages.carried_items).
    run = Run.objects.create(name="carried")
    ingest.append(run, [{"type": "turn_started", "agentId": "root"},
                        {"type": "prompt", "agentId": "root", "request": [{"id": "<img src=x>", "source": "<b>band"}]}])
    html = viewer_client.get(reverse("runs:conversation", args=(run.pk, "root"))).content.decode()
    assert "<img src=x" not in html and "<b>band" not in html
    assert '<li><span class="tag">&lt;b&gt;band</span> <code>&lt;img src=x&gt;</code></li>' in html


def test_a_number_is_ascii_digits_that_fit_a_column_or_nothing():
    assert [whole_number(t) for t in ("0", "42", str(2**63 - 1))] == [0, 42, 2**63 - 1]
    for text in ("", " 1", "-1", "+1", "1_000", "1.0", "²", "٣", "１", str(2**63), "9" * 5000, None, 7):
        assert whole_number(text) is None, text


# Not digits `int` reads ("²" passes str.isdigit), past what `int` reads at all (5,000 digits), past
# a 64-bit column: each an id, page or index somebody could type in an address or a form.
NOT_NUMBERS = ["²", "9" * 5000, "9" * 30]


@pytest.mark.parametrize("text", NOT_NUMBERS, ids=["superscript", "5000 digits", "past 64 bits"])
def test_a_number_in_an_address_that_is_none_answers_as_unknown_never_a_500(operator_client, text):
    run = Run.objects.create(name="numbers")
    # A store id the stream chose, ending in what looks like a number: the Stores page sorts by it.
    ingest.append(run, [{"type": "session_started"}, {"type": "agent_spawned", "agentId": "root"},
                        {"type": "agent_modules", "agentId": "root", "modules": [
                            {"kind": "memories", "moduleId": f"memories-{text}", "enabled": True, "origin": "created"},
                            {"kind": "memories", "moduleId": "memories-2", "enabled": True, "origin": "created"}]}])
    answers = {
        "new from a configuration": operator_client.get(reverse("runs:new") + f"?configuration={text}"),
        "an agent's earlier programs": operator_client.get(reverse("runs:agent", args=(run.pk, "root"))
                                                           + f"?programs_before={text}"),
        "a page of stores": operator_client.get(reverse("runs:stores", args=(run.pk,)) + f"?page={text}"),
        "a page of a store's revisions": operator_client.get(
            reverse("runs:store", args=(run.pk, "memories-2")) + f"?page={text}"),
        "the report by run id": operator_client.get(reverse("runs:api_report", args=(text,))),
        "compare by run id": operator_client.get(reverse("runs:compare") + f"?a={text}&b={run.pk}"),
        "the runs selected": operator_client.post(reverse("runs:selected"), {"run": [text], "action": "compare"}),
        "a profile removed by index": operator_client.post(reverse("runs:new"), {"action": f"remove-profile:{text}"}),
    }
    assert {what: r.status_code for what, r in answers.items()} == {
        "new from a configuration": 404, "an agent's earlier programs": 200, "a page of stores": 200,
        "a page of a store's revisions": 200, "the report by run id": 404, "compare by run id": 404,
        "the runs selected": 302, "a profile removed by index": 200}
    assert "No saved configuration" in answers["new from a configuration"].content.decode()
    stores = answers["a page of stores"].content.decode()
    # The id that only looks numbered sorts after the numbered one.
    assert stores.index("memories-2") < stores.index(f"memories-{text[:20]}")
