"""`{% term "store" %}`: the `?` beside a heading that links a word's first use to its glossary entry;
`{% term "store" named=True %}` the word itself with its `?`, where no heading says which word it is."""

from django import template
from django.urls import reverse
from django.utils.html import format_html

from surfaces.glossary import GLOSSARY

register = template.Library()


@register.simple_tag
def term(slug, named=False):
    entry = GLOSSARY.get(slug)
    if entry is None:  # a page linking a word the glossary lacks is a bug, not a dead link
        raise template.TemplateSyntaxError(f"the glossary has no term {slug!r}")
    mark = format_html('<a class="term" href="{}#{}" title="{}: {}" aria-label="What is {}?">?</a>',
                       reverse("glossary"), entry.slug, entry.word, entry.gloss, entry.word)
    return format_html('<span class="term-named">{}{}</span>', entry.word, mark) if named else mark
