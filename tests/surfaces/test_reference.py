"""The Reference page renders every operation for every arm, with linkable anchors."""

import html
import re

import pytest
from django.urls import reverse

from runs.engine import toolcalls
from surfaces.arms import ARMS, LANGUAGES, spell
from surfaces.catalogue import MODULES, OPERATIONS, TOOLS
from surfaces.signatures import signature

URL = reverse("surfaces:reference")


def plain(page):
    """The page without the wrap hints |ident adds (<wbr>, no-break spans around hyphenated parts)."""
    return re.sub(r'<span class="nobr">([^<]*)</span>', r"\1", page).replace("<wbr>", "")


@pytest.mark.django_db
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_operation_in_every_arm(viewer_client, language):
    client = viewer_client
    response = client.get(URL, {"lang": language})
    assert response.status_code == 200
    page = html.unescape(plain(response.content.decode()))
    for op in OPERATIONS:
        row = re.search(rf'<tr id="{re.escape(op.id)}"[^>]*>(.*?)</tr>', page, re.S)
        assert row, op.id
        cells = row.group(1)
        sig = signature(language, op.id)
        assert f'<code class="signature ident">{sig.text}</code>' in cells
        assert spell(language, op.id) + "(" in sig.text
        assert f'<code class="wit ident">{sig.wit}</code>' in cells
        assert str(op.binding) in cells
        assert ("yes" if op.takes_input else "no") in cells
        if op.tool:
            assert f"<code>{op.tool}</code>" in cells
    assert page.count('class="tag">retired') == 2
    arm = ARMS[language]
    for module in MODULES:
        assert arm.import_line(module.id) in page
    assert f'<a href="?lang={language}" class="active"' in page


@pytest.mark.django_db
def test_modules_in_order_with_briefs_tools_and_endings(viewer_client):
    client = viewer_client
    page = html.unescape(plain(client.get(URL, {"lang": "java"}).content.decode()))
    positions = [page.index(f'id="module-{m.id}"') for m in MODULES]
    assert positions == sorted(positions)
    for module in MODULES:
        assert module.brief in page
    for tool in TOOLS:
        assert f'id="tool-{tool.name}"' in page
    review = re.search(r'<tr id="ending-review">(.*?)</tr>', page, re.S).group(1)
    assert '<code id="tool-approve">approve</code>, <code id="tool-request_changes">request_changes</code>' in review
    assert "gg.session.Session.approve" in review and "gg.session.Session.requestChanges" in review
    assert "gg.board.Board.IssueCreated#await" in page  # the receiver alias, spelled Java's way


@pytest.mark.django_db
def test_default_arm_is_typescript_and_needs_a_login(client, viewer):
    assert client.get(URL).status_code == 302  # every page needs a login, the reference too
    client.force_login(viewer)
    response = client.get(URL)
    assert response.status_code == 200
    assert "gg.files.readFile" in response.content.decode()


@pytest.mark.django_db
def test_unknown_arm_is_a_clear_404_listing_the_arms(viewer_client):
    client = viewer_client
    response = client.get(URL, {"lang": "<go>"})
    assert response.status_code == 404
    body = response.content.decode()
    assert "&lt;go&gt;" in body and "<go>" not in body
    for language in LANGUAGES:
        assert f"?lang={language}" in body


@pytest.mark.django_db
def test_every_tool_the_engine_calls_has_the_anchor_its_calls_link_to(viewer_client):
    """A call row links its tool to #tool-<name>: the ending tools (finish, approve, request_changes)
    had no such anchor, 29 dead links on the demos' agent pages."""
    page = viewer_client.get(URL).content.decode()
    names = {*toolcalls.TOOLS, *toolcalls.ENDING_TOOLS, *toolcalls.DELEGATION, "wait_for_issue"}
    assert sorted(n for n in names if page.count(f'id="tool-{n}"') != 1) == []
