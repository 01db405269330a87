"""Helpers for tests that need stored runs: import a fixture stream, dump every projection row.

    from tests.streams import import_stream, projection_dump, settled_pool, REAL_MOCK, STREAM_FIXTURES
"""

from pathlib import Path

from runs.ingest import writer as ingest
from runs.models import (Agent, Event, Holding, MemoryRevision, ModuleStore, PooledMessage, RefusalGroup, RefusalRow,
                         RejectedLine, Run, TimelineBucket, TimelineLane, TurnSpan, WaitSpan)
from runs.ingest.fold import RUN_PROJECTION_FIELDS
from runs.stream.material import settle
from tests.paths import GG_FIXTURES, STREAMS

REAL_MOCK = GG_FIXTURES / "real-mock-session.ndjson"

# Lines a column cannot hold as written: NUL characters (valid JSON as \u0000) and numbers past a
# double; and a binary file's bytes. The first four are stored verbatim, the last is rejected.
HOSTILE_LINES = [
    b'{"type":"session_started","capabilitySet":{"agents":[{"slug":"p\\u0000q"}]}}',
    b'{"type":"agent_spawned","agentId":"a\\u0000b","profileId":"p","timestamp":"2026\\u0000"}',
    b'{"type":"archive_state","agentId":"a\\u0000b","moduleId":"archive-0","entries":[{"seq":1,"preview":"\\u0000ELF"}]}',
    b'{"type":"usage","tokens":{"output":1e400},"cost":{"comparable":1e308}}',
    b'\x7fELF\x00\x00\x01 not a record',  # a binary file's bytes piped in: rejected, kept
]

# Every stream fixture the projection tests fold (authored ones and the real recorded one).
STREAM_FIXTURES = {
    "real-mock-session": REAL_MOCK,
    "multi_agent": STREAMS / "multi_agent.ndjson",
    "legacy": STREAMS / "legacy.ndjson",
    "malformed_tail": STREAMS / "malformed_tail.ndjson",
    "host_wrapped": STREAMS / "host_wrapped.ndjson",
}


def import_stream(path, name=None, **kwargs):
    """A new run holding the stream at `path`; returns (run, AppendResult)."""
    path = Path(path)
    run = Run.objects.create(name=name or path.stem)
    with path.open("rb") as fh:
        result = ingest.append_stream(run, fh, **kwargs)
    run.refresh_from_db()
    return run, result


def _row(obj, exclude=()):
    out = {}
    for f in obj._meta.concrete_fields:
        if f.primary_key or f.name in exclude:
            continue
        out[f.name] = getattr(obj, f.attname)
    return out


def projection_dump(run: Run) -> dict:
    """Every projection row of `run` in a canonical, pk-free form (foreign keys as gg ids)."""
    run = Run.objects.get(pk=run.pk)
    agents = {}
    ids = dict(Agent.objects.filter(run=run).values_list("pk", "agent_id"))
    for a in Agent.objects.filter(run=run):
        row = _row(a, exclude=("run", "parent", "predecessor"))
        row["parent"] = ids.get(a.parent_id)
        row["predecessor"] = ids.get(a.predecessor_id)
        agents[a.agent_id] = row
    store_ids = dict(ModuleStore.objects.filter(run=run).values_list("pk", "module_id"))
    stores = {s.module_id: _row(s, exclude=("run",)) for s in ModuleStore.objects.filter(run=run)}
    holdings = sorted(
        (ids[h.agent_id], h.position, h.kind, h.module_id, store_ids.get(h.store_id), h.enabled, h.origin,
         h.writable, h.scope, h.ownership)
        for h in Holding.objects.filter(agent__run=run)
    )  # fmt: skip
    events = list(
        Event.objects.filter(run=run)
        .order_by("seq")
        .values_list("seq", "type", "agent_id", "timestamp", "digest", "operation", "tool_name", "ok", "failure", "turn")
    )
    rejected = list(RejectedLine.objects.filter(run=run).order_by("line_number").values_list("line_number", "reason", "raw"))
    revisions = [_row(r, exclude=("run",)) for r in MemoryRevision.objects.filter(run=run).order_by("seq")]
    pool = {f"{m.agent_id} {m.message_id}": _row(m, exclude=("run",)) for m in PooledMessage.objects.filter(run=run)}
    timeline = {model.__name__: sorted((_row(r, exclude=("run",)) for r in model.objects.filter(run=run)), key=repr)
                for model in (TimelineLane, TurnSpan, WaitSpan, TimelineBucket)}
    refusals = [_row(r, exclude=("run",)) for r in RefusalRow.objects.filter(run=run).order_by("seq")]
    groups = {f"{g.agent_id} {g.key}": _row(g, exclude=("run",)) for g in RefusalGroup.objects.filter(run=run)}
    return {
        "run": {f: getattr(run, f) for f in RUN_PROJECTION_FIELDS + ["last_seq", "rejected_count"]},
        "agents": agents,
        "stores": stores,
        "holdings": holdings,
        "events": events,
        "rejected": rejected,
        "memory_revisions": revisions,
        "pool": pool,
        "timeline": timeline,
        "refusal_rows": refusals,
        "refusal_groups": groups,
    }


def settled_pool(run: Run) -> dict:
    """{(agent id, message id): its PooledMessage with its bill (billed, cost, estimated, spans) up to
    its agent's ledger head, as the pages read it}."""
    heads = {a.agent_id: a.material.get("ledger") for a in Agent.objects.filter(run=run)}
    out = {}
    for m in PooledMessage.objects.filter(run=run):
        m.billed, m.cost, m.estimated, m.spans = settle(
            m.billed, m.cost, m.estimated, m.spans, m.weight,
            (m.since_factor, m.since_cost, m.since_priced, m.since_estimated), heads[m.agent_id])
        out[m.agent_id, m.message_id] = m
    return out
