"""`{{ spelling|ident }}`: an identifier that may wrap only between its parts (after `.`, `::`, `#`,
`/`, `+` — docViewTypes' return+parameters+errors — or at a space), never mid-word — `gg.memories.<wbr>write_memory`, not `write_m|emory`. A part
holding a hyphen (`file-read`, a WIT name) is kept on one line, since browsers break after hyphens."""

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()

BOUNDARY = re.compile(r"(::|[.#/+]|\s+)")


def _part(part):
    if BOUNDARY.fullmatch(part):
        return part if part.isspace() else f"{part}<wbr>"
    return f'<span class="nobr">{escape(part)}</span>' if "-" in part else escape(part)


@register.filter
def ident(value):
    if value is None:
        return ""
    return mark_safe("".join(_part(p) for p in BOUNDARY.split(str(value)) if p))
