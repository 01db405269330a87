"""An agent's conversation (runs/pages/conversation.py), and the refusals and programs linking to
their turns."""

import pytest
from django.urls import reverse

from tests.inspect_stream import KEY_ERROR_PROGRAM
from tests.pages_helpers import authored

pytestmark = pytest.mark.django_db


def test_refusals_and_programs_link_to_their_turns(viewer_client):
    run = authored()
    refusals = viewer_client.get(reverse("runs:refusals", args=(run.pk,))).content.decode()
    assert f'href="/runs/{run.pk}/agents/root/turns/3/"' in refusals
    conversation = viewer_client.get(reverse("runs:conversation", args=(run.pk, "root"))).content.decode()
    assert "Read notes.txt." in conversation and KEY_ERROR_PROGRAM.split("\n")[0].replace('"', "&quot;") in conversation
    child = viewer_client.get(reverse("runs:conversation", args=(run.pk, "agent-0"))).content.decode()
    assert "List the workspace." in child and "ls: cannot open directory" in child
