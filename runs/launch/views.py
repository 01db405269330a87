"""Launch pages: the form (new, re-run, from a configuration), live validation, cancel, configurations.

Viewing needs a login (the middleware); launching, cancelling and saving need runs.add_run.
"""

from functools import wraps

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST, require_http_methods

from runs.access import may_launch, may_remove_saved, removal_refused, return_path, run_or_404
from runs.demo import demo_names, demo_spec
from runs.launch import services
from runs.launch.forms import WORKSPACE_FIELD, LaunchForm, dom_id
from runs.launch.rerun import rerun_spec
from runs.launch.starter import dry_run
from runs.models import SavedConfiguration
from runs.pages.common import confirm_page
from runs.stream.record import whole_number


# Inputs the form posts that have no error slot on the page: an out-of-band swap for one has no
# target (htmx:oobErrorNoTarget), and no field error is ever theirs.
NO_ERROR_SLOT = ("csrfmiddlewaretoken", "configuration.loaded", "configuration.replace")


def launch_permission_required(view):
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not may_launch(request.user):
            raise PermissionDenied("Launching, cancelling and saving configurations need the runs.add_run permission.")
        return view(request, *args, **kwargs)

    return wrapped


@require_http_methods(["GET", "POST"])
@launch_permission_required
def launch_new(request):
    if request.method == "GET":
        return _render_form(request, _initial_form(request))
    form = LaunchForm.from_post(request.POST)
    action = request.POST.get("action", "launch")
    if action == "save":
        existing = services.configuration_overwrite(form.configuration, request.user)
        if existing is not None:  # replacing another configuration asks first, on the form itself
            return _render_form(request, form, status=409, action=action, overwrite=existing)
        saved = services.configuration_save(form=form, user=request.user, name=form.configuration["name"],
                                            description=form.configuration["description"])
        if saved is not None:
            configuration, created = saved
            messages.success(request, f"Configuration {configuration.name!r} {'saved' if created else 'updated'}.")
            return redirect("runs:configurations")
        return _render_form(request, form, status=400, action=action)
    if action == "dry-run":  # read the script against the profiles; nothing is launched
        return _render_form(request, form, partial=request.htmx, dry=dry_run(form.spec) or {"none": True})
    if action != "launch":  # add / remove a profile, fill an allowlist: the form comes back redrawn
        form.apply(action)
        return _render_form(request, form, partial=request.htmx)
    run = services.run_launch(form=form, upload=request.FILES.get(WORKSPACE_FIELD), user=request.user)
    if run is None:
        return _render_form(request, form, status=400)
    return redirect("runs:feed", run.pk)


@require_POST
@launch_permission_required
def launch_validate(request):
    """htmx: every input's error slot, refreshed out of band, plus the summary."""
    form = LaunchForm.from_post(request.POST)
    form.validate(services.launch_problems(form))  # the name as launch checks it (the zip is not sent)
    names = dict.fromkeys([*form.field_names(), *request.POST.keys(), *(e["field"] for e in form.errors if e["field"])])
    return render(request, "runs/launch/_validation.html",
                  {"form": form, "validated": True,
                   "slots": [(dom_id(n), form.errors_for(n)) for n in names if n not in NO_ERROR_SLOT]})


@require_GET
@launch_permission_required
def run_rerun(request, pk):
    run = run_or_404(pk)
    spec, found = rerun_spec(run)
    if not found:
        messages.warning(request, f"{run.name}'s stream carried no capability set (session_started."
                                  "capabilitySet), so its configuration is not known. The form starts from the "
                                  "closest point its agents tell of: one profile per profile they ran under, in "
                                  "the mode they reported, on the starter script.")
    return _render_form(request, LaunchForm.from_spec(spec), rerun_of=run)


@require_POST
@launch_permission_required
def run_cancel(request, pk):
    run = run_or_404(pk)
    target = return_path(request, request.POST.get("next", ""), reverse("runs:feed", args=[pk]))
    if request.POST.get("confirm") != "yes":
        return confirm_page(request, f"Cancel {run.name}?", [
            "The run stops at its next turn boundary. Everything it recorded so far is kept, and it can be "
            "re-run with edits afterwards."], reverse("runs:cancel", args=[pk]), "Cancel the run",
            target, "Keep it running", hidden=[("next", target)])
    if services.run_cancel(run):
        messages.info(request, f"Cancel requested: {run.name} stops at its next turn boundary.")
    else:
        messages.info(request, f"{run.name} has already ended ({run.status}).")
    return redirect(target)


@require_GET
def configurations(request):
    return render(request, "runs/launch/configurations.html",
                  {"configurations": SavedConfiguration.objects.select_related("created_by")})


@require_POST
@launch_permission_required
def configuration_delete(request, pk):
    configuration = get_object_or_404(SavedConfiguration.objects.select_related("created_by"), pk=pk)
    if not may_remove_saved(request.user, configuration):
        raise PermissionDenied(removal_refused(configuration))
    if request.POST.get("confirm") != "yes":
        return confirm_page(request, f"Delete the configuration {configuration.name!r}?", [
            f"Saved by {configuration.created_by or 'nobody recorded'}, last changed "
            f"{configuration.updated_at:%Y-%m-%d %H:%M} UTC. Runs launched from it keep their own copy; "
            "the configuration itself cannot be brought back."],
            reverse("runs:configuration_delete", args=[pk]), "Delete it", reverse("runs:configurations"),
            "Keep it")
    services.configuration_delete(configuration)
    messages.success(request, f"Configuration {configuration.name!r} deleted.")
    return redirect("runs:configurations")


def _initial_form(request):
    if ref := request.GET.get("configuration"):
        pk = whole_number(ref)
        configuration = SavedConfiguration.objects.filter(pk=pk).first() if pk is not None else None
        if configuration is None:
            raise Http404(f"No saved configuration {ref!r}.")
        form = LaunchForm.from_spec(configuration.spec)
        form.configuration = {"name": configuration.name, "description": configuration.description,
                              "loaded": str(configuration.pk)}
        return form
    if name := request.GET.get("demo"):
        spec = demo_spec(name)
        if spec is None:
            raise Http404(f"No demo {name!r}; the demos are {', '.join(demo_names())}.")
        spec.pop("name", None)  # run names are unique: each launch gets its own
        return LaunchForm.from_spec(spec)
    return LaunchForm.blank()


def _render_form(request, form, *, status=200, partial=False, rerun_of=None, action="", overwrite=None,
                 dry=None):
    template = "runs/launch/_form.html" if partial else "runs/launch/new.html"
    return render(request, template, {"form": form, "view": form.view(), "rerun_of": rerun_of, "action": action,
                                      "overwrite": overwrite, "dry": dry, "demos": demo_names()}, status=status)
