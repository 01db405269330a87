from django.shortcuts import render


def reference(request):
    return render(request, "surfaces/reference.html", {})
