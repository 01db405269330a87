"""The launch form: POST fields <-> a run spec (`runs.engine.spec`'s format), error paths -> inputs.

Every input is named after where its value goes, dot-separated with list indexes:
`agents.0.slug`, `agents.0.cap.memories.params.scope`, `agents.0.subagents.1.scopes`,
`agents.1.states.0.transitions.0.to`, `limits.maxTurns`, `provider.baseUrl`.

The form only turns text into the spec's types; every rule is `validate_spec`'s. While it builds
the spec it records which input wrote each spec path, so an error path from validate_spec
(`agents[0].capabilities[2].params.scope`) lands beside the input that wrote the value. Pre-fill
goes the other way: any spec (a launch spec, a saved configuration, an imported run's gg-shaped
capability set) is read tolerantly into the same inputs.

The parsing is `runs.launch.post`; the vocabulary both share (choices, fields, how a profile is read)
is `runs.launch.fields`.
"""

import json
import re
from dataclasses import dataclass, field

from surfaces import docviews
from surfaces.catalogue import CAPABILITIES

from runs.demo import demo_names
from runs.engine.spec import ENGINE_LANGUAGES, MODULE_KINDS, ROSTER_SCOPES
from runs.engine.validation import validate_spec
from runs.launch.fields import (CHECKLIST, EXTRA_HELP, FORM_PROFILE_FIELDS, FORM_TOP_LEVEL, LIMIT_HELP, LIMITS,
                                MODE_CHOICES, PARAM_CHOICES, PARAM_HELP, PROVIDER_KINDS, RAC_PARAMS,
                                REQUIRED_PARAM_TYPES, WORKSPACE_FIELD, hooks_help, allowlist_of, capabilities_by_id,
                                default_profile, derived_allowlist, doc_view_flags, dom_id, mode_of, switch_mode)
from runs.launch.labels import field_labels
from runs.launch.post import PostParser
from runs.launch.prefill import readable
from runs.launch.starter import is_starter, starter_script
from runs.stream.record import whole_number



@dataclass
class Field:
    """One input as the template draws it."""

    name: str
    label: str = ""
    kind: str = "text"  # text | number | select | checkbox | checkboxes | textarea | radio | file
    value: object = ""
    choices: tuple = ()  # (value, label) pairs
    help: str = ""
    step: str = "1"
    errors: list = field(default_factory=list)
    redraw: str = ""  # an action the whole form is redrawn with when this input changes (htmx)

    @property
    def dom_id(self):
        return dom_id(self.name)

    @property
    def checked(self):
        return self.value is True or self.value in ("on", "true")


class LaunchForm:
    """A launch form's state: the spec it stands for, the inputs that wrote it, and the errors."""

    def __init__(self, spec, *, raw=None, errors=None, sources=None, configuration=None):
        self.spec = spec
        self.configuration = configuration or {"name": "", "description": ""}  # the save-as inputs
        self.raw = raw or {}  # input name -> text as typed, where it did not convert
        self.errors = list(errors or [])  # {"path", "message", "field"}
        self.sources = sources or {}  # spec path -> input name
        self._labels = None  # input name -> its label in context, built on the first error
        self.notes = []  # what a redraw changed on the operator's behalf (a converted allowlist)

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def blank(cls):
        agents = [default_profile("root", "Root")]
        # The starter script fits the default profile, so the untouched form launches a run that completes.
        spec = {"task": "", "agents": agents, "limits": {},
                "provider": {"kind": "scripted", "script": starter_script(agents)}}
        return cls(spec)

    @classmethod
    def from_spec(cls, spec):
        """Pre-fill from any stored spec; gg-shaped sets (a run's capability_set) are read as-is."""
        spec = readable(spec)
        spec.setdefault("agents", [default_profile("root", "Root")])
        spec.setdefault("task", "")
        spec.setdefault("limits", {})
        spec.setdefault("provider", {"kind": "scripted", "script": {}})
        return cls(spec)

    @classmethod
    def from_post(cls, data):
        """Parse a submitted form into a spec; conversion problems become errors on their input."""
        parser = PostParser(data)
        form = cls(parser.parse(), raw=parser.raw, sources=parser.sources, configuration=parser.configuration)
        for path, message in parser.errors:
            form.add_error(path, message)
        return form

    # ---- validation --------------------------------------------------------------------

    def validate(self, extra_errors=()):
        """Run validate_spec; every error is kept with the input it belongs to. Returns the RunSpec or None."""
        run_spec, errors = validate_spec(self.spec)
        for error in [*errors, *extra_errors]:
            self.add_error(error["path"], error["message"])
        return run_spec if not self.errors else None

    def add_error(self, path, message):
        field_name = self.field_for(path)
        self.errors.append({"path": path, "message": message, "field": field_name,
                            "dom_id": dom_id(field_name) if field_name else "",
                            "label": self.label_for(field_name, path)})

    def label_for(self, field_name, path=""):
        """How the operator finds an input: "Profile 1 (root) → Operations, line 1"; the JSON path
        stays beside it as a hint."""
        if not field_name:
            return "The run as a whole"
        if self._labels is None:
            self._labels = {}  # set first: building the view asks errors_for, not label_for
            self._labels = field_labels(self.view())
        label = self._labels.get(field_name) or field_name
        line = re.search(r"\[(\d+)\]$", path or "")
        if field_name.endswith(".allowlist") and line:
            label += f", line {int(line.group(1)) + 1}"
        return label

    def field_for(self, path):
        """The input that wrote `path`, or of its nearest parent; "" when none did."""
        while path:
            if path in self.sources:
                return self.sources[path]
            path = re.sub(r"(\.[^.\[]*|\[\d+\])$", "", path) if re.search(r"[.\[]", path) else ""
        return ""

    def errors_for(self, name):
        return [e["message"] for e in self.errors if e["field"] == name]

    @property
    def unplaced_errors(self):
        return [e for e in self.errors if not e["field"]]

    # ---- actions (htmx re-renders) -------------------------------------------------------

    def apply(self, action):
        """`add-profile`, `remove-profile:<i>`, `fill-allowlist:<i>`; anything else just re-renders."""
        agents = self.spec["agents"]
        verb, _, arg = action.partition(":")
        i = whole_number(arg)  # the profile's index: None for anything else
        if verb == "add-profile":
            n = len(agents)
            taken = {a.get("slug") for a in agents}
            while f"agent-{n}" in taken:
                n += 1
            agents.append(default_profile(f"agent-{n}", f"Agent {n}"))
        elif verb == "remove-profile" and i is not None and len(agents) > 1 and i < len(agents):
            del agents[i]
        elif verb == "switch-mode" and i is not None and i < len(agents):
            self.notes += switch_mode(agents[i], i)
        elif verb == "fill-allowlist" and i is not None and i < len(agents):
            profile = agents[i]
            profile.pop("tools", None)
            profile.pop("operations", None)
            key, names = derived_allowlist(profile)
            if key:
                profile[key] = names
        self.errors, self.sources, self.raw, self._labels = [], {}, {}, None

    # ---- rendering ---------------------------------------------------------------------

    def view(self):
        """Everything the template draws, each input carrying its value and its errors."""
        agents = [a for a in self.spec.get("agents") or [] if isinstance(a, dict)]
        slugs = [a.get("slug") for a in agents if isinstance(a.get("slug"), str)]
        return {
            "name": self._field("name", "Run name", value=self.spec.get("name", ""),
                                help="optional; a unique name is made up when empty"),
            "task": self._field("task", "Task (the root agent's prompt)", "textarea", self.spec.get("task", "")),
            "profiles": [self._profile_view(i, a, slugs) for i, a in enumerate(agents)],
            "limits": [self._field(f"limits.{key}", label, "number", _limit_value(self.spec, key),
                                   step="any" if kind is float else "1", help=LIMIT_HELP.get(key, ""))
                       for key, label, kind in LIMITS],
            "provider": self._provider_view(),
            "workspace": self._field(WORKSPACE_FIELD, "Workspace (zip, optional)", "file",
                                     help="unpacked into the run's workspace; empty when none is given"),
            "workspace_files": self._field("workspace.files", "Seed files (JSON, optional)", "textarea",
                                           _json_text((self.spec.get("workspace") or {}).get("files")),
                                           help="{\"path\": \"contents\"}: written over the workspace"),
            "extra": self._field("extra", "Other run fields (JSON)", "textarea",
                                 _json_text(_extra(self.spec, FORM_TOP_LEVEL)),
                                 help=EXTRA_HELP.format("engine, modelSlots, ...")),
            "hooks": self._field("hooks", "Session hooks (JSON)", "textarea", _json_text(self.spec.get("hooks")),
                                 help=hooks_help("session-start", "session-start, session-end")),
            "limits_extra": self._field("limits.extra", "Other limits (JSON)", "textarea",
                                        _json_text(_extra(self.spec.get("limits") or {}, [k for k, *_ in LIMITS])),
                                        help=EXTRA_HELP.format("maxModelRetries, modelCallTimeoutSecs, ...")),
            "agents_slot": self._field("agents", kind="slot"),
            "limits_slot": self._field("limits", kind="slot"),
            "configuration": [
                self._field("configuration.name", "Configuration name", value=self.configuration["name"]),
                self._field("configuration.description", "Description", "textarea",
                            self.configuration["description"]),
            ],
            "slugs": slugs,
            "unplaced_errors": self.unplaced_errors,
        }

    def field_names(self):
        """Every input name the rendered form holds (the live validation refreshes each one's errors)."""
        view = self.view()
        names = [view[k].name for k in ("name", "task", "workspace", "workspace_files", "agents_slot",
                                        "limits_slot", "extra", "limits_extra", "hooks")]
        names += [f.name for f in view["configuration"]]
        names += [f.name for f in view["limits"]] + [f.name for f in view["provider"]["fields"]]
        names.append(view["provider"]["kind"].name)
        for p in view["profiles"]:
            names += [f.name for f in p["fields"].values()] + [p["slot"].name, p["allowlist"].name, p["extra"].name,
                                                               p["hooks"].name]
            for cap in p["capabilities"]:
                names += [cap["on"].name] + [f.name for f in cap["params"]]
            for row in p["roster"]:
                names += [f.name for f in row.values()]
            for state in p["states"]:
                names += [f.name for f in state["fields"].values()]
                for edge in state["edges"]:
                    names += [f.name for f in edge.values()]
        return names

    def _field(self, name, label="", kind="text", value="", **kwargs):
        if name in self.raw:
            value = self.raw[name]
        return Field(name, label, kind, value, errors=self.errors_for(name), **kwargs)

    def _profile_view(self, i, raw, slugs):
        p = f"agents.{i}"
        caps = capabilities_by_id(raw)
        mode = mode_of(raw)
        rac = (caps.get("responses-as-code") or {}).get("params") or {}
        flags = doc_view_flags(raw.get("docViewTypes", rac.get("docViewTypes")))
        key, names = allowlist_of(raw)
        fields = {
            "slug": self._field(f"{p}.slug", "Slug", value=raw.get("slug", "")),
            "name": self._field(f"{p}.name", "Name", value=raw.get("name", "")),
            "mode": self._field(f"{p}.executionMode", "Mode", "select", mode, choices=MODE_CHOICES,
                                redraw=f"switch-mode:{i}",
                                help="switching converts the allowlist to the new mode's vocabulary"),
            "modelId": self._field(f"{p}.modelId", "Model id", value=raw.get("modelId", ""),
                                   help="empty: the provider's model"),
            "language": self._field(f"{p}.programLanguage", "Program language", "select",
                                    raw.get("programLanguage", rac.get("language", ENGINE_LANGUAGES[0])),
                                    choices=tuple((x, x) for x in ENGINE_LANGUAGES),
                                    help="the arms the built-in engine can run"),
            "docViewTypes": self._field(f"{p}.docViewTypes", "docViewTypes", "checkboxes", flags,
                                        choices=tuple((x, x) for x in docviews.FLAGS)),
        }
        for param in RAC_PARAMS:
            default = CAPABILITIES["responses-as-code"].params[param]
            fields[param] = self._field(f"{p}.cap.responses-as-code.params.{param}", param, "number",
                                        rac.get(param, default), help=PARAM_HELP[("responses-as-code", param)])
        capabilities = []
        for info in CHECKLIST:
            written = caps.get(info.id)
            on = bool(written) and written.get("enabled", True) is not False
            params = dict(info.params, **((written or {}).get("params") or {}))
            cp = f"{p}.cap.{info.id}"
            inputs = []
            if info.implementations:
                impl = (written or {}).get("implementation", info.implementations[0])
                inputs.append(self._field(f"{cp}.implementation", "implementation", "select", impl,
                                          choices=tuple((x, x or "adaptive") for x in info.implementations)))
            for param, default in info.params.items():
                inputs.append(self._param_field(f"{cp}.params.{param}", info.id, param, default, params.get(param)))
            capabilities.append({"info": info, "on": self._field(cp, info.id, "checkbox", on), "params": inputs})
        roster = [self._roster_row(f"{p}.subagents.{j}", entry)
                  for j, entry in enumerate([*(raw.get("subagents") or []), {}]) if isinstance(entry, dict)]
        fsm = caps.get("fsm") or {}
        states = [self._state_view(f"{p}.states.{s}", state)
                  for s, state in enumerate([*(((fsm.get("params") or {}).get("states")) or []), {}])
                  if isinstance(state, dict)]
        return {
            "index": i, "is_root": i == 0, "mode": mode, "fields": fields, "capabilities": capabilities,
            "allowlist": self._field(f"{p}.allowlist", "Tools (tool calling)" if key == "tools" else "Operations",
                                     "textarea", "\n".join(map(str, names or ())),
                                     help="one name per line: tool names for tool calling, operation ids for "
                                          "responses as code; empty = everything the capabilities offer"),
            "roster": roster, "states": states, "slot": self._field(p, kind="slot"),
            "hooks": self._field(f"{p}.hooks", "Hooks (JSON)", "textarea", _json_text(raw.get("hooks")),
                                 help=hooks_help("agent-stop", "pre-write, post-write, pre-shell, "
                                                        "post-shell, pre-compact, post-compact, agent-start, agent-stop")),
            "extra": self._field(f"{p}.extra", "Other profile fields (JSON)", "textarea",
                                 _json_text(_extra(raw, FORM_PROFILE_FIELDS)),
                                 help=EXTRA_HELP.format("openingTurn, customInstructions, loopDetection, "
                                                        "modelSlots, ...")),
        }

    def _param_field(self, name, cap_id, param, default, value):
        choices = PARAM_CHOICES.get((cap_id, param))
        kind_of = type(default) if default is not None else REQUIRED_PARAM_TYPES.get(param, str)
        hint = PARAM_HELP.get((cap_id, param), "")
        if choices:
            return self._field(name, param, "select", value, choices=tuple((x, x) for x in choices), help=hint)
        if kind_of is bool:
            return self._field(name, param, "checkbox", bool(value), help=hint)
        if kind_of in (int, float):
            return self._field(name, param, "number", "" if value is None else value,
                               step="any" if kind_of is float else "1", help=hint)
        if param == "states":
            return self._field(name, param, "slot")  # the machine's states have their own rows
        return self._field(name, param, "text", "" if value is None else value, help=hint)

    def _roster_row(self, prefix, entry):
        return {
            "agent": self._field(f"{prefix}.agent", "Agent (slug)", value=entry.get("agent") or entry.get("agentId", "")),
            "scopes": self._field(f"{prefix}.scopes", "Scopes", "checkboxes", list(entry.get("scopes") or []),
                                  choices=tuple((x, x) for x in ROSTER_SCOPES)),
            "description": self._field(f"{prefix}.description", "Description", value=entry.get("description", "")),
        }

    def _state_view(self, prefix, state):
        edges = [*(state.get("transitions") or []), {}]
        return {
            "fields": {
                "name": self._field(f"{prefix}.name", "State", value=state.get("name", "")),
                "agent": self._field(f"{prefix}.agent", "Agent (slug)", value=state.get("agent", "")),
            },
            "edges": [{
                "to": self._field(f"{prefix}.transitions.{t}.to", "Edge to", value=edge.get("to", "")),
                "transfer": self._field(f"{prefix}.transitions.{t}.transfer", "Transfer", "checkboxes",
                                        list(edge.get("transfer", ["history"] if not edge else [])),
                                        choices=tuple((x, x) for x in MODULE_KINDS)),
                "description": self._field(f"{prefix}.transitions.{t}.description", "Description",
                                           value=edge.get("description", "")),
            } for t, edge in enumerate(edges) if isinstance(edge, dict)],
        }

    def _provider_view(self):
        provider = self.spec.get("provider") or {}
        if provider.get("kind") == "openai":
            kind = "openai"
        elif is_starter(provider, self.spec.get("agents") or []):
            kind = "starter"
        else:
            kind = "script" if "script" in provider else "demo"
        script = provider.get("script")
        return {
            "kind": self._field("provider.kind", "Provider", "radio", kind, choices=PROVIDER_KINDS),
            "fields": [
                self._field("provider.demo", "Demo", "select", provider.get("demo", ""),
                            choices=tuple((d, d) for d in demo_names())),
                self._field("provider.script", "Script", "textarea", "" if kind == "starter" else _json_text(script),
                            help="a JSON object mapping a profile slug (or agent id) to its list of replies"),
                self._field("provider.baseUrl", "Base URL", value=provider.get("baseUrl", ""),
                            help="e.g. https://api.openai.com/v1"),
                self._field("provider.model", "Model", value=provider.get("model", "")),
                self._field("provider.apiKeyEnv", "API key environment variable", value=provider.get("apiKeyEnv", ""),
                            help="the NAME of the variable holding the key (e.g. OPENAI_API_KEY); "
                                 "the key itself is never stored"),
            ],
        }


def _extra(spec, own):
    return {key: value for key, value in spec.items() if key not in own}


def _json_text(value):
    return "" if value in (None, {}) else json.dumps(value, indent=2)


def _limit_value(spec, key):
    value = (spec.get("limits") or {}).get(key)
    return "" if value is None else value
