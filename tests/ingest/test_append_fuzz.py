"""A fuzz of the write path (issue 19): `append_lines` over arbitrary bytes and arbitrary JSON — deep
nesting on both sides of the depth limit, lone surrogates (escaped and raw), a `type` of every JSON
kind, numbers past a double and past 64 bits, NaN/Infinity, and a value of any type at every field
the fold and the pages read, at any level. Every line ends stored or rejected (never an exception),
and every page of the run answers 200 afterwards."""

import json

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from runs.access import turn_url
from runs.ingest import writer as ingest
from runs.models import Event, RejectedLine
from runs.stream.record import MAX_DEPTH
from runs.stream.vocabulary import GG_TYPES
from tests.ingest_helpers import new_run, page_statuses

pytestmark = pytest.mark.django_db

# Fields the fold, the feed and the pages read from records (and from the objects inside them).
FIELDS = sorted(set("""
agentId parentAgentId toAgentId fromModuleId toModuleId moduleId profileId modelId modelSlot slot depth brief
cwd worktree type event timestamp sessionId status outcome error errorType failure ok operation name tool
args output text message level logs logsSuppressed apiCalls durationMs requestMs phases timing turn tokens
usage cost slotCosts capabilitySet agents slug capabilities params limits maxRuntimeSecs provider task modules
kind enabled origin scope ownership writable apis tools withheld functions function object module path
programLanguage language summary memories items issues epics issueId epicId title state blockedBy
assignedAgentId retries rounds reviewer disposition merged conflicts waitingOn transition action retained
reclaimedTokens beforeTokens afterTokens window windowLimit fsm fsmId machine from to label key value
code source exitCode stdout stderr reason detail refused healing executionMode shell responseId role
content messages sections total totals breakdown bands""".split()))

SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d"]
BIG = [10**400, -(10**400), 2**63, 2**64, -(2**63) - 1, 1e308, 5e-324, float("inf"), float("-inf"), float("nan")]
odd_text = st.text(alphabet=st.one_of(st.characters(), st.sampled_from(SURROGATES + ["\x00", "\n", "/", "."])),
                   max_size=12)
leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.sampled_from(BIG), st.floats(), odd_text,
                   st.sampled_from(sorted(GG_TYPES)), st.sampled_from([".", "..", "root", "", "x/turns/3"]))


def _deep(args):
    value, depth, as_object = args
    for _ in range(depth):
        value = {"x": value} if as_object else [value]
    return value


deep_values = st.tuples(leaves, st.sampled_from([MAX_DEPTH - 3, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 400]),
                        st.booleans()).map(_deep)
json_values = st.recursive(
    st.one_of(leaves, deep_values),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELDS) | odd_text, inner, max_size=4),
    max_leaves=10,
)
types = st.one_of(st.sampled_from(sorted(GG_TYPES) + ["gg", "new_kind"]), json_values)
AGENT_IDS = ["root", "agent-1", ".", "..", "x/turns/3", "a\nb", "<s>"]
fields = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=6)
# a gg type from a known agent (so agents, turns and their pages pile up), or anything at all
flat_records = st.one_of(
    st.builds(lambda t, agent, fields: {**fields, "type": t, "agentId": agent},
              st.sampled_from(sorted(GG_TYPES)), st.sampled_from(AGENT_IDS), fields),
    st.builds(lambda t, fields: {**fields, "type": t}, types, fields),
)
records = st.recursive(
    flat_records,
    lambda inner: st.builds(lambda event: {"type": "gg", "event": event}, inner),  # host-wrapped
    max_leaves=2,
)


def _encode(args) -> bytes:
    value, ascii_only = args
    text = json.dumps(value, ensure_ascii=ascii_only)  # ensure_ascii=False: a raw lone surrogate
    return text.encode("utf-8", errors="surrogatepass").replace(b"\n", b" ")


lines = st.one_of(
    st.tuples(records, st.booleans()).map(_encode),
    st.tuples(json_values, st.booleans()).map(_encode),  # JSON that is not an object
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from([b"", b" ", b"\r", b"\xef\xbb\xbf{}", b"\xff\xfe", b"[" * 2000 + b"]" * 2000,
                     b'{"type":"log","agentId":' + b"[" * 950 + b"]" * 950 + b"}"]),
)


def _pages(client, run) -> dict:
    """Every page of the run: page_statuses' own, the timeline and project tabs, every event,
    every rejected line, and each agent's turns and conversation."""
    statuses = page_statuses(client, run)
    urls = [reverse(f"runs:{name}", args=[run.pk]) for name in ("timeline", "project")]
    urls += [reverse("runs:event", args=(run.pk, seq)) for seq in range(1, run.last_seq + 1)]
    urls += [reverse("runs:api_event", args=(run.pk, seq)) for seq in range(1, run.last_seq + 1)]
    urls += [reverse("runs:rejected", args=(run.pk, pk)) for pk in run.rejected_lines.values_list("pk", flat=True)]
    for agent_id, turns in run.agents.values_list("agent_id", "turns"):
        for n in range(1, min(turns or 0, 3) + 1):
            urls.append(turn_url(run.pk, agent_id, n))
        if turn_url(run.pk, agent_id, 1):
            urls.append(reverse("runs:conversation", args=(run.pk, agent_id)))
    for url in filter(None, urls):
        statuses[url] = client.get(url).status_code
    return statuses


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(given_lines=st.lists(lines, min_size=1, max_size=8))
@example(given_lines=[b'{"type":"session_started","capabilitySet":{"agents":[{"slug":"p"}]}}',
                      b'{"type":"agent_spawned","agentId":".","profileId":"p"}',
                      b'{"type":"turn_started","agentId":"."}', b'{"type":"turn_started","agentId":".."}',
                      b'{"type":[],"agentId":"root"}', b'{"type":"log","agentId":"\\ud800"}',
                      b'{"type":"usage","agentId":"root","tokens":{"output":1e400}}', b'{"type":"log","n":NaN}'])
def test_any_lines_end_stored_or_rejected_and_every_page_answers(given_lines, viewer_client):
    run = new_run()
    result = ingest.append_lines(run, given_lines, ignore_final_empty=False)
    assert result.stored + result.rejected == len(given_lines) and result.duplicates == 0
    assert Event.objects.filter(run=run).count() == result.stored
    assert RejectedLine.objects.filter(run=run).count() == result.rejected
    run.refresh_from_db()
    statuses = _pages(viewer_client, run)
    assert {url: s for url, s in statuses.items() if s != 200} == {}, given_lines
