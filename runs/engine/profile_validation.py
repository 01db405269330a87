"""Validating one profile of a run spec: its mode and arm, its capabilities and their params, its
tool and operation allowlists, its roster and a machine shell's states (`validate_profile`, called
by `runs.engine.validation.validate_spec` for each of `agents`)."""

import math

from surfaces import docviews
from surfaces.arms import LANGUAGES
from surfaces.catalogue import BY_ID, CAPABILITIES, ENDINGS, TOOLS_BY_NAME
from runs.engine import hooks
from runs.engine.spec import (ENGINE_LANGUAGES, MAX_UINT64, MEMORY_SCOPES, MODES, MODULE_KINDS, ROSTER_SCOPES,
                              Capability, Profile, RosterEntry, State, Transition)


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    """A JSON number: NaN and the infinities (a form's "nan", "inf" or "1e400") are none, and no JSON holds them."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def validate_profile(raw, path, slugs, provider, engine, errors):
    capabilities = _validate_capabilities(raw.get("capabilities", []), f"{path}.capabilities", slugs, errors)
    caps_path = {cap_id: index for index, cap_id in enumerate(
        c.get("id") if isinstance(c, dict) and isinstance(c.get("id"), str) else None
        for c in as_list(raw.get("capabilities")))}
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
            names = [str(f) for f in flags]
            flags = "+".join(f for f in docviews.FLAGS if f in names) if set(names) <= set(docviews.FLAGS) \
                else "+".join(names)
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
    for where, message in hooks.validation_errors(raw.get("hooks"), f"{path}.hooks", hooks.AGENT_EVENTS):
        errors.add(where, message)
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


def as_list(value):
    return value if isinstance(value, list) else []


def _written_params(raw, cap_id):
    for cap in as_list(raw.get("capabilities")):
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
        info = CAPABILITIES.get(cap_id) if isinstance(cap_id, str) else None
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
    if key == "dir":  # the skill library's folder (the engine reads none outside the workspace)
        inside = isinstance(value, str) and not value.startswith("/") and ".." not in value.split("/")
        return None if inside and "\0" not in value else "dir is a folder inside the workspace (relative, no ..)"
    if key in ("states", "docViewTypes", "language"):
        return None  # checked with the machine / the mode
    if key == "summaryHeadroom":
        return None if is_number(value) and 0 < value < 1 else "summaryHeadroom is a fraction between 0 and 1"
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"{key} is true or false"
    if is_int(default) or default is None and key in ("maxDepth", "windowLimit"):
        return None if is_int(value) and 0 <= value <= MAX_UINT64 else f"{key} is a whole number up to {MAX_UINT64:,}"
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
        if not isinstance(name, str):
            errors.add(npath, f"each entry of {key} is a name (a string)")
        elif key == "tools":
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
