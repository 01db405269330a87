"""Who may read a run, who may write, which run a reference names, which agent ids a link can
carry and where a form may send the browser back to: the glue every flow's views share (the token
API, the report, the inspector, compare, import, the selection, launch), so none of them imports
another flow's views and each permission question is answered in one place.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from importlib import import_module
from types import SimpleNamespace
from urllib.parse import unquote

from django.conf import settings
from django.contrib.auth import get_user
from django.http import Http404, JsonResponse
from django.urls import NoReverseMatch, Resolver404, resolve, reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode

from runs.models import IngestToken, Run
from runs.stream.record import whole_number


def run_resolve(ref) -> Run | None:
    """A run by pk (all digits) or by name; None when there is none."""
    ref = str(ref).strip()
    if (pk := whole_number(ref)) is not None:
        run = Run.objects.filter(pk=pk).first()
        if run is not None:
            return run
    return Run.objects.filter(name=ref).first()


def run_or_404(pk) -> Run:
    """The run `pk` names; else Http404 saying why (the 404 page shows it): deleted, or none."""
    run = Run.objects.filter(pk=pk).first()
    if run is None:
        if Run.every.filter(pk=pk).exists():
            raise Http404(f"Run {pk} was deleted; its records are going in the background.")
        raise Http404(f"There is no run {pk}: it was deleted, or never was.")
    return run


def bearer_token(request) -> IngestToken | None:
    """The `IngestToken` of an active user the request's ``Authorization: Bearer <key>`` names, or None."""
    return _token(request.headers.get("Authorization", ""))


def _token(authorization: str) -> IngestToken | None:
    scheme, _, key = authorization.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        return None
    token = IngestToken.objects.select_related("user").filter(key=key.strip()).first()
    if token is None or not token.user.is_active:
        return None
    return token


def signed_in(authorization: str, session_key: str) -> bool:
    """Whether a request carrying these (its Authorization header, its session cookie) comes from an
    active user: by a bearer token, or by a session a user signed in with. For the server's own
    checks before Django has the request (gg_console.daphne_request)."""
    if _token(authorization) is not None:
        return True
    if not session_key:
        return False
    # Django's own reading of a session: its backend, the password hash it was signed in with, an active user.
    user = get_user(SimpleNamespace(session=import_module(settings.SESSION_ENGINE).SessionStore(session_key)))
    return user.is_authenticated


def bearer_user(request):
    """The user of the request's bearer token (`bearer_token`), or None."""
    token = bearer_token(request)
    return token.user if token else None


def unauthorized(message):
    """A 401 JSON response naming what is missing, with the Bearer challenge."""
    response = JsonResponse({"error": message}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="gg console"'
    return response


def readable_run(request, ref):
    """(run, None) for a reader (a logged-in user or a bearer token), else (None, the error response)."""
    if not (request.user.is_authenticated or bearer_user(request)):
        return None, unauthorized("Log in or send Authorization: Bearer <token>.")
    run = run_resolve(ref)
    if run is None:
        return None, JsonResponse({"error": f"No run {ref!r}."}, status=404)
    return run, None


def agent_linkable(agent_id) -> bool:
    """Whether an agent's page can be linked: its id is non-empty text without a lone surrogate, no
    '/'-separated segment of it is '.' or '..' (a browser rewrites those), and its URL resolves back
    to its own page (a line break has no URL; ``x/turns/3`` would open agent x's turn 3). The one
    rule every link to an agent or its turns follows; an id it refuses is shown without a link."""
    return isinstance(agent_id, str) and bool(agent_id) and _linkable("runs:agent", "agent_id", agent_id)


@lru_cache(maxsize=4096)
def _linkable(view: str, key: str, value: str) -> bool:
    """Whether `value` (an id a stream chose) has a URL of `view` that resolves back to it."""
    if any(unicodedata.category(ch) == "Cs" for ch in value):
        return False
    if any(segment in (".", "..") for segment in value.split("/")):
        return False
    try:
        match = resolve(unquote(reverse(view, args=(1, value))))
    except (NoReverseMatch, Resolver404):
        return False
    return match.view_name == view and match.kwargs.get(key) == value


def agent_url(run_pk, agent_id) -> str:
    """The agent's page, or "" for an id `agent_linkable` refuses."""
    return reverse("runs:agent", args=(run_pk, agent_id)) if agent_linkable(agent_id) else ""


def agent_feed_url(run_pk, agent_id) -> str:
    """The run's feed filtered to the agent's records (a query string carries any id)."""
    return f"{reverse('runs:feed', args=(run_pk,))}?{urlencode({'agent': agent_id})}"


def store_url(run_pk, module_id) -> str:
    """A store's page, or "" for a store id no URL carries back to it (agent_linkable's rule)."""
    ok = isinstance(module_id, str) and bool(module_id) and _linkable("runs:store", "module_id", module_id)
    return reverse("runs:store", args=(run_pk, module_id)) if ok else ""


def turn_url_base(run_pk, agent_id) -> str:
    """The agent's turn address without its number (turn n's is this and "n/"), or "" where
    `turn_url` gives none: reversed once for a page that links many of one agent's turns."""
    return turn_url(run_pk, agent_id, 1).removesuffix("1/")


def turn_url(run_pk, agent_id, turn) -> str:
    """The page of the agent's turn `turn`, or "" (no turn, or an id `agent_linkable` refuses)."""
    try:
        n = int(turn or 0)
    except (TypeError, ValueError):
        return ""
    if n < 1 or not agent_linkable(agent_id):
        return ""
    return reverse("runs:turn", args=(run_pk, agent_id, n))


# ---------------------------------------------------------------------------------------------
# Who may write: one function per question, asked by every view that acts on it (the templates ask
# the same permissions through `perms`).

LAUNCH_PERMISSION = "runs.add_run"
DELETE_PERMISSION = "runs.delete_run"


def return_path(request, target: str, fallback: str) -> str:
    """`target` when it is a path on this console (where a form returns to), else `fallback`: an
    address elsewhere would be an open redirect, and a bare word ("²", "runs") is no path at all
    (Django's redirect() reads one as a view name, and fails)."""
    if target.startswith("/") and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return target
    return fallback


def may_launch(user) -> bool:
    """Launch, re-run or cancel a run, import a stream, save a configuration or a view (see
    may_remove_saved)."""
    return user.has_perm(LAUNCH_PERMISSION)


def may_remove_saved(user, saved) -> bool:
    """Delete or replace a saved view or configuration: who may launch, their own or one whose saver
    is not recorded; another's also needs the model's delete permission (runs.delete_savedview,
    runs.delete_savedconfiguration; a superuser has both)."""
    return may_launch(user) and (saved.created_by_id in (None, user.pk)
                                 or user.has_perm(f"runs.delete_{saved._meta.model_name}"))


def replacement_refused(user, holder) -> str:
    """Why `user` may not save over `holder`, the saved view or configuration holding the name ('' when
    there is none or they may)."""
    if holder is None or may_remove_saved(user, holder):
        return ""
    return f"{removal_refused(holder)} Save yours under another name."


def removal_refused(saved) -> str:
    """Why may_remove_saved said no."""
    kind = saved._meta.verbose_name
    return (f"The {kind} {saved.name!r} is {saved.created_by}'s: deleting or replacing another's {kind} needs the "
            f"runs.delete_{saved._meta.model_name} permission.")


def may_end_runs(user) -> bool:
    """Mark an imported or pushed run ended by hand (whoever may launch runs may end one)."""
    return user.has_perm(LAUNCH_PERMISSION)


def may_delete_runs(user) -> bool:
    """Delete a run with everything it recorded (one run's page or a selection of the list)."""
    return user.has_perm(DELETE_PERMISSION)


def run_write_problem(run: Run, user) -> str:
    """Why `user` may not append records to `run` ('' when they may): a launched run takes records
    only from its own engine; a stream run only from the user who created it (or a superuser)."""
    if run.source in (Run.Source.ENGINE, Run.Source.GG):
        return f"Run {run.name!r} was launched: it takes records only from its engine."
    if user is None or getattr(user, "is_superuser", False) or run.created_by_id == user.pk:
        return ""
    if run.created_by_id is None:  # a run `manage.py ingest` stored, or whose user is gone
        return f"Run {run.name!r} has no owner: only a superuser can add records to it."
    return f"Run {run.name!r} belongs to another user: only they can add records to it."


def token_scope_problem(token, name: str) -> str:
    """Why `token` (an `IngestToken`) may not write into the run called `name` ('' when it may): a
    token with run names writes only into those runs. The names narrow the token, never widen it:
    `run_write_problem` still applies to a run that exists."""
    scope = token.scope()
    if not scope or str(name).strip() in scope:
        return ""
    named = ", ".join(repr(n) for n in scope)
    return f"This token writes only into the runs it names ({named}), not into run {str(name).strip()!r}."
