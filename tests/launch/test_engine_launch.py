"""`manage.py launch`: from a shipped demo spec to a finished run, every record through ingest."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from runs.demo import DEMO_DIR
from runs.models import Run

pytestmark = pytest.mark.django_db


def test_launch_wait_prints_the_final_status(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    out = io.StringIO()
    call_command("launch", str(DEMO_DIR / "review.spec.json"), "--name", "review-demo", "--wait", stdout=out)
    run = Run.objects.get(name="review-demo")
    assert out.getvalue().splitlines()[-1] == "completed"
    assert run.status == "completed" and run.source == "engine"
    assert run.events.first().type == "session_started" and run.events.last().type == "session_ended"
    assert run.agents.count() == 3  # the projections saw the engine's records like any import
    assert run.capability_set["agents"][0]["slug"] == "author"


def test_launch_refuses_a_bad_spec_naming_every_problem(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"agents": [{"slug": "Bad Slug"}], "provider": {"kind": "psychic"}}')
    with pytest.raises(CommandError) as refused:
        call_command("launch", str(bad))
    text = str(refused.value)
    assert "task" in text and "agents[0].slug" in text and "provider.kind" in text
    assert not Run.objects.exists()


def test_launch_refuses_a_run_name_read_as_an_id(tmp_path):
    with pytest.raises(CommandError, match="A run name cannot be digits alone"):
        call_command("launch", str(DEMO_DIR / "review.spec.json"), "--name", "8")
    assert not Run.objects.exists()


def test_launch_refuses_a_script_without_replies_for_the_root(tmp_path):
    """The launch form refused a script that has no reply for the root profile (the run fails at its
    first turn); `manage.py launch` queued it and the run ended in model_error."""
    spec = json.loads((DEMO_DIR / "review.spec.json").read_text())
    spec["provider"] = {"kind": "scripted", "script": {"reviewer": [{"text": "looks fine"}]}}
    path = tmp_path / "no-root.spec.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(CommandError, match=r"provider.script: the script has no replies for the root profile 'author'"):
        call_command("launch", str(path))
    assert not Run.objects.exists()
