"""Saved views: a runs-list filter, a comparison or an analysis under a name. A view is its page's
query string, so opening it (``/views/<id>/``) is a redirect and sharing it is sharing a URL."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from django.urls import reverse

from runs.access import replacement_refused
from runs.models import SavedView

PAGES = {SavedView.Kind.LIST: "runs:list", SavedView.Kind.COMPARE: "runs:compare",
         SavedView.Kind.ANALYSIS: "runs:analysis"}
DROPPED = ("after", "before", "format")  # a page position or a download is not part of a view
QUERY_MAX = 4000


def clean_query(query: str) -> str:
    pairs = [(k.replace("\x00", ""), v.replace("\x00", ""))
             for k, v in parse_qsl(query.lstrip("?"), keep_blank_values=False) if k not in DROPPED]
    return urlencode(pairs)


def page_url(kind: str, query: str) -> str:
    """The page of a view of `kind` with `query`; one too long to save opens without it (a redirect
    of 100,000 characters was a 400 under the message saying why nothing was saved)."""
    page = PAGES.get(kind, "runs:list")
    query = clean_query(query) if len(query) <= QUERY_MAX else ""
    return reverse(page) + (f"?{query}" if query else "")


def url(view: SavedView) -> str:
    return page_url(view.kind, view.query)


def save(*, name: str, kind: str, query: str, user) -> tuple[SavedView | None, str]:
    """(the view, "") or (None, why not). Saving under a name of one's own view of the kind replaces
    it; another user's is theirs (a view saved by no one recorded, whose user is gone, anyone's)."""
    name = (name or "").strip()
    if not name:
        return None, "A saved view needs a name."
    if len(name) > 200 or "\x00" in name:
        return None, "A saved view's name is at most 200 characters, without NUL."
    if kind not in SavedView.Kind.values:
        return None, f"Unknown kind of view {kind!r}."
    if len(query) > QUERY_MAX:
        return None, "That view's query is too long to save."
    holder = SavedView.objects.filter(kind=kind, name=name).select_related("created_by").first()
    if holder is not None and holder.created_by_id not in (None, getattr(user, "pk", None)):
        if refusal := replacement_refused(user, holder):
            return None, refusal
        return None, (f"The {kind} view {name!r} is {holder.created_by}'s: save yours under another name, or "
                      "delete theirs first (×).")
    view, _ = SavedView.objects.update_or_create(
        kind=kind, name=name, defaults={"query": clean_query(query), "created_by": user})
    return view, ""


def of_kind(kind: str) -> list[SavedView]:
    return list(SavedView.objects.filter(kind=kind).select_related("created_by").order_by("name")[:100])


def delete(view: SavedView) -> None:
    view.delete()
