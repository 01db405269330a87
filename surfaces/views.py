from django.shortcuts import render

from surfaces import selectors
from surfaces.arms import DEFAULT_LANGUAGE, LANGUAGES
from surfaces.glossary import TERMS


def reference(request):
    language = request.GET.get("lang") or DEFAULT_LANGUAGE
    if language not in LANGUAGES:
        return render(request, "surfaces/reference_unknown_arm.html",
                      {"language": language, "languages": LANGUAGES}, status=404)
    return render(request, "surfaces/reference.html", selectors.reference(language))


def glossary(request):
    return render(request, "surfaces/glossary.html", {"terms": TERMS})
