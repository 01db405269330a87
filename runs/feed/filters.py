"""What a filtered feed shows: agent, kind, operation or tool, failed only, a failed result's failure
class, and words to search for.

A filter is read from the page's URL (so a filtered view can be shared) and from the socket's query
string, and works in two steps: `events` narrows the stored events in the database (indexed columns,
the full-text index) to a superset of what matches, and `keeps` decides each rendered row exactly
(a row's kind and tone come from the renderer, not from a column).
"""

from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlencode

from django.db.models import Q
from django.db.models.expressions import RawSQL
from django.urls import reverse

from runs.feed import search
from runs.feed.rows import KINDS, PANEL_KINDS, RENDERERS
from runs.stream.vocabulary import ID_MAX, SHORT_MAX, UNCLASSIFIED

# The event types each row kind comes from (runs.feed.rows.RENDERERS); "other" is every type the
# feed shows raw.
KIND_TYPES = {
    "session": ("session_started", "session_ended"),
    "turn": ("turn_started",),
    "message": ("assistant_message",),
    "call": ("api_call", "api_result"),
    "tool": ("tool_call", "tool_result"),
    "log": ("log",),
    "context": ("compaction", "context_managed"),
    "handoff": ("agent_transition", "fsm_state"),
    "program": ("code_execution",),
    "output": ("code_execution",),
    "system": ("host:system",),
}
# Where a failed row (tone "fail") can come from besides a result, a program or an error log with ok
# false (a turn_outcome drives panels: its row is raw, never failed).
FAIL_TYPES = ("session_ended", "host:system")
RESULT_TYPES = ("api_result", "tool_result")  # the rows a failure class is read from (kinds call, tool)

FIELDS = ("agent", "kind", "op", "failed", "failure", "q")


@dataclass(frozen=True)
class FeedFilter:
    agent: str = ""
    kind: str = ""
    op: str = ""  # an operation id (api_call) or a tool name (tool_call)
    failed: bool = False
    failure: str = ""  # a failed result's class, as the fold counts it (UNCLASSIFIED: it named none)
    q: str = ""  # words every matching record holds

    @classmethod
    def parse(cls, params):
        """From a QueryDict or a parse_qs dict; an unknown kind is no kind filter. An agent, operation or
        failure class is matched exactly (an agent id may begin or end with spaces: trimmed, it matched
        nothing, and an id of spaces alone was no filter at all)."""
        def get(name, limit=ID_MAX):
            value = params.get(name, "")
            value = value[0] if isinstance(value, list) else value
            return str(value or "")[:limit]

        kind = get("kind").strip()
        return cls(agent=get("agent"), kind=kind if kind in KINDS else "", op=get("op"),
                   failed=get("failed").strip() in ("1", "on", "true", "yes"), failure=get("failure", SHORT_MAX),
                   q=" ".join(search.words(get("q"))))

    @property
    def active(self):
        return bool(self.agent or self.kind or self.op or self.failed or self.failure or self.q)

    def query(self) -> str:
        """The filter as a URL query (without the "?"), only the fields set."""
        pairs = [(f, getattr(self, f)) for f in FIELDS if getattr(self, f)]
        return urlencode([(f, "1" if v is True else v) for f, v in pairs])

    @property
    def words_only(self):
        """Only words to search for: the index alone says which events match."""
        return bool(self.q) and not (self.agent or self.kind or self.op or self.failed or self.failure)

    def events(self, run_pk, *, words=True) -> Q:
        """A Q over one run's Event rows: every event whose row may match (more is fine, never fewer);
        without the words (`q`) when `words` is false (a reader that asks the index itself)."""
        where = Q(run_id=run_pk)
        if self.agent:
            where &= Q(agent_id=self.agent)
        if self.kind == "other":
            where &= ~Q(type__in=[*RENDERERS, *PANEL_KINDS]) & ~Q(type__startswith="host:")
        elif self.kind and self.kind != "raw":  # raw: every record
            where &= Q(type__in=KIND_TYPES[self.kind])
        if self.op:
            where &= Q(operation=self.op) | Q(tool_name=self.op)
        if self.failed:
            # A program or a log stored before its ok was a column has none until the run is rebuilt.
            where &= (Q(ok=False) | Q(type__in=FAIL_TYPES)
                      | Q(type__in=("code_execution", "log"), ok__isnull=True))
        if self.failure:
            where &= Q(type__in=RESULT_TYPES, ok=False) & Q(failure__in={self.failure, ""} if self.failure == UNCLASSIFIED
                                                            else {self.failure})
        matching = search.matching_seqs_sql(run_pk, self.q) if words else None
        if matching is not None:
            where &= Q(seq__in=RawSQL(*matching))
        return where

    def keeps(self, row) -> bool:
        # A record that drives panels only (a raw row) is kept only when the raw kind is asked for,
        # which keeps every record.
        kind = row.kind != "raw" if not self.kind else self.kind in ("raw", row.kind)
        return ((not self.agent or row.agent == self.agent) and kind
                and (not self.failed or row.tone == "fail")
                and (not self.failure or (row.kind in ("call", "tool") and row.tone == "fail"
                                          and (row.failure or UNCLASSIFIED) == self.failure)))


NO_FILTER = FeedFilter()


def feed_url(run_pk, **fields) -> str:
    """The run's feed filtered by FeedFilter's fields (agent, kind, op, failed, failure, q): the address
    its own form gives (runs.access.agent_feed_url is the agent's alone)."""
    query = FeedFilter(**fields).query()
    return _feed_path(run_pk) + (f"?{query}" if query else "")


@lru_cache(maxsize=1024)
def _feed_path(run_pk) -> str:
    return reverse("runs:feed", args=(run_pk,))  # reversed once a run: a comparison links thousands of figures
