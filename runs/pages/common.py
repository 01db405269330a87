"""What every run page shares: the frame (`run_context`: header and tab bar), the run by pk, the
run's agents and roster rows, and how an agent's calls are read and
spelled. Each tab's own reads sit beside its view (`runs/pages/<tab>.py`).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import NamedTuple

from django.db import router
from django.db.models import JSONField, TextField
from django.db.models.base import ModelState
from django.db.models.functions import Cast
from django.shortcuts import render

from runs.models import Agent, Holding, Run
from runs.pages import run_selectors
from runs.pages.costs import run_costs
from runs.stream.record import whole_number
from runs.stream.vocabulary import TURN_ERROR_TYPE_LABELS, TURN_ERROR_TYPES
from surfaces.arms import spelling_for


def run_context(run: Run, tab: str, agents: list[Agent] | None = None, holdings: list[RosterRow] | None = None,
                /, **extra) -> dict:
    """The context every page extending runs/run_base.html needs (the header and the tab bar).
    `agents` (and `holdings`): the run's, when the page read them already, so that the tab bar's
    divergence badge counts from them instead of reading them again (positional, so that a page's
    own `agents` or `holdings` in `extra` are the template's)."""
    header = run_selectors.run_header(run)
    header["spend"] = run_costs(run)  # the cost the header shows: priced where the stream has none
    return {"run": run, "tab": tab, "header": header, "badge_reads": (agents, holdings), **extra}


def paged(items: list, first, size: int) -> tuple[list, dict | None]:
    """A page of `items` from the index `first` (an address's text) and, when they are more than `size`,
    where it sits: {first, last, of} counted from 1, and the index the pages before and after start at
    (None at either end)."""
    if len(items) <= size:
        return items, None
    first = min(whole_number(first) or 0, len(items) - 1)
    shown = items[first:first + size]
    return shown, {"first": first + 1, "last": first + len(shown), "of": len(items),
                   "earlier": max(first - size, 0) if first else None,
                   "later": first + size if first + size < len(items) else None}


def run_agents(run: Run, agent_ids: list[str] | None = None) -> list[Agent]:
    """The run's agents (those of `agent_ids` only, when given) with every field but one.
    Without the material ledger: one agent's page reads it, and it is most of an agent row's JSON
    (decoding it for 12,983 agents took 1.2 of the 1.7 s their read cost)."""
    return agent_values(run, _ALL_BUT_MATERIAL, agent_ids)


_ALL_BUT_MATERIAL = tuple(f.name for f in Agent._meta.concrete_fields if f.name not in ("id", "run", "material"))


def agent_values(run: Run, fields: tuple[str, ...], agent_ids: list[str] | None = None) -> list[Agent]:
    """The run's agents (of `agent_ids` only, when given) with only `fields` (and pk and their run), as
    `run.agents.only(*fields)` reads them and three times as fast on a run of 12,206 agents: one query of values,
    a JSON value several agents share (a surface, an empty tally) decoded once, and each Agent made without
    Model.__init__ (its field-by-field setup was most of the rest). A field not read is deferred as with
    only(): reading it costs a query. Shared values are read, never changed."""
    names = [Agent._meta.get_field(n) for n in fields]
    json_fields = {f.attname for f in names if isinstance(f, JSONField)}
    attnames = [f.attname for f in names]
    db = router.db_for_read(Agent)
    decoded = {None: None}
    out = []
    agents = run.agents
    if agent_ids is not None:  # an id holding a NUL names no agent (and PostgreSQL text cannot hold one to look for)
        agents = agents.filter(agent_id__in=[i for i in agent_ids if "\x00" not in i])
    for pk, *values in agents.values_list(
            "pk", *[Cast(a, TextField()) if a in json_fields else a for a in attnames]):
        agent = Agent.__new__(Agent)
        agent._state = ModelState()
        agent._state.adding, agent._state.db = False, db
        for name, value in zip(attnames, values):
            if name in json_fields:
                value = decoded[value] if value in decoded else decoded.setdefault(value, json.loads(value))
            agent.__dict__[name] = value
        agent.__dict__.update(id=pk, run_id=run.pk)
        Agent.run.field.set_cached_value(agent, run)
        out.append(agent)
    return out


class RosterRow(NamedTuple):
    """A roster row as the pages read it: a Holding's columns in a tuple, with its agent (on a run of
    11,500 agents, making 69,000 Holding instances took 450 ms beyond their query; these tuples ~30)."""

    pk: int
    agent_id: int  # the Agent's pk, as on a Holding
    kind: str
    store_id: int | None
    module_id: str
    enabled: bool
    origin: str
    writable: bool
    scope: str
    ownership: str
    position: int
    agent: Agent


def run_holdings(run: Run, agents: list[Agent] | None = None, *, whole_run: bool = True,
                 kind: str | None = None, enabled_only: bool = False) -> list[RosterRow]:
    """Every roster row of the run (of one `kind` only, when given), in roster order, each with its
    agent taken from `agents` (the run's, already read; read here when not given) rather than
    decoded again for every row; `whole_run=False`: `agents` are a few of the run's, and only their
    rows are read. `enabled_only`: the enabled rows, all that the stores (bound to enabled rows alone,
    runs.ingest.fold_types) and the divergences read; a disabled kind is shown in its agent's own roster
    only (half the rows of a run whose agents report six kinds and enable three)."""
    agents = run_agents(run) if agents is None else agents
    rows = Holding.objects.filter(agent__run=run).order_by("agent__first_seq", "position")
    if kind is not None:
        rows = rows.filter(kind=kind)
    if enabled_only:
        rows = rows.filter(enabled=True)
    if not whole_run:
        rows = rows.filter(agent_id__in=[a.pk for a in agents])
    rows = list(rows.values_list(*RosterRow._fields[:-1]))
    if not rows:  # a run that reported no roster: its agents (120,000 incarnations of a machine) not indexed
        return []
    by_pk = {a.pk: a for a in agents}
    # A live run's engine may store an agent and its roster between the two reads: its rows belong
    # to the next read of the page, not to this one (whose agents do not include it).
    return [RosterRow(*row, by_pk[row[1]]) for row in rows if row[1] in by_pk]


def call_surface(agent: Agent) -> str:
    return agent.call_surface


def tool_keyed(agent: Agent) -> bool:
    """A legacy program whose calls bridged the tools it also reported (mid-era surface, tools and
    apis): gg's pre-operation console read its calls on those tools, and its functions would list
    the same calls again."""
    return bool(agent.api_tools and agent.tools and agent.apis)


def calls_once(agent: Agent) -> Counter:
    """{tool or operation: calls}, each call once: a legacy program call counts under the tool its
    bracket bridged (tool-keyed, "via fs.readFile"), and under its own name only for what bridged none."""
    called = Counter(agent.tool_calls)
    for call, n in agent.api_calls.items():
        called[call] += max(n - sum((agent.api_tools or {}).get(call, {}).values()), 0) if agent.tools else n
    return +called


def failed_calls(agent: Agent) -> int:
    """Failed calls on the agent's own surface (tools and APIs are never summed)."""
    surface = call_surface(agent)
    return sum((agent.api_failures if surface == "api" else agent.tool_failures).values())


def call_spelling(agent: Agent, operation: str) -> str:
    return spelling_for(agent.apis, agent.program_language, operation)


def error_tally(error_turns: dict, error_types: dict) -> list[dict]:
    """Error turns by kind, most first, each with its types beneath (gg's errorType, most first):
    [{kind, turns, types: [(type, n)]}]. Works for a run and for an agent alike."""
    def most_first(counts):
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [{"kind": kind, "turns": n, "types": most_first(error_types.get(kind) or {})}
            for kind, n in most_first(error_turns or {})]


def error_types_flat(error_types: dict) -> dict:
    """{errorType: n} across kinds: gg's own ``byType`` shape (session_summary.errors)."""
    out = Counter()
    for types in (error_types or {}).values():
        out.update(types)
    return dict(sorted(out.items()))


def error_type_label(error_type: str) -> str:
    """gg's label for a turn error type (errorTypeLabel): its own, else the id with underscores spaced."""
    return TURN_ERROR_TYPE_LABELS.get(error_type) or error_type.replace("_", " ")


def ranked_error_types(error_types: dict) -> list[dict]:
    """gg's "top error types" (topErrorTypes): every type counted, most first, a tie broken by label,
    each with gg's label and the base kind it rolls up into (None for a type gg does not publish)."""
    rows = [{"id": t, "label": error_type_label(t), "kind": TURN_ERROR_TYPES.get(t), "count": n}
            for t, n in error_types_flat(error_types).items() if n > 0]
    return sorted(rows, key=lambda r: (-r["count"], r["label"]))


def error_record(holder) -> dict:
    """A run's or an agent's errors as gg's Errors widget reads them: the error turns by kind with
    their types, the types ranked, the longest failing streak any one agent reached (a peak, never a
    sum) and the replies loop detection discarded (not errors: money spent on nothing)."""
    facts = holder.error_facts or {}
    return {
        "tally": error_tally(holder.error_turns, holder.error_types),
        "ranked": ranked_error_types(holder.error_types),
        "max_consecutive": facts.get("maxConsecutive", 0),
        "loop_aborts": facts.get("loopAborts", 0),
        "loop_abort_words": facts.get("loopAbortWords", 0),
        "loop_abort_chars": facts.get("loopAbortChars", 0),
    }


def confirm_page(request, title, lines, action, confirm_label, back, back_label, hidden=()):
    """The step a destructive action takes first: what it does, and a button that does it."""
    return render(request, "confirm.html", {
        "title": title, "lines": lines, "action": action, "confirm_label": confirm_label, "back": back,
        "back_label": back_label, "hidden": hidden})
