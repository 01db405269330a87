"""The feed page: the controls and an empty list the socket fills (runs.feed.consumer.FeedConsumer)."""

from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from runs.feed.rows import KINDS
from runs.models import Run
from runs.pages.common import run_context


@require_GET
def run_feed(request, pk):
    run = get_object_or_404(Run, pk=pk)
    return render(request, "runs/feed.html", run_context(
        run, "feed",
        agents=run.agents.values_list("agent_id", flat=True),
        kinds=KINDS,
        agent_filter=request.GET.get("agent", ""),
        kind_filter=request.GET.get("kind", ""),
        socket_path=f"/ws/runs/{run.pk}/feed/?after=0",
    ))
