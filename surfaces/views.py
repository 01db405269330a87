from django.contrib.auth.decorators import login_not_required
from django.shortcuts import render

from surfaces import selectors
from surfaces.arms import DEFAULT_LANGUAGE, LANGUAGES


# Like gg's own /gg/reference: the catalogue is public, so the page needs no login.
@login_not_required
def reference(request):
    language = request.GET.get("lang") or DEFAULT_LANGUAGE
    if language not in LANGUAGES:
        return render(request, "surfaces/reference_unknown_arm.html",
                      {"language": language, "languages": LANGUAGES}, status=404)
    return render(request, "surfaces/reference.html", selectors.reference(language))
