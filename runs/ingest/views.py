"""Import and export views: the upload form and the NDJSON download, and the end of a run's life:
mark ended, delete (writes go through `runs.ingest.services`, reads of the stored lines through
`runs.ingest.stored`)."""

from pathlib import PurePath

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from runs.access import may_delete_runs, may_end_runs, may_launch, return_path, run_or_404
from runs.ingest import deletion, services, writer
from runs.ingest.forms import ImportForm
from runs.models import Run
from runs.pages.common import confirm_page
from runs.ingest import stored

REJECTIONS_LISTED = 1000  # rows of the upload form's rejected-lines table


@require_http_methods(["GET", "POST"])
def run_import(request):
    if not may_launch(request.user):  # an import adds a run, as a launch does
        raise PermissionDenied("Importing a stream needs the runs.add_run permission (as launching does).")
    result = run = None
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data["file"]
            name = form.cleaned_data["name"] or PurePath(upload.name or "upload").stem or "upload"
            upload.seek(0)
            try:
                run, _created, result = services.run_import_stream(
                    name=name, stream=upload, source=Run.Source.IMPORT, created_by=request.user
                )
            except (services.RunNameError, services.RunWriteRefused, writer.RunGone) as exc:
                form.add_error("name", str(exc))
            if run is not None:  # a blank form for the next file: this name would append to the run just imported
                form = ImportForm()
    else:
        form = ImportForm()
    context = {"form": form, "result": result, "run": run, "max_bytes": settings.GG_MAX_REQUEST_BYTES}
    if result is not None:  # every rejected line counts; a page lists a bounded number of them
        context["rejections_shown"] = result.rejections[:REJECTIONS_LISTED]
        context["rejections_more"] = max(len(result.rejections) - REJECTIONS_LISTED, 0)
    return render(request, "runs/import.html", context)


@require_http_methods(["GET", "POST"])
def run_delete(request, pk):
    """GET: what deleting the run takes with it, and a confirm button; POST: delete it."""
    if not may_delete_runs(request.user):
        raise PermissionDenied("Deleting a run needs the runs.delete_run permission.")
    run = run_or_404(pk)
    if request.method == "GET":
        return render(request, "runs/delete.html", {"run": run, "agents": run.agents.count()})
    if deletion.run_delete_later(run):
        messages.success(request, f"Run {run.name!r} deleted; its {run.last_seq:,} records go in the background.")
    return redirect("runs:list")


@require_POST
def run_mark_ended(request, pk):
    """An imported or pushed run that never sent session_ended: the operator ends it by hand."""
    if not may_end_runs(request.user):
        raise PermissionDenied("Marking a run ended needs the runs.add_run permission.")
    run = run_or_404(pk)
    target = return_path(request, request.POST.get("next", ""), reverse("runs:feed", args=[pk]))
    if request.POST.get("confirm") != "yes":
        return confirm_page(request, f"Mark {run.name} ended?", [
            "It reads interrupted from now on, marked ended by you: no session_ended has arrived, and nothing "
            "else will end it. Nothing it recorded is lost, records sent after are still stored, and it cannot "
            "be made live again."],
            reverse("runs:mark_ended", args=[pk]), "Mark it ended", target, "Leave it live", hidden=[("next", target)])
    if services.run_mark_ended(run, by=request.user.get_username()):
        messages.info(request, f"{run.name} marked ended.")
    else:
        messages.info(request, f"{run.name} has already ended ({run.status}).")
    return redirect(target)


@require_GET
def run_export(request, pk):
    run = run_or_404(pk)
    return ndjson_response(run, filename=f"{stored.file_stem(run)}.ndjson", request=request)


def ndjson_response(run: Run, *, after: int = 0, filename: str | None = None, request=None):
    """The stored stream as NDJSON: one stored record per line, in seq order, exactly as received.

    Read a chunk of rows at a time, so memory stays bounded on any size of run (`stored.response_body`).
    """
    upto = run.last_seq
    response = StreamingHttpResponse(stored.response_body(stored.ndjson_chunks(run, after=after, upto=upto), request),
                                     content_type="application/x-ndjson; charset=utf-8")
    response["X-Last-Seq"] = str(upto)
    if filename:
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response

