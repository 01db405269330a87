"""The glossary: every word a page links with `{% term %}` has its entry, each entry is defined once
and quotes gg's own documents, and the page serves every entry under its anchor."""

import re

import pytest
from django.template import Context, Template, TemplateSyntaxError

from surfaces.glossary import GLOSSARY, TERMS
from tests.paths import REPO, SHARED

TERM_TAG = re.compile(r"""\{%\s*term\s+["']([^"']+)["']\s*%\}""")


def linked_terms():
    return {slug for path in (REPO / "templates").rglob("*.html") for slug in TERM_TAG.findall(path.read_text())}


def test_every_term_the_pages_link_has_an_entry():
    linked = linked_terms()
    assert linked, "no page links a term"
    assert linked - set(GLOSSARY) == set()


def test_each_term_is_defined_once_and_its_see_also_resolves():
    assert len({t.slug for t in TERMS}) == len(TERMS)
    assert len({t.word.lower() for t in TERMS}) == len(TERMS)
    for t in TERMS:
        assert all(s in GLOSSARY for s in t.see), t.slug


def _normalise(text):
    return re.sub(r"\s+", " ", text.replace("’", "'")).strip()


def test_every_quote_is_gg_s_own_words():
    """Each fragment of a quote (split at the […] elisions) is found verbatim in the design documents."""
    documents = _normalise(" ".join(p.read_text() for p in (SHARED / "seeds").glob("*.txt")))
    for t in TERMS:
        for fragment in t.quote.split("[…]"):
            assert _normalise(fragment).strip(" .") in documents, (t.slug, fragment)


def test_the_tag_links_the_entry_and_refuses_an_unknown_word():
    html = Template('{% load glossary %}<h2>Stores {% term "store" %}</h2>').render(Context())
    assert 'href="/glossary/#store"' in html and ">?</a>" in html
    with pytest.raises(TemplateSyntaxError, match="no term 'nonsense'"):
        Template('{% load glossary %}{% term "nonsense" %}').render(Context())


@pytest.mark.django_db
def test_the_page_has_every_entry_under_its_anchor(viewer_client):
    body = viewer_client.get("/glossary/").content.decode()
    for t in TERMS:
        assert f'id="{t.slug}"' in body, t.slug
