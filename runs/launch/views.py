"""Launch pages: the form (new, re-run, from a configuration), live validation, cancel, configurations.

Viewing needs a login (the middleware); launching, cancelling and saving need runs.add_run.
"""

from functools import wraps

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST, require_http_methods

from runs.demo import demo_names, demo_spec
from runs.launch import services
from runs.launch.forms import WORKSPACE_FIELD, LaunchForm, dom_id
from runs.models import Run, SavedConfiguration

PERMISSION = "runs.add_run"


def launch_permission_required(view):
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.has_perm(PERMISSION):
            return render(request, "runs/launch/forbidden.html", status=403)
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
        saved = services.configuration_save(form=form, user=request.user, **form.configuration)
        if saved is not None:
            configuration, created = saved
            messages.success(request, f"Configuration {configuration.name!r} {'saved' if created else 'updated'}.")
            return redirect("runs:configurations")
        return _render_form(request, form, status=400)
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
    form.validate()
    names = dict.fromkeys([*form.field_names(), *request.POST.keys(), *(e["field"] for e in form.errors if e["field"])])
    return render(request, "runs/launch/_validation.html",
                  {"form": form, "validated": True,
                   "slots": [(dom_id(n), form.errors_for(n)) for n in names if n != "csrfmiddlewaretoken"]})


@require_GET
@launch_permission_required
def run_rerun(request, pk):
    run = get_object_or_404(Run, pk=pk)
    spec = dict(run.launch_spec or run.capability_set or {})
    spec.pop("name", None)  # run names are unique: the re-run gets its own
    return _render_form(request, LaunchForm.from_spec(spec), rerun_of=run)


@require_POST
@launch_permission_required
def run_cancel(request, pk):
    run = get_object_or_404(Run, pk=pk)
    if services.run_cancel(run):
        messages.info(request, f"Cancel requested: {run.name} stops at its next turn boundary.")
    else:
        messages.info(request, f"{run.name} has already ended ({run.status}).")
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = reverse("runs:feed", args=[pk])
    return redirect(target)


@require_GET
def configurations(request):
    return render(request, "runs/launch/configurations.html",
                  {"configurations": SavedConfiguration.objects.select_related("created_by")})


@require_POST
@launch_permission_required
def configuration_delete(request, pk):
    configuration = get_object_or_404(SavedConfiguration, pk=pk)
    services.configuration_delete(configuration)
    messages.success(request, f"Configuration {configuration.name!r} deleted.")
    return redirect("runs:configurations")


def _initial_form(request):
    if pk := request.GET.get("configuration"):
        configuration = get_object_or_404(SavedConfiguration, pk=pk)
        return LaunchForm.from_spec(configuration.spec)
    if (name := request.GET.get("demo")) and (spec := demo_spec(name)) is not None:
        spec.pop("name", None)  # run names are unique: each launch gets its own
        return LaunchForm.from_spec(spec)
    return LaunchForm.blank()


def _render_form(request, form, *, status=200, partial=False, rerun_of=None):
    template = "runs/launch/_form.html" if partial else "runs/launch/new.html"
    return render(request, template, {"form": form, "view": form.view(), "rerun_of": rerun_of,
                                      "demos": demo_names()}, status=status)
