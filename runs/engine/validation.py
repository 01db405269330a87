"""Validating a run spec the way gg refuses a launch: `validate_spec(data) -> (spec, errors)`.

`errors` names every offending value at once, each as
`{"path": "agents[0].capabilities[2].params.scope", "message": "..."}`; `spec` is a
`runs.engine.spec.RunSpec` when there are none, else None. The run's fields are checked here, each
profile in `runs.engine.profile_validation`.
"""

import os
from pathlib import Path

from runs.demo import demo_names
from runs.engine import hooks
from runs.engine.provider_policy import base_url_refusal, key_env_refusal, reply_errors
from runs.engine.run_workspace import seed_refusal
from runs.engine.tools.errors import ToolError, bounded
from runs.engine.profile_validation import as_list, is_int, is_number, validate_profile
from runs.engine.spec import (DEFAULT_MAX_PARALLEL, ENV_NAME, LIMIT_FIELDS, MAX_TASK_BYTES, MAX_UINT64, PROFILE_FIELDS,
                              SLUG, TOP_LEVEL, Limits, RunSpec)


class _Errors(list):
    def add(self, path, message):
        self.append({"path": path, "message": message})


def validate_spec(data):
    """(RunSpec, []) for a launchable spec, (None, errors) naming every offending value otherwise."""
    errors = _Errors()
    if not isinstance(data, dict):
        errors.add("", "a run spec is a JSON object")
        return None, errors
    for key in sorted(set(data) - TOP_LEVEL):
        errors.add(key, f"unknown field {key!r}")
    task = data.get("task")
    if not isinstance(task, str) or not task.strip():
        errors.add("task", "the task (the root agent's prompt) is required")
    else:
        try:
            bounded(task, "the task", MAX_TASK_BYTES)  # what the engine's tools say of a text over its bound
        except ToolError as exc:
            errors.add("task", exc.message)
    provider = _validate_provider(data.get("provider"), errors)
    engine = data.get("engine", "builtin")
    if engine not in ("builtin", "gg"):
        errors.add("engine", "engine is 'builtin' or 'gg'")
    elif engine == "gg" and not os.environ.get("GG_BINARY"):
        errors.add("engine", "engine 'gg' needs GG_BINARY set to the gg executable")
    limits = _validate_limits(data.get("limits", {}), errors)
    workspace = _validate_workspace(data.get("workspace"), errors)
    profiles = _validate_profiles(data.get("agents"), provider, engine, errors)
    for path, message in hooks.validation_errors(data.get("hooks"), "hooks", hooks.SESSION_EVENTS):
        errors.add(path, message)
    if "name" in data and not isinstance(data["name"], str):
        errors.add("name", "name is a string")
    if errors:
        return None, list(errors)
    spec = RunSpec(task=task, profiles=profiles, limits=limits, provider=provider, workspace=workspace,
                   engine=engine, data=data)
    return spec, []


def _validate_provider(provider, errors):
    if not isinstance(provider, dict):
        errors.add("provider", "provider is required: {\"kind\": \"scripted\", ...} or {\"kind\": \"openai\", ...}")
        return {}
    kind = provider.get("kind")
    if kind == "scripted":
        has_script, has_demo = "script" in provider, "demo" in provider
        if has_script == has_demo:
            errors.add("provider", "a scripted provider names exactly one of script or demo")
        elif has_demo and not (isinstance(provider["demo"], str) and SLUG.match(provider["demo"])
                               and provider["demo"] in demo_names()):
            errors.add("provider.demo", f"no shipped demo script {provider['demo']!r}")
        elif has_script and not isinstance(provider["script"], dict):
            errors.add("provider.script", "a script maps a profile slug (or agent id) to its list of replies")
        elif has_script:
            for key, replies in provider["script"].items():
                if not isinstance(replies, list):
                    errors.add(f"provider.script.{key}", "a script entry is a list of replies")
                    continue
                for i, reply in enumerate(replies):
                    for field_, message in reply_errors(reply):
                        errors.add(f"provider.script.{key}[{i}]" + (f".{field_}" if field_ else ""), message)
    elif kind == "openai":
        for key in ("baseUrl", "model"):
            if not isinstance(provider.get(key), str) or not provider.get(key):
                errors.add(f"provider.{key}", f"{key} is required for an openai provider")
        env = provider.get("apiKeyEnv")
        if env is not None and not (isinstance(env, str) and ENV_NAME.match(env)):
            errors.add("provider.apiKeyEnv", "apiKeyEnv names an environment variable")
        elif env is not None and (refusal := key_env_refusal(env)):
            errors.add("provider.apiKeyEnv", refusal)
        base = provider.get("baseUrl")
        if isinstance(base, str) and base and (refusal := base_url_refusal(base)):
            errors.add("provider.baseUrl", refusal)
    else:
        errors.add("provider.kind", "provider kind is 'scripted' or 'openai'")
    return provider


def _validate_limits(limits, errors):
    if not isinstance(limits, dict):
        errors.add("limits", "limits is an object")
        return Limits()
    for key, value in limits.items():
        path = f"limits.{key}"
        if key not in LIMIT_FIELDS and key not in ("maxErrorRate", "maxCost"):
            errors.add(path, f"unknown limit {key!r}")  # even unset (null, or a number past a double's range)
        elif value is None:
            continue
        elif key in LIMIT_FIELDS:
            if not is_int(value) or not LIMIT_FIELDS[key] <= value <= MAX_UINT64:
                errors.add(path, f"{key} is a whole number from {LIMIT_FIELDS[key]} to {MAX_UINT64:,} (gg's uint64)")
        elif key == "maxErrorRate":
            if not is_number(value) or not 0 <= value < 1:
                errors.add(path, "maxErrorRate is a fraction from 0 up to (not including) 1")
        elif key == "maxCost":
            if not is_number(value) or value <= 0:
                errors.add(path, "maxCost is a positive number of US dollars")
    has_rate, has_window = limits.get("maxErrorRate") is not None, limits.get("errorRateWindow") is not None
    if has_rate != has_window:
        missing = "errorRateWindow" if has_rate else "maxErrorRate"
        errors.add(f"limits.{missing}", "maxErrorRate and errorRateWindow are set together or not at all")

    def get(key, default=None):
        value = limits.get(key)
        return value if value is not None and not errors_for(key) else default

    def errors_for(key):
        return any(e["path"] == f"limits.{key}" for e in errors)

    return Limits(max_turns=get("maxTurns"), max_runtime_secs=get("maxRuntimeSecs"),
                  max_parallel=get("maxParallel", DEFAULT_MAX_PARALLEL),
                  max_consecutive_errors=get("maxConsecutiveErrors"), max_error_rate=get("maxErrorRate"),
                  error_rate_window=get("errorRateWindow"), max_cost=get("maxCost"))


def _validate_workspace(workspace, errors):
    if workspace is None:
        return {"files": {}}
    if not isinstance(workspace, dict) or set(workspace) - {"files"}:
        errors.add("workspace", "workspace is {\"files\": {relative path: contents}}")
        return {"files": {}}
    files = workspace.get("files", {})
    if not isinstance(files, dict):
        errors.add("workspace.files", "files maps a relative path to its contents")
        return {"files": {}}
    claimed = {}
    for path, contents in files.items():
        parts = Path(path).parts
        if not path or Path(path).is_absolute() or ".." in parts:
            errors.add(f"workspace.files.{path}", "a workspace path is relative and stays inside the workspace")
        elif refusal := seed_refusal(path, claimed):
            errors.add(f"workspace.files.{path}", refusal)
        if not isinstance(contents, str):
            errors.add(f"workspace.files.{path}", "file contents are a string")
    return {"files": dict(files)}


def _validate_profiles(agents, provider, engine, errors):
    if not isinstance(agents, list) or not agents:
        errors.add("agents", "at least one agent profile is required; the first is the root")
        return []
    slugs = [a.get("slug") if isinstance(a, dict) else None for a in agents]
    profiles = []
    seen = set()
    for i, raw in enumerate(agents):
        path = f"agents[{i}]"
        if not isinstance(raw, dict):
            errors.add(path, "an agent profile is an object")
            continue
        for key in sorted(set(raw) - PROFILE_FIELDS):
            errors.add(f"{path}.{key}", f"unknown profile field {key!r}")
        slug = raw.get("slug")
        if not isinstance(slug, str) or not SLUG.match(slug):
            errors.add(f"{path}.slug", "a slug is lowercase letters and digits in hyphen-joined groups")
        elif slug in seen:
            errors.add(f"{path}.slug", f"duplicate slug {slug!r}")
        else:
            seen.add(slug)
        profile = validate_profile(raw, path, slugs, provider, engine, errors)
        if profile is not None:
            profiles.append(profile)
    machines = {p.slug for p in profiles if p.mode == "machine"}
    for i, raw in enumerate(agents):
        if not isinstance(raw, dict):
            continue
        for j, entry in enumerate(as_list(raw.get("subagents"))):
            target = isinstance(entry, dict) and (entry.get("agent") or entry.get("agentId"))
            if isinstance(target, str) and target in machines:
                errors.add(f"agents[{i}].subagents[{j}].agent", f"{target!r} is a machine shell, not a worker")
    for p in profiles:
        for s_index, state in enumerate(p.states):
            if state.agent in machines:
                errors.add(f"{_states_path(agents, p.slug)}[{s_index}].agent",
                           f"a state's agent is a worker profile; {state.agent!r} is a machine")
    return profiles


def _states_path(agents, slug):
    for i, raw in enumerate(agents):
        if isinstance(raw, dict) and raw.get("slug") == slug:
            for c, cap in enumerate(as_list(raw.get("capabilities"))):
                if isinstance(cap, dict) and cap.get("id") == "fsm":
                    return f"agents[{i}].capabilities[{c}].params.states"
    return "agents"
