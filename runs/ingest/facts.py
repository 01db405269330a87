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

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.db.models import F, Q
from django.utils import timezone

from runs.stream.record import as_list, as_text, gg_record
from runs.stream.usage import breakdown_bands
from runs.models import Agent, Event, Run, RunFacts
from runs.pages import run_selectors
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


def note_peaks(peaks: dict, decoded) -> None:
    """Fold the peak context of [`Decoded`] into {agent id: peak}, as `_peaks_from_log` reads it."""
    for d in decoded:
        if d.type == "context_breakdown" and d.record is not None:
            _note_peak(peaks, d.agent_id, d.record)


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


def cohorts(agents: list[Agent], refusals: dict) -> list[dict]:
    """What the analysis reads of a run's agents (runs.across.analysis): the agents sharing a
    profile, model, execution mode, program language and docViewTypes summed into one cohort —
    every dimension the analysis groups by reads only those five — with their count."""
    out = {}
    for agent in agents:
        usage = agent.usage if isinstance(agent.usage, dict) else {}
        cost = _finite((usage.get("cost") or {}).get("comparable") if isinstance(usage.get("cost"), dict) else None)
        key = (agent.profile_id, agent.model_id, agent.execution_mode, agent.program_language, agent.doc_view_types)
        c = out.get(key)
        if c is None:
            c = out[key] = {**dict(zip(COHORT_KEY, key)), "agents": 0, "turns": 0, "errorTurns": 0,
                            "errorTurnsByKind": {}, "calls": {}, "refusals": {}, "failures": {},
                            "bands": dict.fromkeys(BANDS, 0), "cost": None}
        c["agents"] += 1
        c["turns"] += agent.turns
        c["errorTurns"] += agent.error_turn_count
        add_counts(c["errorTurnsByKind"], agent.error_turns)
        add_counts(c["calls"], agent.surface_calls)
        add_counts(c["refusals"], refusals.get(agent.agent_id))
        add_counts(c["failures"], agent.api_failures, "api ")
        add_counts(c["failures"], agent.tool_failures, "tool ")
        bands = agent.context_bands
        if bands and isinstance(bands, dict):
            add_counts(c["bands"], {b: bands[b] for b in BANDS if b in bands})
        if cost is not None:
            c["cost"] = (c["cost"] or 0) + cost
    return list(out.values())


def refresh(run: Run, *, chunk=None, last_timestamp: str | None = None, peaks: dict | None = None,
            refusals=(), agents=None) -> RunFacts:
    """Fold `run`'s facts. With `chunk` (the write path's classified records of one append) and the
    RefusalRows it stored (`refusals`), the figures the chunk cannot have changed are kept from the
    stored row; the refusal counts are read again when it stored any. A full fold takes the run's `peaks` from a caller that has
    just read the whole log (the rebuild, through `note_peaks`) rather than reading it again.
    `agents`: every Agent of the run as the fold just wrote them (read from the database without)."""
    facts = RunFacts.objects.filter(run=run).first()
    new = facts is None
    if new:
        facts = RunFacts(run=run)
    # A run stored before this table existed has records no chunk here brought.
    full = chunk is None or (new and run.last_seq > len(chunk))
    agents = read_agents(run) if agents is None else sorted(agents, key=_AGENT_ORDER)
    types = {c[0] for c in chunk} if not full else set()
    if full or types & DIVERGENCE_TYPES:
        memories, rosters = divergence_holdings(run, agents)
        facts.divergences = len(run_divergences(run, agents, memories, rosters=rosters))
    if full or refusals:
        counts = refusal_counts(run_refusal_groups(run))
        facts.refusals_by_agent = counts
        facts.refusals = sum(n for ops in counts.values() for n in ops.values())
    if full:
        facts.peak_context = _peaks_from_log(run) if peaks is None else peaks
        facts.last_event_at = Event.objects.filter(run=run, seq=run.last_seq).values_list(
            "received_at", flat=True).first()
    else:
        for etype, rec, agent_id, *_ in chunk:
            if etype == "context_breakdown" and isinstance(rec, dict):
                _note_peak(facts.peak_context, agent_id, rec)
        facts.last_event_at = timezone.now()

    profiles = _declared_profiles(run)
    model_ids = [a.model_id for a in agents] + [as_text(p.get("modelId")) for p in profiles]
    slugs = [a.profile_id for a in agents] + [as_text(p.get("slug")) for p in profiles]
    facts.task = _task(run)
    facts.execution_modes = joined(a.execution_mode for a in agents)
    facts.languages = joined(a.program_language for a in agents)
    facts.doc_view_types = joined(a.doc_view_types for a in agents)
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
    facts.agents = cohorts(agents, facts.refusals_by_agent)
    facts.seq = run.last_seq
    facts.save(force_insert=new)
    return facts


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


def after_chunk(run: Run, classified, refusals=(), agents=None) -> list[Agent] | None:
    """The write path's call, after a chunk's projections are flushed (same transaction):
    `classified` is its ``[(type, record, agentId, timestamp, operation, tool, ok, failure)]``,
    `refusals` the RefusalRows its fold stored, `agents` the fold's (`Folded.agents`). Returns the
    run's agents as folded here (read when the fold held only some: a run's first append in a
    process), for the write path to carry to the next chunk's fold.

    The facts are a derived read model: a fault folding them (a record shape nothing foresaw) is
    logged and leaves them behind the run (`manage.py refresh_facts` finds it) rather than costing
    the chunk its records. (No savepoint: its two queries per chunk would buy nothing the fold's
    reads, the same the pages make, need.)"""
    last_ts = next((c[3] for c in reversed(classified) if c[3]), None)
    try:
        agents = read_agents(run) if agents is None else agents
        refresh(run, chunk=classified, last_timestamp=last_ts or _last_timestamp(run), refusals=refusals,
                agents=agents)
    except Exception:
        log.exception("run %s: the runs list's facts could not be folded", run.pk)
    return agents


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
