from django.core.paginator import Paginator
from django.shortcuts import render

from runs.models import Run


def run_list(request):
    page = Paginator(Run.objects.all(), 50).get_page(request.GET.get("page"))
    return render(request, "runs/run_list.html", {"page": page})
