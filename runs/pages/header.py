"""The run header and its actions alone (runs/_run_frame.html): what static/js/run_header.js
fetches whenever the socket says the run moved, so every tab's header stays true."""

from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from runs.access import return_path, run_or_404
from runs.pages.common import run_context


@require_GET
def run_header_frame(request, pk):
    run = run_or_404(pk)
    # The page the frame sits on: where Cancel returns to.
    next_path = return_path(request, request.GET.get("next", ""), reverse("runs:detail", args=[pk]))
    return render(request, "runs/_run_frame.html", run_context(run, "", next_path=next_path))
