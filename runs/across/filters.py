"""The runs list's filters, read from the query string: shared by the list, the analysis and the
bulk actions, so a filter means one thing wherever its URL is pasted.

``/?q=…&status=…&source=engine&language=python&sort=-cost``. Every filter reads a column of Run or
of RunFacts (the write path's fold), never an agent or an event. Agent-level filters (mode,
language, docViewTypes, model, profile) select runs having at least one such agent; the analysis
also keeps only those agents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone as dt_timezone

from django.db.models import Q

from runs.ingest import facts as run_facts
from runs.models import Run
from surfaces.arms import LANGUAGES
from surfaces.docviews import FLAGS, NONE

STATUSES = [*Run.Status.values, "stale"]
EXECUTION_MODES = ("tool_calling", "responses_as_code")
DOC_VIEW_TYPES = tuple("+".join(f for i, f in enumerate(FLAGS) if n >> i & 1) or NONE for n in range(8))
# query parameter -> the RunFacts column holding the run's agents' values (the per-agent sets).
AGENT_SETS = {"mode": "execution_modes", "language": "languages", "docViewTypes": "doc_view_types",
              "model": "model_ids", "profile": "profile_slugs"}
YES_NO = ("yes", "no")
TEXT_MAX = 200


@dataclass
class RunFilter:
    q: str = ""
    status: list[str] = field(default_factory=list)
    source: list[str] = field(default_factory=list)
    sets: dict[str, list[str]] = field(default_factory=dict)  # AGENT_SETS key -> values (any of)
    divergences: str = ""  # yes | no | ""
    refusals: str = ""
    started_from: str = ""  # YYYY-MM-DD, inclusive
    started_to: str = ""  # YYYY-MM-DD, inclusive
    problems: list[str] = field(default_factory=list)  # what was ignored, and why

    @property
    def active(self) -> bool:
        return bool(self.q or self.status or self.source or any(self.sets.values()) or self.divergences
                    or self.refusals or self.started_from or self.started_to)

    def params(self) -> list[tuple[str, str]]:
        """The filter as query parameters (what a sort link or a next page carries on)."""
        out = [("q", self.q)] if self.q else []
        out += [("status", s) for s in self.status] + [("source", s) for s in self.source]
        out += [(k, v) for k in AGENT_SETS for v in self.sets.get(k, ())]
        out += [(k, v) for k, v in (("divergences", self.divergences), ("refusals", self.refusals),
                                    ("from", self.started_from), ("to", self.started_to)) if v]
        return out


def _text(value: str) -> str:
    # PostgreSQL text holds no NUL, and no stored value has one: a NUL can only match nothing.
    return value.replace("\x00", "").strip()[:TEXT_MAX]


def _values(query, key) -> list[str]:
    return [_text(v) for v in query.getlist(key) if _text(v)]


def _day(value: str, problems: list, label: str):
    if not value:
        return ""
    try:
        datetime.strptime(value, "%Y-%m-%d")
    except ValueError:
        problems.append(f"{label} {value!r} is not a date (YYYY-MM-DD); ignored.")
        return ""
    return value


def parse(query) -> RunFilter:
    """A RunFilter from a QueryDict; a value no filter can hold is named in `problems` and dropped."""
    problems = []
    f = RunFilter(q=_text(query.get("q", "")), problems=problems)
    f.status = _values(query, "status")
    for s in f.status:  # kept: a stream's session_ended may name a status of its own
        if s not in STATUSES:
            problems.append(f"Unknown status {s!r} (the statuses are {', '.join(STATUSES)}): only runs whose "
                            "stream ended with exactly that word match.")
    for s in _values(query, "source"):
        if s in Run.Source.values:
            f.source.append(s)
        else:
            problems.append(f"Unknown source {s!r} (the sources are {', '.join(Run.Source.values)}); ignored.")
    f.sets = {key: _values(query, key) for key in AGENT_SETS}
    for key in ("divergences", "refusals"):
        value = query.get(key, "")
        if value and value not in YES_NO:
            problems.append(f"{key} must be yes or no, not {value!r}; ignored.")
        setattr(f, key, value if value in YES_NO else "")
    f.started_from = _day(_text(query.get("from", "")), problems, "Started from")
    f.started_to = _day(_text(query.get("to", "")), problems, "Started to")
    return f


MAX_DAY = date.max.isoformat()


def _midnight(day: str) -> datetime:
    return datetime.combine(datetime.strptime(day, "%Y-%m-%d").date(), time(), tzinfo=dt_timezone.utc)


def _status_q(statuses) -> Q:
    """`stale` and `running` split the running runs as the list's badges and the run header read them
    (`runs.ingest.facts.stale_since`): `running` offered stale ones too, badged "stale"."""
    before = run_facts.stale_before()
    quiet = Q(facts__last_event_at__lt=before) | Q(facts__last_event_at__isnull=True, created_at__lt=before)
    heard = Q(facts__last_event_at__gte=before) | Q(facts__last_event_at__isnull=True, created_at__gte=before)
    q = Q()
    for s in statuses:
        if s in ("stale", Run.Status.RUNNING):
            q |= Q(status=Run.Status.RUNNING) & (quiet if s == "stale" else heard)
        else:
            q |= Q(status=s)
    return q


def run_q(f: RunFilter) -> Q:
    """The filter as one Q over Run (RunFacts through `facts__`)."""
    q = Q()
    if f.q:
        needle = f.q.lower()
        q &= Q(facts__search__contains=needle) | Q(name__icontains=f.q) | Q(session_id__icontains=f.q)
    if f.status:
        q &= _status_q(f.status)
    if f.source:
        q &= Q(source__in=f.source)
    for key, values in f.sets.items():
        column = AGENT_SETS[key]
        if values:
            any_of = Q()
            for v in values:
                any_of |= Q(**{f"facts__{column}__contains": f"|{v.replace('|', '/')}|"})
            q &= any_of
    for key, column in (("divergences", "facts__divergences"), ("refusals", "facts__refusals")):
        value = getattr(f, key)
        if value == "yes":
            q &= Q(**{f"{column}__gt": 0})
        elif value == "no":
            q &= Q(**{column: 0}) | Q(facts__isnull=True)
    if f.started_from:
        q &= Q(started_at__gte=_midnight(f.started_from))
    if f.started_to and f.started_to != MAX_DAY:  # through the last day there is: no bound
        q &= Q(started_at__lt=_midnight(f.started_to) + timedelta(days=1))
    return q


def runs(f: RunFilter):
    return Run.objects.filter(run_q(f))


def choices() -> dict:
    """The vocabularies the filter form offers (no query: gg's own lists)."""
    return {"statuses": STATUSES, "sources": Run.Source.values, "modes": EXECUTION_MODES,
            "languages": LANGUAGES, "doc_view_types": DOC_VIEW_TYPES}
