"""Odd shapes never take the launch pages down (issue 19): "Re-run with edits" of a run whose
capabilitySet (anyone's stream) or launch spec has a list where an object goes, a number where a
list goes, … is always a form; a spec with a list where a name goes is field errors, never a
traceback; malformed scripted replies and bad seed-file names are refused by validation."""

import copy
import json
from pathlib import Path

import pytest
from django.urls import reverse

from runs.engine.validation import validate_spec
from runs.launch.forms import LaunchForm
from runs.models import Run
from tests.launch_helpers import form_fields, querydict

DEMOS = Path(__file__).resolve().parents[2] / "runs" / "demo"
GG_SET = {"agents": [
    {"id": "p1", "slug": "lead", "name": "Lead", "modelId": "mock/echo",
     "capabilities": [{"id": "read-file", "enabled": True, "implementation": "hard-cap", "params": {"lineCap": 40}},
                      {"id": "responses-as-code", "enabled": True, "params": {"language": "python"}},
                      {"id": "fsm", "enabled": False,
                       "params": {"states": [{"name": "a", "agent": "lead", "transitions": [{"to": "a"}]}]}}],
     "operations": ["files.read_file"], "tools": ["read_file"],
     "subagents": [{"agentId": "lead", "scopes": ["subagent"], "description": "d"}]}],
    "limits": {"maxParallel": 2}, "task": "t", "provider": {"kind": "scripted", "script": {"lead": [{"text": "x"}]}},
    "workspace": {"files": {"a": "b"}}}
ODD = ([], {}, 1, "x", [1], [[]], None)


def leaf_paths(value, prefix=()):
    yield prefix
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from leaf_paths(item, prefix + (key,))


def replaced(base, path, odd):
    if not path:
        return odd
    out = copy.deepcopy(base)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = odd
    return out


@pytest.mark.django_db
def test_rerun_with_edits_is_always_a_form(operator_client):
    operator_client.raise_request_exception = True
    n = 0
    for path in leaf_paths(GG_SET):
        for odd in ([1], 1, "x"):  # a list where anything else goes, a number, a string (each a page)
            n += 1
            run = Run.objects.create(name=f"odd-{n}")
            Run.objects.filter(pk=run.pk).update(capability_set=replaced(GG_SET, path, odd))
            response = operator_client.get(reverse("runs:rerun", args=[run.pk]))
            assert response.status_code == 200 and b'id="launch-form"' in response.content, (path, odd)


@pytest.mark.parametrize("demo", ["code-root", "board", "delegation", "review"])
def test_a_value_of_the_wrong_shape_anywhere_in_a_spec_is_a_field_error(demo):
    base = json.loads((DEMOS / f"{demo}.spec.json").read_text())
    for path in leaf_paths(base):
        for odd in ODD + (["x"], {"a": 1}, True, "x" * 300, 1e308):
            spec, errors = validate_spec(replaced(base, path, odd))  # never raises
            assert spec is not None or errors, (path, odd)


def test_malformed_scripted_replies_are_named():
    data = {"task": "t", "agents": [{"slug": "coder", "name": "Coder", "capabilities": []}],
            "provider": {"kind": "scripted", "script": {"coder": [
                "prose", {"toolCalls": "x"}, {"toolCalls": [{"name": 1}]}, {"toolCalls": [{"name": "a", "args": []}]},
                {"delayMs": -1}, {"delayMs": 10 ** 9}, {"error": "nope"}, {"program": 3}, {"cost": "1"},
                {"surprise": 1}, {"text": "fine"}]}}}
    spec, errors = validate_spec(data)
    paths = {e["path"] for e in errors}
    assert spec is None and paths == {
        "provider.script.coder[0]", "provider.script.coder[1].toolCalls", "provider.script.coder[2].toolCalls[0]",
        "provider.script.coder[3].toolCalls[0].args", "provider.script.coder[4].delayMs",
        "provider.script.coder[5].delayMs", "provider.script.coder[6].error", "provider.script.coder[7].program",
        "provider.script.coder[8].cost", "provider.script.coder[9].surprise"}


@pytest.mark.parametrize("files, words", [
    ({"a\0b": "x"}, "NUL"), ({".": "x"}, "names no file"), ({"dir/": "x"}, "names a directory"),
    ({"a": "x", "a/b": "y"}, "collides with the file"), ({"n" * 300: "x"}, "over 255 bytes"),
    ({"./a": "x", "a": "y"}, "collides with another member"),
])
def test_bad_seed_file_names_are_refused_by_validation(files, words):
    data = {"task": "t", "agents": [{"slug": "coder", "name": "Coder", "capabilities": []}],
            "provider": {"kind": "scripted", "script": {"coder": [{"text": "x"}]}}, "workspace": {"files": files}}
    spec, errors = validate_spec(data)
    assert spec is None and any(e["path"].startswith("workspace.files.") and words in e["message"] for e in errors)


@pytest.mark.django_db
def test_a_launch_spec_with_a_list_for_a_name_is_refused_not_crashed(tmp_path):
    from runs.engine.runner import start_run

    data = {"task": "t", "agents": [{"slug": ["root"], "name": "R", "capabilities": [{"id": ["shell"]}],
                                     "operations": [[]], "subagents": [{"agent": ["x"]}]}],
            "provider": {"kind": "scripted", "demo": "x" * 300}}
    run = Run.objects.create(name="listy", source=Run.Source.ENGINE, status=Run.Status.QUEUED, launch_spec=data)
    assert start_run(run, workspace=tmp_path / "ws") == "error"
    messages = [e.raw for e in run.events.filter(type="log")]
    assert any("agents[0].slug" in m for m in messages) and any("provider.demo" in m for m in messages)


@pytest.mark.django_db
def test_the_shell_is_off_in_a_new_launch_form(operator_client):
    from tests.launch_helpers import form_fields

    fields = form_fields(operator_client.get(reverse("runs:new")).content)
    assert "agents.0.cap.read-file" in fields and "agents.0.cap.shell" not in fields


# A JSON field holding what json.loads turns into a 500 (a number past int()'s 4,300 digits: a
# ValueError that is no JSONDecodeError; nesting past the recursion limit) or into a spec that is no
# JSON (NaN, Infinity): each is the field's error.
UNREADABLE = {"a number of 5,000 digits": ("9" * 5000, "not JSON: Exceeds the limit"),
              "nested 100,000 deep": ("[" * 100_000, "nested deeper than 100 levels"),
              "NaN": ('{"a": NaN}', "not JSON: NaN is not valid JSON"),
              "Infinity": ("-Infinity", "not JSON: -Infinity is not valid JSON")}


@pytest.mark.django_db
@pytest.mark.parametrize("what", UNREADABLE)
def test_a_json_field_json_cannot_read_safely_is_its_fields_error(operator_client, what):
    text, error = UNREADABLE[what]
    fields = form_fields(operator_client.get(reverse("runs:new")).content)
    for name in ("hooks", "agents.0.extra", "limits.extra", "workspace.files"):
        fields[name] = [text]
    assert operator_client.post(reverse("runs:validate"), querydict(fields)).status_code == 200
    form = LaunchForm.from_post(querydict(fields))
    assert form.validate() is None
    for name in ("hooks", "agents.0.extra", "limits.extra", "workspace.files"):
        assert [e for e in form.errors_for(name) if e.startswith(error)], (name, form.errors_for(name))


# Numbers the form converts but gg cannot hold: a NaN or an infinity is no JSON (the run's row refused it
# with a 500), a whole number past gg's uint64 no limit, an unknown limit unset by 1e400 still unknown.
PAST_GG = [("limits.maxCost", "nan", "maxCost is a positive number of US dollars"),
           ("limits.maxCost", "-inf", "maxCost is a positive number of US dollars"),
           ("limits.maxCost", "1e400", "maxCost is a positive number of US dollars"),
           ("limits.maxTurns", "9" * 30, "maxTurns is a whole number from 1 to 18,446,744,073,709,551,615"),
           ("limits.extra", '{"foo": 1e400}', "unknown limit &#x27;foo&#x27;"),
           ("agents.0.cap.skills.params.dir", "../../etc", "dir is a folder inside the workspace (relative, no ..)")]


@pytest.mark.django_db
@pytest.mark.parametrize("name, value, error", PAST_GG)
def test_values_past_what_gg_holds_are_the_fields_errors_in_every_action(operator_client, name, value, error):
    from runs.models import SavedConfiguration

    fields = form_fields(operator_client.get(reverse("runs:new"), {"demo": "delegation"}).content)
    fields.update({name: [value], "agents.0.cap.skills": ["on"], "configuration.name": ["c"]})
    assert error in operator_client.post(reverse("runs:validate"), querydict(fields)).content.decode()
    for action in ("launch", "save"):
        response = operator_client.post(reverse("runs:new"), querydict({**fields, "action": [action]}))
        assert response.status_code == 400 and error in response.content.decode(), action
    assert not Run.objects.exists() and not SavedConfiguration.objects.exists()


@pytest.mark.django_db
def test_the_live_check_names_the_run_name_launch_would_refuse(operator_client):
    Run.objects.create(name="taken")
    fields = form_fields(operator_client.get(reverse("runs:new"), {"demo": "delegation"}).content)
    for name, error in (("taken", "A run named &#x27;taken&#x27; already exists."),
                        ("x" * 300, "A run name has at most 200 characters"),
                        ("a\tb", "A run name cannot hold a control character (U+0009)."),
                        ("8", "A run name cannot be digits alone: 8 is read as a run&#x27;s id"),
                        ("a/b", "A run name cannot hold &#x27;/&#x27;"), ("..", "A run name cannot be &#x27;..&#x27;")):
        assert error in operator_client.post(reverse("runs:validate"),
                                             querydict({**fields, "name": [name]})).content.decode(), name
        launch = operator_client.post(reverse("runs:new"), querydict({**fields, "name": [name], "task": ["kept"]}))
        assert launch.status_code == 400 and error in launch.content.decode(), name
        assert ">kept</textarea>" in launch.content.decode()
    assert list(Run.objects.values_list("name", flat=True)) == ["taken"]


@pytest.mark.django_db
def test_an_unknown_demo_is_a_404_naming_the_demos(operator_client):
    response = operator_client.get(reverse("runs:new"), {"demo": "../../etc"})
    assert response.status_code == 404 and "the demos are arms, board" in response.content.decode()
