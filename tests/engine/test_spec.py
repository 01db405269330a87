"""Run-spec validation: every offending value is named at once, at its path."""

import copy

from runs.engine.validation import validate_spec


def good_spec():
    return {
        "task": "Write hello.txt.",
        "agents": [
            {"slug": "coder", "name": "Coder", "executionMode": "responses_as_code",
             "programLanguage": "python", "docViewTypes": "return+errors",
             "capabilities": [{"id": "read-file", "enabled": True, "params": {}},
                              {"id": "memories", "enabled": True, "implementation": "scratchpad",
                               "params": {"scope": "isolated"}},
                              {"id": "subagents", "enabled": True, "params": {"maxDepth": 2}}],
             "operations": ["files.read_file", "views.open_file"],
             "subagents": [{"agent": "helper", "description": "helps", "scopes": ["subagent"]}]},
            {"slug": "helper", "name": "Helper", "executionMode": "tool_calling",
             "capabilities": [{"id": "write-file", "enabled": True}], "tools": ["write_file"]},
        ],
        "limits": {"maxTurns": 10, "maxParallel": 2, "maxErrorRate": 0.5, "errorRateWindow": 10},
        "provider": {"kind": "scripted", "script": {"coder": []}},
    }


def paths(errors):
    return {e["path"] for e in errors}


def test_a_good_spec_validates_and_resolves_to_gg_shape():
    spec, errors = validate_spec(good_spec())
    assert errors == []
    assert spec.root.slug == "coder" and spec.root.mode == "responses_as_code"
    assert spec.root.language == "python" and spec.root.doc_view_types == "return+errors"
    assert spec.profile("helper").mode == "tool_calling"
    assert spec.limits.max_parallel == 2 and spec.limits.max_turns == 10
    gg = spec.capability_set()
    root = gg["agents"][0]
    rac = next(c for c in root["capabilities"] if c["id"] == "responses-as-code")
    assert rac["params"]["language"] == "python" and rac["params"]["docViewTypes"] == "return+errors"
    assert root["subagents"] == [{"agentId": "helper", "description": "helps", "scopes": ["subagent"]}]
    assert "executionMode" not in root and root["openingTurn"] == {"modules": [], "functions": []}
    memories = next(c for c in root["capabilities"] if c["id"] == "memories")
    assert memories["implementation"] == "scratchpad" and memories["params"]["scope"] == "isolated"


def test_the_resolved_capability_set_validates_against_gg_schema():
    import json

    import jsonschema

    from tests.paths import GG_FIXTURES

    schema = json.loads((GG_FIXTURES / "capability-set.schema.json").read_text())
    spec, _ = validate_spec(good_spec())
    jsonschema.Draft202012Validator(schema).validate(spec.capability_set())


def test_every_offending_value_is_named_at_once():
    data = good_spec()
    coder, helper = data["agents"]
    coder["operations"] = ["files.read_file", "files.nope", "read_file", "delegation.transition_state"]
    coder["docViewTypes"] = "return+signature"
    coder["capabilities"][1]["params"]["scope"] = "everyone"
    coder["capabilities"].append({"id": "telepathy", "enabled": True})
    coder["capabilities"][0]["params"] = {"lineCapp": 3}
    coder["subagents"].append({"agent": "helper", "description": "no scope"})
    helper["slug"] = "coder"
    helper["tools"] = ["write_file", "files.write_file", "finish", "teleport"]
    data["limits"] = {"maxTurns": 0, "maxParallel": "many", "maxErrorRate": 0.2, "bogus": 1}
    data["agents"].append({"slug": "machine", "name": "M", "capabilities": [
        {"id": "fsm", "enabled": True, "params": {"states": [
            {"name": "a", "agent": "coder", "transitions": [{"to": "nowhere", "transfer": ["history", "soul"]}]},
            {"name": "a", "agent": "ghost", "transitions": []}]}}]})
    spec, errors = validate_spec(data)
    assert spec is None
    got = paths(errors)
    expected = {
        "agents[0].operations[1]",  # unknown operation id
        "agents[0].operations[2]",  # a tool name among operations
        "agents[0].operations[3]",  # transition_state granted by hand
        "agents[0].docViewTypes",  # unknown flag
        "agents[0].capabilities[1].params.scope",
        "agents[0].capabilities[3].id",  # unknown capability
        "agents[0].capabilities[0].params.lineCapp",  # unknown param
        "agents[0].subagents[1].scopes",  # roster entry without scope
        "agents[1].slug",  # duplicate slug
        "agents[1].tools[1]",  # an operation id among tools
        "agents[1].tools[2]",  # an ending is not granted
        "agents[1].tools[3]",
        "limits.maxTurns", "limits.maxParallel", "limits.bogus",
        "limits.errorRateWindow",  # half of the error-rate pair
        "agents[2].capabilities[0].params.states[0].transitions[0].to",  # edge to a missing state
        "agents[2].capabilities[0].params.states[0].transitions[0].transfer[1]",
        "agents[2].capabilities[0].params.states[1].name",  # duplicate state
        "agents[2].capabilities[0].params.states[1].agent",
    }
    assert expected <= got, expected - got
    messages = {e["path"]: e["message"] for e in errors}
    assert "operation id" in messages["agents[1].tools[1]"]
    assert "tool name" in messages["agents[0].operations[2]"]
    assert "cannot be granted" in messages["agents[0].operations[3]"]
    assert "'signature'" in messages["agents[0].docViewTypes"]


def test_required_params_and_wrong_vocabulary_of_provider():
    data = good_spec()
    data["agents"][0]["capabilities"][2]["params"] = {}  # subagents without maxDepth
    data["provider"] = {"kind": "openai", "baseUrl": "ftp://x", "apiKeyEnv": "not a name"}
    del data["task"]
    _, errors = validate_spec(data)
    assert {"agents[0].capabilities[2].params.maxDepth", "provider.model", "provider.baseUrl",
            "provider.apiKeyEnv", "task"} <= paths(errors)


def test_unknown_demo_and_non_python_code_agents_are_refused():
    data = good_spec()
    data["provider"] = {"kind": "scripted", "demo": "no-such-demo"}
    data["agents"][0]["programLanguage"] = "rust"
    _, errors = validate_spec(data)
    assert {"provider.demo", "agents[0].programLanguage"} <= paths(errors)


def test_docviewtypes_object_and_list_forms_resolve_to_the_flag_id():
    for written, expected in (({"parameters": True}, "return+parameters+errors"), (False, "none"),
                              (["errors", "return"], "return+errors")):
        data = copy.deepcopy(good_spec())
        data["agents"][0]["docViewTypes"] = written
        spec, errors = validate_spec(data)
        assert errors == [] and spec.root.doc_view_types == expected


def test_not_an_object():
    assert validate_spec([]) == (None, [{"path": "", "message": "a run spec is a JSON object"}])
