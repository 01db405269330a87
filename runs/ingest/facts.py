"""RunFacts: the per-run row the runs list filters and sorts on and the analysis reads.

Folded from the projections the write path already keeps (Run, Agent, Holding, RefusalRow), plus
each agent's peak context, which only the log holds (kept incrementally from the chunk's
context_breakdown records). The refusal counts are the Refusals tab's own (the fold's RefusalGroups,
`runs.pages.refusals.run_refusal_groups`), read again after a chunk that stored refusal rows.
`after_chunk` is the write path's one call, inside its transaction; `manage.py refresh_facts` folds the runs whose facts are missing or
behind, and `migrate` does the same by itself once it has brought the schema up to date
(`after_migrate`: a database from before this table, migration 0005, needs nothing run by hand).
"""

from __future__ import annotations

import logging
import operator
from typing import NamedTuple

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.db.models import F, Q
from django.utils import timezone

from runs.stream.record import as_list, as_text, gg_record
from runs.stream.usage import breakdown_bands
from runs.models import Agent, Event, Holding, Run, RunFacts
from runs.pages import run_selectors
from runs.pages.common import RosterRow, run_holdings
from runs.pages.divergences import divergence_holdings, run_divergences
from runs.pages.refusals import refusal_counts, run_refusal_groups

log = logging.getLogger(__name__)
# Record types after which divergences can change (rosters, transitions, spawns naming profiles).
DIVERGENCE_TYPES = frozenset({"agent_modules", "agent_transition", "agent_spawned", "session_started"})


def joined(values) -> str:
    """``|a|b|`` (sorted, distinct, blanks dropped): one LIKE ``%|a|%`` finds a member."""
    kept = sorted({str(v).replace("|", "/") for v in values if v})
    return f"|{'|'.join(kept)}|" if kept else ""


def _task(run: Run) -> str:
    for source in (run.launch_spec, run.capability_set):
        if isinstance(source, dict) and isinstance(source.get("task"), str):
            return source["task"]
    return ""


def _declared_profiles(run: Run) -> list[dict]:
    cs = run.capability_set if isinstance(run.capability_set, dict) else {}
    return [p for p in as_list(cs.get("agents")) if isinstance(p, dict)]


def _peaks_from_log(run: Run) -> dict:
    peaks = {}
    for agent_id, raw in Event.objects.filter(run=run, type="context_breakdown").values_list("agent_id", "raw"):
        _note_peak(peaks, agent_id, gg_record(raw))
    return peaks


def _note_peak(peaks: dict, agent_id: str, rec: dict) -> None:
    total = rec.get("totalTokens")
    if not isinstance(total, (int, float)) or isinstance(total, bool):
        total = sum(breakdown_bands(rec).values())
    if total > peaks.get(agent_id, 0):
        peaks[agent_id] = total


# Agent columns no figure here reads (the biggest JSON among them): not decoded on every chunk.
_UNREAD_AGENT_FIELDS = ("last_breakdown", "withheld", "api_tools", "error_facts", "error_types", "brief",
                        "returned", "tools", "cwd", "material")
_AGENT_ORDER = operator.attrgetter(*Agent._meta.ordering)  # the order `run.agents` reads them in
COHORT_KEY = ("profile", "model", "mode", "language", "docViewTypes")


def add_counts(into: dict, counts, prefix: str = "") -> None:
    """Sum the numbers of `counts` ({key: n}, a JSON object off an agent row or a cohort) into `into`
    under their keys (prefixed): anything else, or a value in it that is no number, adds nothing. A
    plain loop in place, no copy made: the cohorts run over every agent of a run on every chunk
    (Counter.update cost more over 10,000 agents)."""
    if counts and isinstance(counts, dict):
        for k, n in counts.items():
            if isinstance(n, (int, float)) and not isinstance(n, bool):
                key = f"{prefix}{k}"
                into[key] = into.get(key, 0) + n


BANDS = ("docs_view", "search_results")  # the context bands a cohort sums
# The agent columns whose values the runs list filters on (`joined`), in the order of RunFacts' fields.
VALUE_FIELDS = ("execution_mode", "program_language", "doc_view_types", "model_id", "profile_id")
# Agents summed together. The write path folds the facts after every chunk; a chunk sums again only the
# blocks holding an agent it changed (a run of 11,500 agents summed every one, 70 ms a chunk).
AGENT_BLOCK = 256


class Block(NamedTuple):
    """What `agent_sums` summed of one block of a run's agents, for the next chunk's call."""

    agents: list  # the very Agent objects summed: the fold gives an agent it loads a new one
    refusals: list  # each one's refusal counts as summed
    cohorts: dict  # cohort key -> the block's sums
    values: tuple  # per VALUE_FIELDS, the set of the block's values


class Held(NamedTuple):
    """What the facts of a chunk leave for the next chunk's (`after_chunk`)."""

    blocks: list  # the blocks its agents were summed in (`agent_sums`)
    memories: list | None = None  # the run's memories roster rows the divergences read (None: not read)
    rosters: bool = False  # whether the run reported any roster


class AgentSums(NamedTuple):
    cohorts: list  # what the analysis reads of the run's agents (`RunFacts.agents`)
    values: tuple  # per VALUE_FIELDS, the set of every agent's values
    blocks: list  # per block, its `Block`


def agent_sums(agents: list[Agent], refusals: dict, held: list[Block] | None = None) -> AgentSums:
    """The run's agents (in run order) summed a block of AGENT_BLOCK at a time: the cohorts the
    analysis reads (runs.across.analysis) — the agents sharing a profile, model, execution mode,
    program language and docViewTypes summed into one, with their count: every dimension the
    analysis groups by reads only those five — and the values the runs list filters on. `held`: the
    blocks the call for the chunk before returned; a block of the same agent objects with the same
    refusal counts is taken as it was. The blocks are summed in order either way, so the figures do
    not depend on what was held."""
    blocks = []
    for i, start in enumerate(range(0, len(agents), AGENT_BLOCK)):
        part = agents[start:start + AGENT_BLOCK]
        counts = [refusals.get(a.agent_id) for a in part]
        old = held[i] if held and i < len(held) else None
        if old and len(old.agents) == len(part) and all(map(operator.is_, old.agents, part)) and old.refusals == counts:
            blocks.append(old)
        else:
            blocks.append(_block(part, counts))
    cohorts = {}
    for block in blocks:
        for key, part in block.cohorts.items():
            c = cohorts.get(key)
            if c is None:
                c = cohorts[key] = _cohort(key)
            for n in ("agents", "turns", "errorTurns"):
                c[n] += part[n]
            for n in ("errorTurnsByKind", "calls", "refusals", "failures", "bands"):
                add_counts(c[n], part[n])
            if part["cost"] is not None:
                c["cost"] = (c["cost"] or 0) + part["cost"]
    values = tuple(set().union(*(block.values[i] for block in blocks)) for i in range(len(VALUE_FIELDS)))
    return AgentSums(list(cohorts.values()), values, blocks)


def _cohort(key) -> dict:
    return {**dict(zip(COHORT_KEY, key)), "agents": 0, "turns": 0, "errorTurns": 0, "errorTurnsByKind": {},
            "calls": {}, "refusals": {}, "failures": {}, "bands": dict.fromkeys(BANDS, 0), "cost": None}


def _block(agents: list[Agent], refusals: list) -> Block:
    out = {}
    for agent, refused in zip(agents, refusals):
        usage = agent.usage if isinstance(agent.usage, dict) else {}
        cost = _finite((usage.get("cost") or {}).get("comparable") if isinstance(usage.get("cost"), dict) else None)
        key = (agent.profile_id, agent.model_id, agent.execution_mode, agent.program_language, agent.doc_view_types)
        c = out.get(key)
        if c is None:
            c = out[key] = _cohort(key)
        c["agents"] += 1
        c["turns"] += agent.turns
        c["errorTurns"] += agent.error_turn_count
        add_counts(c["errorTurnsByKind"], agent.error_turns)
        add_counts(c["calls"], agent.surface_calls)
        add_counts(c["refusals"], refused)
        add_counts(c["failures"], agent.api_failures, "api ")
        add_counts(c["failures"], agent.tool_failures, "tool ")
        bands = agent.context_bands
        if bands and isinstance(bands, dict):
            add_counts(c["bands"], {b: bands[b] for b in BANDS if b in bands})
        if cost is not None:
            c["cost"] = (c["cost"] or 0) + cost
    values = tuple({getattr(a, field) for a in agents} for field in VALUE_FIELDS)
    return Block(agents, refusals, out, values)


def refresh(run: Run) -> RunFacts:
    """Fold `run`'s facts whole (a run with none, behind, or rebuilt)."""
    return _fold(run)[0]


def _fold(run: Run, *, chunk=None, last_timestamp: str | None = None, refusals=(), agents=None,
          held: Held | None = None) -> tuple[RunFacts, Held]:
    """Fold `run`'s facts; with them, what they leave the next chunk's. With `chunk` (the write path's
    classified records of one append) and the RefusalRows it stored (`refusals`), the figures the
    chunk cannot have changed are kept from the stored row; the refusal counts are read again when
    it stored any. `agents`: every Agent of the run as the fold just wrote them (read from the
    database without); `held`: what the chunk before left."""
    facts = RunFacts.objects.filter(run=run).first()
    new = facts is None
    if new:
        facts = RunFacts(run=run)
    # Facts not folded at the seq before the chunk (a run stored before this table existed, a chunk
    # whose facts failed) are folded whole: the figures kept from the stored row would miss records.
    full = chunk is None or facts.seq != run.last_seq - len(chunk)
    agents = read_agents(run) if agents is None else sorted(agents, key=_AGENT_ORDER)
    types = {c[0] for c in chunk} if not full else set()
    memories, rosters = (held.memories, held.rosters) if held else (None, False)
    if full or types & DIVERGENCE_TYPES:
        memories, rosters = _divergence_rows(run, agents, chunk if not full else None, held)
        facts.divergences = len(run_divergences(run, agents, memories, rosters=rosters))
    if full or refusals:
        # A chunk's refusals change the counts of the agents that made them only: the others' are kept
        # (a run of 11,500 agents read its 1,400 groups again with every chunk that refused a call).
        refusing = None if full else {r.agent_id for r in refusals}
        counts = refusal_counts(run_refusal_groups(run, refusing))
        if not full:
            counts = {**{a: n for a, n in facts.refusals_by_agent.items() if a not in refusing}, **counts}
        facts.refusals_by_agent = counts
        facts.refusals = sum(n for ops in counts.values() for n in ops.values())
    if full:
        facts.peak_context = _peaks_from_log(run)
        facts.last_event_at = Event.objects.filter(run=run, seq=run.last_seq).values_list(
            "received_at", flat=True).first()
    else:
        for etype, rec, agent_id, *_ in chunk:
            if etype == "context_breakdown" and isinstance(rec, dict):
                _note_peak(facts.peak_context, agent_id, rec)
        facts.last_event_at = timezone.now()

    sums = agent_sums(agents, facts.refusals_by_agent, held.blocks if held else None)
    modes, languages, doc_view_types, model_ids, slugs = sums.values
    profiles = _declared_profiles(run)
    model_ids = [*model_ids, *(as_text(p.get("modelId")) for p in profiles)]
    slugs = [*slugs, *(as_text(p.get("slug")) for p in profiles)]
    facts.task = _task(run)
    facts.execution_modes = joined(modes)
    facts.languages = joined(languages)
    facts.doc_view_types = joined(doc_view_types)
    facts.model_ids = joined(model_ids)
    facts.profile_slugs = joined(slugs)
    facts.search = " ".join([run.name, run.session_id, facts.task, *sorted(set(filter(None, model_ids))),
                             *sorted(set(filter(None, slugs)))]).lower()
    if last_timestamp is None:
        last_timestamp = _last_timestamp(run)
    usage = run_selectors.run_usage(run)
    facts.total_tokens = _finite_int(usage["total_tokens"])
    facts.cost = _finite(usage["cost"].get("comparable") if usage["cost"] else None)
    duration = run_selectors.run_duration(run, last_timestamp=last_timestamp)
    facts.duration_seconds = duration.total_seconds() if duration is not None else None
    facts.failed_calls = sum(v for d in (run.tool_failures, run.api_failures) if isinstance(d, dict)
                             for v in d.values() if isinstance(v, int) and not isinstance(v, bool))
    facts.agents = sums.cohorts
    facts.seq = run.last_seq
    facts.save(force_insert=new)
    return facts, Held(sums.blocks, memories, rosters)


def _divergence_rows(run: Run, agents: list[Agent], chunk, held: Held | None) -> tuple[list[RosterRow], bool]:
    """What the divergences read of the run's rosters (`divergence_holdings`): with the rows the chunk
    before left, only those of the agents whose rosters `chunk` reported are read again (a run of
    11,500 agents read all its rows, 80 ms, with every chunk that spawned one); the others are joined
    to their agents as the fold left them."""
    if chunk is None or held is None or held.memories is None:
        return divergence_holdings(run, agents)
    by_pk = {a.id: a for a in agents}
    reported = {c[2] for c in chunk if c[0] == "agent_modules"}
    rows = []
    for r in held.memories:
        agent = by_pk.get(r.agent_id)
        if agent is None:  # a rebuild in between gave the run's agents new pks
            return divergence_holdings(run, agents)
        if agent.agent_id not in reported:
            rows.append(r if agent is r.agent else r._replace(agent=agent))
    if not reported:
        return rows, held.rosters
    changed = [a for a in agents if a.agent_id in reported]
    read = run_holdings(run, changed, whole_run=False, kind="memories")
    if rows and read and (read[0].agent.first_seq, read[0].agent.id) < (rows[-1].agent.first_seq, rows[-1].agent.id):
        read = sorted(rows + read, key=lambda r: (r.agent.first_seq, r.agent.id, r.position))  # as run_holdings reads them
        rows = []
    return rows + read, held.rosters or bool(read) or Holding.objects.filter(agent__in=changed).exists()


def _finite(value):
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return value if value == value and abs(value) != float("inf") else None


def _finite_int(value):
    value = _finite(value)
    return int(value) if value is not None and abs(value) < 2 ** 63 else None


def read_agents(run: Run) -> list[Agent]:
    """Every agent of the run with what the facts read of it."""
    return list(run.agents.defer(*_UNREAD_AGENT_FIELDS))


def after_chunk(run: Run, classified, refusals=(), agents=None, held: Held | None = None
                ) -> tuple[list[Agent] | None, Held | None]:
    """The write path's call, after a chunk's projections are flushed (same transaction):
    `classified` is its ``[(type, record, agentId, timestamp, operation, tool, ok, failure)]``,
    `refusals` the RefusalRows its fold stored, `agents` the fold's (`Folded.agents`), `held` what
    the chunk before left. Returns the run's agents as folded here (read when the fold held only
    some: a run's first append in a process) and what the facts leave the next chunk, for the write
    path to carry.

    The facts are a derived read model: a fault folding them (a record shape nothing foresaw) is
    logged and leaves them behind the run (`manage.py refresh_facts` finds it) rather than costing
    the chunk its records. (No savepoint: its two queries per chunk would buy nothing the fold's
    reads, the same the pages make, need.)"""
    last_ts = next((c[3] for c in reversed(classified) if c[3]), None)
    try:
        agents = read_agents(run) if agents is None else agents
        _, held = _fold(run, chunk=classified, last_timestamp=last_ts or _last_timestamp(run), refusals=refusals,
                        agents=agents, held=held)
    except Exception:
        log.exception("run %s: the runs list's facts could not be folded", run.pk)
        held = None
    return agents, held


def _last_timestamp(run: Run) -> str:
    if not run.last_seq:
        return ""
    return Event.objects.filter(run=run, seq=run.last_seq).values_list("timestamp", flat=True).first() or ""


def behind():
    """Runs whose facts are missing or were folded at another seq than the run's own."""
    return Run.objects.filter(Q(facts__isnull=True) | ~Q(facts__seq=F("last_seq")))


def catch_up(limit: int | None = None) -> int:
    """Refresh the runs that are behind (at most `limit`); how many were refreshed."""
    runs = behind().order_by("-id")
    count = 0
    for run in runs[:limit] if limit else runs.iterator():
        refresh(run)
        count += 1
    return count


stale_before = run_selectors.stale_before  # the run header's rule, for the runs list and its filter


def stale_since(run: Run, facts: RunFacts | None):
    """When a stale run's last record arrived (or, with none, when it was created); None for a run
    that is not stale: running, and nothing arrived since `stale_before()`."""
    if run.status != Run.Status.RUNNING:
        return None
    last = (facts.last_event_at if facts else None) or run.created_at
    return last if last < stale_before() else None


def after_migrate(sender, plan=None, using=DEFAULT_DB_ALIAS, verbosity=1, **kwargs) -> None:
    """post_migrate: fold the facts of the runs lacking them (or behind) once `migrate` has applied
    migrations forward and left none unapplied. Not a data migration: the fold reads today's models,
    which match the schema only once every migration has run. A flush (no plan), a migration back or
    to a state short of the latest leaves the facts as they are."""
    if not plan or any(backwards for _migration, backwards in plan) or using != DEFAULT_DB_ALIAS:
        return
    executor = MigrationExecutor(connections[using])
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        return
    count = catch_up()
    if count and verbosity:
        print(f"  Folded the runs list's facts of {count} run(s) that had none or were behind.")
