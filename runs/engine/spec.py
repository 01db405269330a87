"""The run spec: a launch request for the built-in engine, validated the way gg refuses a launch.

`validate_spec(data) -> (spec, errors)`. `errors` names every offending value at once, each as
`{"path": "agents[0].capabilities[2].params.scope", "message": "..."}`; `spec` is a `RunSpec`
when there are none, else None.

The format is gg's capability set (spec/console.md §3, camelCase field names) plus what a launch
needs beside it::

    {
      "task": "What the root agent is asked to do.",             # required: the prompt
      "agents": [                                                 # profiles; agents[0] is the root
        {
          "slug": "coder",                                        # lowercase words joined by -
          "name": "Coder",                                        # display text (default: the slug)
          "modelId": "scripted/coder",                            # default: the provider's model
          "executionMode": "tool_calling",                        # or "responses_as_code"
          "programLanguage": "python",                            # code agents (the sandbox's arm)
          "docViewTypes": "return+errors",                        # "none", flags joined by +, a list
                                                                  # of flags, or {return, parameters,
                                                                  # errors}; code agents only
          "capabilities": [{"id": "memories", "enabled": true,
                            "implementation": "scratchpad",
                            "params": {"scope": "inherited"}}],
          "tools": ["read_file", "write_file"],                   # tool allowlist (tool names);
                                                                  # absent = every tool offered
          "operations": ["files.read_file"],                      # operation allowlist (ids); absent
                                                                  # = everything the capabilities buy,
                                                                  # [] grants nothing
          "subagents": [{"agent": "reviewer", "description": "...",
                         "scopes": ["subagent"]}]                 # subagent | implementer | reviewer
        },
        {"slug": "machine", "name": "Machine",                    # a machine shell (FSM): no model,
         "capabilities": [{"id": "fsm", "enabled": true,          # only the fsm capability
           "params": {"states": [{"name": "plan", "agent": "coder",
                                  "transitions": [{"to": "review", "transfer": ["history"]}]},
                                 {"name": "review", "agent": "reviewer", "transitions": []}]}}]}
      ],
      "limits": {"maxTurns": 20, "maxRuntimeSecs": 600, "maxParallel": 4,
                 "maxConsecutiveErrors": 3, "maxErrorRate": 0.5, "errorRateWindow": 10},
      "provider": {"kind": "scripted", "demo": "code-root"}       # or {"kind": "scripted",
                                                                  # "script": {...}} or {"kind":
                                                                  # "openai", "baseUrl", "model",
                                                                  # "apiKeyEnv"}
      "workspace": {"files": {"README.md": "..."}},               # optional seed files
      "engine": "builtin"                                         # or "gg": the GG_BINARY executable
    }

`executionMode`, `programLanguage` and `docViewTypes` are the profile-level spelling of gg's
`responses-as-code` capability and its `language` / `docViewTypes` params; either may be written
and they must agree. A roster entry may name its target as `agent` or `agentId`. The FSM root
case: when agents[0] is a machine shell the root runs its entry state's agent.

`RunSpec.capability_set()` is the resolved set in gg's own shape (capability-set.schema.json),
which `session_started.capabilitySet` carries.

A roster entry whose scopes hold `reviewer` but not `subagent` dispatches its target in the review
role (it ends on approve / request_changes); everything else runs in the standard role.
"""

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from surfaces import docviews
from surfaces.arms import LANGUAGES
from surfaces.catalogue import BY_ID, CAPABILITIES, ENDINGS, TOOLS_BY_NAME

MODES = ("tool_calling", "responses_as_code")
MODULE_KINDS = ("history", "memories", "tasks", "board", "skills", "archive")
MEMORY_SCOPES = ("isolated", "shared", "inherited", "read-only")
ROSTER_SCOPES = ("subagent", "implementer", "reviewer")
SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DEMO_DIR = Path(__file__).resolve().parent.parent / "demo"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# The sandbox runs CPython programs (design.md "Sandbox"); the other arms need gg itself.
ENGINE_LANGUAGES = ("python",)

TOP_LEVEL = {"name", "task", "agents", "limits", "provider", "workspace", "engine", "hooks", "modelSlots",
             "preset", "presetId"}
PROFILE_FIELDS = {"id", "slug", "name", "modelId", "modelSlot", "executionMode", "programLanguage",
                  "docViewTypes", "capabilities", "tools", "operations", "subagents", "customInstructions",
                  "systemPromptTemplate", "openingTurn", "hooks", "promptCacheTtl", "reasoning",
                  "loopDetection", "modelSlots"}
LIMIT_FIELDS = {"maxTurns": 1, "maxRuntimeSecs": 1, "maxParallel": 1, "maxConsecutiveErrors": 1,
                "errorRateWindow": 1, "replayMaxBytes": 0, "maxModelRetries": 0, "modelCallTimeoutSecs": 1,
                "modelRetryMaxDelaySecs": 0, "modelStreamIdleSecs": 1, "providerCacheMissLimit": 0}
DEFAULT_MAX_PARALLEL = 4


@dataclass(frozen=True)
class Capability:
    id: str
    enabled: bool
    implementation: str | None
    params: dict  # defaults merged under what was written


@dataclass(frozen=True)
class RosterEntry:
    agent: str
    description: str
    scopes: tuple

    @property
    def role(self):
        return "review" if "reviewer" in self.scopes and "subagent" not in self.scopes else "standard"


@dataclass(frozen=True)
class Transition:
    to: str
    transfer: tuple
    description: str = ""


@dataclass(frozen=True)
class State:
    name: str
    agent: str
    transitions: tuple


@dataclass
class Profile:
    slug: str
    name: str
    model_id: str
    mode: str  # tool_calling | responses_as_code | machine
    language: str | None
    doc_view_types: str | None
    capabilities: dict  # id -> Capability (disabled ones too)
    tools: tuple | None
    operations: tuple | None
    roster: tuple
    states: tuple = ()  # a machine shell's states, entry first
    raw: dict = field(default_factory=dict, repr=False)

    def enabled(self, capability_id):
        cap = self.capabilities.get(capability_id)
        return bool(cap and cap.enabled)

    def params(self, capability_id):
        cap = self.capabilities.get(capability_id)
        return dict(cap.params) if cap else dict(CAPABILITIES[capability_id].params)

    def grant_config(self):
        """Enabled capabilities as `surfaces.grants.Grants` reads them: id -> implementation + params."""
        return {cap.id: {"implementation": cap.implementation, **cap.params}
                for cap in self.capabilities.values() if cap.enabled}

    def roster_entry(self, slug):
        return next((entry for entry in self.roster if entry.agent == slug), None)

    def state(self, name):
        return next((s for s in self.states if s.name == name), None)


@dataclass(frozen=True)
class Limits:
    max_turns: int | None = None
    max_runtime_secs: int | None = None
    max_parallel: int = DEFAULT_MAX_PARALLEL
    max_consecutive_errors: int | None = None
    max_error_rate: float | None = None
    error_rate_window: int | None = None
    max_cost: float | None = None


@dataclass
class RunSpec:
    task: str
    profiles: list
    limits: Limits
    provider: dict
    workspace: dict
    engine: str
    data: dict = field(repr=False)

    @property
    def root(self):
        return self.profiles[0]

    def profile(self, slug):
        return next(p for p in self.profiles if p.slug == slug)

    def capability_set(self):
        """The resolved set in gg's shape (capability-set.schema.json): what session_started carries."""
        agents = [_gg_profile(p) for p in self.profiles]
        limits = {key: value for key, value in self.data.get("limits", {}).items() if value is not None}
        limits.setdefault("maxParallel", self.limits.max_parallel)
        out = {"agents": agents, "limits": limits}
        for key in ("hooks", "modelSlots", "preset", "presetId"):
            if key in self.data:
                out[key] = self.data[key]
        return out


def _gg_profile(p):
    """One profile in gg's own shape: the mode is the responses-as-code capability, the roster
    names its targets by agentId, openingTurn is always written (the schema requires it)."""
    caps = []
    for cap in p.capabilities.values():
        entry = {"id": cap.id, "enabled": cap.enabled, "params": dict(cap.params)}
        if cap.implementation is not None:
            entry["implementation"] = cap.implementation
        caps.append(entry)
    out = {"slug": p.slug, "name": p.name, "modelId": p.model_id, "capabilities": caps,
           "openingTurn": p.raw.get("openingTurn") or {"modules": [], "functions": []}}
    if p.tools is not None:
        out["tools"] = list(p.tools)
    if p.operations is not None:
        out["operations"] = list(p.operations)
    if p.roster:
        out["subagents"] = [{"agentId": e.agent, "description": e.description, "scopes": list(e.scopes)}
                            for e in p.roster]
    for key in ("customInstructions", "systemPromptTemplate", "hooks", "promptCacheTtl", "reasoning",
                "loopDetection", "modelSlot", "modelSlots", "id"):
        if key in p.raw:
            out[key] = p.raw[key]
    return out


class _Errors(list):
    def add(self, path, message):
        self.append({"path": path, "message": message})


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
    provider = _validate_provider(data.get("provider"), errors)
    engine = data.get("engine", "builtin")
    if engine not in ("builtin", "gg"):
        errors.add("engine", "engine is 'builtin' or 'gg'")
    elif engine == "gg" and not os.environ.get("GG_BINARY"):
        errors.add("engine", "engine 'gg' needs GG_BINARY set to the gg executable")
    limits = _validate_limits(data.get("limits", {}), errors)
    workspace = _validate_workspace(data.get("workspace"), errors)
    profiles = _validate_profiles(data.get("agents"), provider, engine, errors)
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
                               and (DEMO_DIR / f"{provider['demo']}.script.json").is_file()):
            errors.add("provider.demo", f"no shipped demo script {provider['demo']!r}")
        elif has_script and not isinstance(provider["script"], dict):
            errors.add("provider.script", "a script maps a profile slug (or agent id) to its list of replies")
        elif has_script:
            for key, replies in provider["script"].items():
                if not isinstance(replies, list):
                    errors.add(f"provider.script.{key}", "a script entry is a list of replies")
    elif kind == "openai":
        for key in ("baseUrl", "model"):
            if not isinstance(provider.get(key), str) or not provider.get(key):
                errors.add(f"provider.{key}", f"{key} is required for an openai provider")
        env = provider.get("apiKeyEnv")
        if env is not None and not (isinstance(env, str) and ENV_NAME.match(env)):
            errors.add("provider.apiKeyEnv", "apiKeyEnv names an environment variable")
        base = provider.get("baseUrl")
        if isinstance(base, str) and base and not base.startswith(("http://", "https://")):
            errors.add("provider.baseUrl", "baseUrl is an http(s) URL")
    else:
        errors.add("provider.kind", "provider kind is 'scripted' or 'openai'")
    return provider


def _validate_limits(limits, errors):
    if not isinstance(limits, dict):
        errors.add("limits", "limits is an object")
        return Limits()
    for key, value in limits.items():
        path = f"limits.{key}"
        if value is None:
            continue
        if key in LIMIT_FIELDS:
            if not _is_int(value) or value < LIMIT_FIELDS[key]:
                errors.add(path, f"{key} is a whole number of at least {LIMIT_FIELDS[key]}")
        elif key == "maxErrorRate":
            if not _is_number(value) or not 0 <= value < 1:
                errors.add(path, "maxErrorRate is a fraction from 0 up to (not including) 1")
        elif key == "maxCost":
            if not _is_number(value) or value <= 0:
                errors.add(path, "maxCost is a positive number of US dollars")
        else:
            errors.add(path, f"unknown limit {key!r}")
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
    for path, contents in files.items():
        parts = Path(path).parts
        if not path or Path(path).is_absolute() or ".." in parts:
            errors.add(f"workspace.files.{path}", "a workspace path is relative and stays inside the workspace")
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
        seen.add(slug)
        profile = _validate_profile(raw, path, slugs, provider, engine, errors)
        if profile is not None:
            profiles.append(profile)
    machines = {p.slug for p in profiles if p.mode == "machine"}
    for i, raw in enumerate(agents):
        if not isinstance(raw, dict):
            continue
        for j, entry in enumerate(raw.get("subagents") or []):
            target = isinstance(entry, dict) and (entry.get("agent") or entry.get("agentId"))
            if target in machines:
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
            for c, cap in enumerate(raw.get("capabilities") or []):
                if isinstance(cap, dict) and cap.get("id") == "fsm":
                    return f"agents[{i}].capabilities[{c}].params.states"
    return "agents"


def _validate_profile(raw, path, slugs, provider, engine, errors):
    capabilities = _validate_capabilities(raw.get("capabilities", []), f"{path}.capabilities", slugs, errors)
    caps_path = {cap_id: index for index, cap_id in enumerate(
        c.get("id") if isinstance(c, dict) else None for c in raw.get("capabilities") or [])}
    rac = capabilities.get("responses-as-code")
    fsm = capabilities.get("fsm")
    mode = raw.get("executionMode")
    if fsm is not None and fsm.enabled:
        others = [c for c in capabilities.values() if c.enabled and c.id != "fsm"]
        if others or raw.get("subagents") or mode:
            errors.add(path, "a machine shell (fsm) has no model, mode, roster or other capabilities")
        mode = "machine"
    elif mode is None:
        mode = "responses_as_code" if rac is not None and rac.enabled else "tool_calling"
    elif mode not in MODES:
        errors.add(f"{path}.executionMode", "executionMode is tool_calling or responses_as_code")
    elif mode == "tool_calling" and rac is not None and rac.enabled:
        errors.add(f"{path}.executionMode", "a tool_calling profile cannot enable responses-as-code")

    language = doc_view_types = None
    if mode == "responses_as_code":
        rac_index = caps_path.get("responses-as-code")
        written = _written_params(raw, "responses-as-code") or {}
        rac_params = dict(rac.params) if rac is not None else dict(CAPABILITIES["responses-as-code"].params)
        for key, param in (("programLanguage", "language"), ("docViewTypes", "docViewTypes")):
            if key in raw and param in written and raw[key] != written[param]:
                errors.add(f"{path}.{key}", f"{key} {raw[key]!r} disagrees with the responses-as-code "
                                            f"param {param} {written[param]!r} (capabilities[{rac_index}])")
        # The engine's own arm is the default here, not gg's typescript.
        language = raw.get("programLanguage", written.get("language", ENGINE_LANGUAGES[0]))
        if language not in LANGUAGES:
            errors.add(f"{path}.programLanguage", f"unknown program language {language!r}")
        elif engine == "builtin" and language not in ENGINE_LANGUAGES:
            errors.add(f"{path}.programLanguage",
                       f"the built-in engine runs {', '.join(ENGINE_LANGUAGES)} programs; {language} needs gg")
        flags = raw["docViewTypes"] if "docViewTypes" in raw else written.get("docViewTypes")
        if isinstance(flags, list):  # a list of flag names
            flags = "+".join(f for f in docviews.FLAGS if f in flags) if set(flags) <= set(docviews.FLAGS) \
                else "+".join(map(str, flags))
        try:
            doc_view_types = docviews.format(docviews.resolve(flags))
        except ValueError as exc:
            where = f"{path}.docViewTypes" if "docViewTypes" in raw else \
                f"{path}.capabilities[{rac_index}].params.docViewTypes"
            errors.add(where, str(exc))
        rac_params.update(language=language, docViewTypes=doc_view_types)
        capabilities["responses-as-code"] = Capability("responses-as-code", True, None, rac_params)
    elif "programLanguage" in raw or "docViewTypes" in raw:
        field_name = "programLanguage" if "programLanguage" in raw else "docViewTypes"
        errors.add(f"{path}.{field_name}", f"{field_name} belongs to a responses_as_code profile")

    tools = _validate_allowlist(raw, "tools", path, errors)
    operations = _validate_allowlist(raw, "operations", path, errors)
    roster = _validate_roster(raw.get("subagents", []), f"{path}.subagents", slugs, errors)
    states = ()
    if mode == "machine":
        fsm_index = caps_path.get("fsm")
        states = _validate_states(fsm.params.get("states"), f"{path}.capabilities[{fsm_index}].params.states",
                                  slugs, errors)
    model_id = raw.get("modelId") or ""
    if not isinstance(model_id, str):
        errors.add(f"{path}.modelId", "modelId is a string")
        model_id = ""
    if not model_id and mode != "machine":
        model_id = provider.get("model") if provider.get("kind") == "openai" else f"scripted/{raw.get('slug')}"
    name = raw.get("name") or raw.get("slug") or ""
    if not isinstance(name, str):
        errors.add(f"{path}.name", "name is a string")
    if not isinstance(raw.get("slug"), str):
        return None
    return Profile(slug=raw["slug"], name=name, model_id=model_id or "", mode=mode, language=language,
                   doc_view_types=doc_view_types, capabilities=capabilities, tools=tools, operations=operations,
                   roster=roster, states=states, raw=raw)


def _written_params(raw, cap_id):
    for cap in raw.get("capabilities") or []:
        if isinstance(cap, dict) and cap.get("id") == cap_id:
            return cap.get("params")
    return None


def _validate_capabilities(caps, path, slugs, errors):
    out = {}
    if not isinstance(caps, list):
        errors.add(path, "capabilities is a list of {id, enabled, params}")
        return out
    for i, cap in enumerate(caps):
        cpath = f"{path}[{i}]"
        if not isinstance(cap, dict):
            errors.add(cpath, "a capability is an object {id, enabled, params}")
            continue
        for key in sorted(set(cap) - {"id", "enabled", "implementation", "params"}):
            errors.add(f"{cpath}.{key}", f"unknown capability field {key!r}")
        cap_id = cap.get("id")
        info = CAPABILITIES.get(cap_id)
        if info is None:
            errors.add(f"{cpath}.id", f"unknown capability {cap_id!r}")
            continue
        if cap_id in out:
            errors.add(f"{cpath}.id", f"capability {cap_id!r} is listed twice")
            continue
        enabled = cap.get("enabled", True)
        if not isinstance(enabled, bool):
            errors.add(f"{cpath}.enabled", "enabled is true or false")
            enabled = False
        implementation = cap.get("implementation")
        if implementation is not None:
            if not info.implementations:
                errors.add(f"{cpath}.implementation", f"{cap_id} has no implementations to choose from")
            elif implementation not in info.implementations:
                errors.add(f"{cpath}.implementation",
                           f"unknown implementation {implementation!r}; {cap_id} offers "
                           f"{', '.join(repr(x) for x in info.implementations)}")
        elif info.implementations:
            implementation = info.implementations[0]
        params = cap.get("params", {}) or {}
        if not isinstance(params, dict):
            errors.add(f"{cpath}.params", "params is an object")
            params = {}
        for key, value in params.items():
            if key not in info.params:
                errors.add(f"{cpath}.params.{key}", f"unknown param {key!r} for {cap_id}")
            else:
                message = _param_problem(cap_id, key, value, slugs)
                if message:
                    errors.add(f"{cpath}.params.{key}", message)
        merged = {**info.params, **params}
        if enabled:
            for key, default in info.params.items():
                if default is None and merged.get(key) is None:
                    errors.add(f"{cpath}.params.{key}", f"{key} is required when {cap_id} is on")
        out[cap_id] = Capability(cap_id, enabled, implementation, merged)
    return out


def _param_problem(cap_id, key, value, slugs):
    """Why one written param is not a value gg accepts, or None."""
    default = CAPABILITIES[cap_id].params[key]
    if key == "scope":
        return None if value in MEMORY_SCOPES else f"scope is one of {', '.join(MEMORY_SCOPES)}"
    if key == "mode" and cap_id == "tasks":
        return None if value in ("simple", "issues") else "mode is simple or issues"
    if key == "ownership":
        return None if value in ("owned", "unowned") else "ownership is owned or unowned"
    if key == "mergeAgent":
        return None if value in slugs else f"mergeAgent names a profile slug; {value!r} is none"
    if key in ("states", "docViewTypes", "language"):
        return None  # checked with the machine / the mode
    if key == "summaryHeadroom":
        return None if _is_number(value) and 0 < value < 1 else "summaryHeadroom is a fraction between 0 and 1"
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"{key} is true or false"
    if _is_int(default) or default is None and key in ("maxDepth", "windowLimit"):
        return None if _is_int(value) and value >= 0 else f"{key} is a whole number"
    if isinstance(default, str):
        return None if isinstance(value, str) else f"{key} is a string"
    return None


def _validate_allowlist(raw, key, path, errors):
    if key not in raw or raw[key] is None:
        return None
    names = raw[key]
    if not isinstance(names, list):
        errors.add(f"{path}.{key}", f"{key} is a list")
        return None
    for i, name in enumerate(names):
        npath = f"{path}.{key}[{i}]"
        if key == "tools":
            if name in TOOLS_BY_NAME:
                continue
            if name in BY_ID:
                errors.add(npath, f"{name!r} is an operation id; tools lists gg tool names (read_file)")
            elif any(name in e.tools for e in ENDINGS.values()):
                errors.add(npath, f"{name!r} is an ending call, offered by the agent's role; it is not granted")
            else:
                errors.add(npath, f"unknown tool {name!r}")
        else:
            op = BY_ID.get(name)
            if op is not None and op.binding.kind == "machine":
                errors.add(npath, f"{name!r} is given by where the agent stands in a machine; it cannot be granted")
            elif op is not None and op.retired:
                errors.add(npath, f"{name!r} is no longer an operation gg offers")
            elif op is not None:
                continue
            elif name in TOOLS_BY_NAME:
                errors.add(npath, f"{name!r} is a tool name; operations lists operation ids (files.read_file)")
            else:
                errors.add(npath, f"unknown operation {name!r}")
    return tuple(names)


def _validate_roster(roster, path, slugs, errors):
    out = []
    if not isinstance(roster, list):
        errors.add(path, "subagents is a list of {agent, description, scopes}")
        return ()
    for i, entry in enumerate(roster):
        epath = f"{path}[{i}]"
        if not isinstance(entry, dict):
            errors.add(epath, "a roster entry is an object {agent, description, scopes}")
            continue
        target = entry.get("agent") or entry.get("agentId")
        if target not in slugs:
            errors.add(f"{epath}.agent", f"the roster names {target!r}, which is no profile's slug")
        scopes = entry.get("scopes")
        if not isinstance(scopes, list) or not scopes:
            errors.add(f"{epath}.scopes", "a roster entry needs at least one scope: subagent, implementer, reviewer")
            scopes = []
        for j, scope in enumerate(scopes):
            if scope not in ROSTER_SCOPES:
                errors.add(f"{epath}.scopes[{j}]", f"unknown scope {scope!r}; scopes are {', '.join(ROSTER_SCOPES)}")
        description = entry.get("description", "")
        if not isinstance(description, str):
            errors.add(f"{epath}.description", "description is a string")
            description = ""
        out.append(RosterEntry(str(target), description, tuple(scopes)))
    return tuple(out)


def _validate_states(states, path, slugs, errors):
    if not isinstance(states, list) or not states:
        errors.add(path, "a machine needs at least one state; the first is its entry")
        return ()
    out, names = [], []
    for i, state in enumerate(states):
        spath = f"{path}[{i}]"
        if not isinstance(state, dict):
            errors.add(spath, "a state is {name, agent, transitions}")
            continue
        name = state.get("name")
        if not isinstance(name, str) or not name.strip():
            errors.add(f"{spath}.name", "a state needs a name")
        elif name in names:
            errors.add(f"{spath}.name", f"duplicate state {name!r}")
        names.append(name)
        if state.get("agent") not in slugs:
            errors.add(f"{spath}.agent", f"the state runs {state.get('agent')!r}, which is no profile's slug")
    for i, state in enumerate(states):
        if not isinstance(state, dict):
            continue
        transitions = []
        for j, edge in enumerate(state.get("transitions") or []):
            epath = f"{path}[{i}].transitions[{j}]"
            if not isinstance(edge, dict):
                errors.add(epath, "a transition is {to, transfer, description}")
                continue
            if edge.get("to") not in names:
                errors.add(f"{epath}.to", f"no state named {edge.get('to')!r}")
            transfer = edge.get("transfer", [])
            if not isinstance(transfer, list):
                errors.add(f"{epath}.transfer", "transfer is a list of module kinds")
                transfer = []
            for k, kind in enumerate(transfer):
                if kind not in MODULE_KINDS:
                    errors.add(f"{epath}.transfer[{k}]", f"unknown module kind {kind!r}")
            transitions.append(Transition(edge.get("to"), tuple(transfer), edge.get("description", "")))
        out.append(State(state.get("name"), state.get("agent"), tuple(transitions)))
    reachable, frontier = set(), [out[0].name] if out else []
    while frontier:
        current = frontier.pop()
        if current in reachable:
            continue
        reachable.add(current)
        frontier += [t.to for s in out if s.name == current for t in s.transitions]
    for i, state in enumerate(out):
        if state.name not in reachable and isinstance(state.name, str):
            errors.add(f"{path}[{i}]", f"state {state.name!r} cannot be reached from the entry state")
    return tuple(out)
