"""The launch form: POST fields <-> a run spec (`runs.engine.spec`'s format), error paths -> inputs.

Every input is named after where its value goes, dot-separated with list indexes:
`agents.0.slug`, `agents.0.cap.memories.params.scope`, `agents.0.subagents.1.scopes`,
`agents.1.states.0.transitions.0.to`, `limits.maxTurns`, `provider.baseUrl`.

The form only turns text into the spec's types; every rule is `validate_spec`'s. While it builds
the spec it records which input wrote each spec path, so an error path from validate_spec
(`agents[0].capabilities[2].params.scope`) lands beside the input that wrote the value. Pre-fill
goes the other way: any spec (a launch spec, a saved configuration, an imported run's gg-shaped
capability set) is read tolerantly into the same inputs.
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from surfaces import docviews
from surfaces.catalogue import CAPABILITIES

from runs.engine.providers import DEMO_DIR, demo_names
from runs.engine.spec import ENGINE_LANGUAGES, MEMORY_SCOPES, MODULE_KINDS, ROSTER_SCOPES, validate_spec

MACHINE = "machine"  # the form's third mode: a machine shell (the fsm capability alone)
MODE_CHOICES = (("tool_calling", "Tool calling"), ("responses_as_code", "Responses as code"),
                (MACHINE, "Machine (FSM)"))
# The mode and the machine have their own inputs; the checklist offers the rest.
CHECKLIST = tuple(c for c in CAPABILITIES.values() if c.id not in ("responses-as-code", "fsm"))
DEFAULT_ON = ("read-file", "write-file", "edit-file", "list-dir", "skills", "memories", "tasks")
PARAM_CHOICES = {
    ("memories", "scope"): MEMORY_SCOPES,
    ("tasks", "mode"): ("simple", "issues"),
    ("skills", "ownership"): ("owned", "unowned"),
    ("agent-managed-context", "ownership"): ("owned", "unowned"),
    ("project-management", "ownership"): ("owned", "unowned"),
}
REQUIRED_PARAM_TYPES = {"windowLimit": int, "maxDepth": int, "mergeAgent": str}  # params with no default
RAC_PARAMS = ("timeoutSecs", "maxMemoryBytes")  # the responses-as-code params the mode section shows
LIMITS = (("maxTurns", "Max turns (per agent)", int), ("maxRuntimeSecs", "Max runtime (s)", int),
          ("maxConsecutiveErrors", "Max consecutive errors", int),
          ("maxErrorRate", "Max error rate (0–1)", float), ("errorRateWindow", "Error-rate window (turns)", int),
          ("maxParallel", "Max parallel agents", int))
PROVIDER_KINDS = (("demo", "Shipped scripted demo"), ("script", "Pasted script (JSON)"),
                  ("openai", "OpenAI-compatible endpoint"))
WORKSPACE_FIELD = "workspace_zip"
# What the form has inputs for; any other field of a spec (gg's openingTurn, hooks, customInstructions,
# loopDetection, modelSlots, engine, limits such as maxCost, ...) rides in an "other fields" JSON
# input, so a re-run reproduces the configuration it was opened from.
FORM_TOP_LEVEL = ("name", "task", "agents", "limits", "provider", "workspace")
FORM_PROFILE_FIELDS = ("slug", "name", "executionMode", "modelId", "programLanguage", "docViewTypes",
                       "capabilities", "tools", "operations", "subagents")
EXTRA_HELP = "a JSON object of fields this form has no inputs for ({}), kept as written"


def dom_id(name):
    """An input's element id (its error slot is `err-` + this)."""
    return "f-" + re.sub(r"[^A-Za-z0-9_-]", "-", name)


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

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def blank(cls):
        demos = demo_names()
        spec = {"task": "", "agents": [default_profile("root", "Root")], "limits": {},
                "provider": {"kind": "scripted", "demo": demos[0]} if demos else {"kind": "scripted", "script": {}}}
        return cls(spec)

    @classmethod
    def from_spec(cls, spec):
        """Pre-fill from any stored spec; gg-shaped sets (a run's capability_set) are read as-is."""
        spec = dict(spec or {})
        spec.setdefault("agents", [default_profile("root", "Root")])
        spec.setdefault("task", "")
        spec.setdefault("limits", {})
        spec.setdefault("provider", {"kind": "scripted", "script": {}})
        return cls(spec)

    @classmethod
    def from_post(cls, data):
        """Parse a submitted form into a spec; conversion problems become errors on their input."""
        return _PostParser(data).form()

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
                            "dom_id": dom_id(field_name) if field_name else ""})

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
        if verb == "add-profile":
            n = len(agents)
            taken = {a.get("slug") for a in agents}
            while f"agent-{n}" in taken:
                n += 1
            agents.append(default_profile(f"agent-{n}", f"Agent {n}"))
        elif verb == "remove-profile" and arg.isdigit() and len(agents) > 1 and int(arg) < len(agents):
            del agents[int(arg)]
        elif verb == "fill-allowlist" and arg.isdigit() and int(arg) < len(agents):
            profile = agents[int(arg)]
            profile.pop("tools", None)
            profile.pop("operations", None)
            key, names = derived_allowlist(profile)
            if key:
                profile[key] = names
        self.errors, self.sources, self.raw = [], {}, {}

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
                                   step="any" if kind is float else "1") for key, label, kind in LIMITS],
            "provider": self._provider_view(),
            "workspace": self._field(WORKSPACE_FIELD, "Workspace (zip, optional)", "file",
                                     help="unpacked into the run's workspace; empty when none is given"),
            "workspace_files": self._field("workspace.files", "Seed files (JSON, optional)", "textarea",
                                           _json_text((self.spec.get("workspace") or {}).get("files")),
                                           help="{\"path\": \"contents\"}: written over the workspace"),
            "extra": self._field("extra", "Other run fields (JSON)", "textarea",
                                 _json_text(_extra(self.spec, FORM_TOP_LEVEL)),
                                 help=EXTRA_HELP.format("engine, hooks, modelSlots, ...")),
            "limits_extra": self._field("limits.extra", "Other limits (JSON)", "textarea",
                                        _json_text(_extra(self.spec.get("limits") or {}, [k for k, *_ in LIMITS])),
                                        help=EXTRA_HELP.format("maxCost, maxModelRetries, ...")),
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
                                        "limits_slot", "extra", "limits_extra")]
        names += [f.name for f in view["configuration"]]
        names += [f.name for f in view["limits"]] + [f.name for f in view["provider"]["fields"]]
        names.append(view["provider"]["kind"].name)
        for p in view["profiles"]:
            names += [f.name for f in p["fields"].values()] + [p["slot"].name, p["allowlist"].name, p["extra"].name]
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
        caps = _capabilities_by_id(raw)
        mode = mode_of(raw)
        rac = (caps.get("responses-as-code") or {}).get("params") or {}
        flags = _flags(raw.get("docViewTypes", rac.get("docViewTypes")))
        key, names = allowlist_of(raw)
        fields = {
            "slug": self._field(f"{p}.slug", "Slug", value=raw.get("slug", "")),
            "name": self._field(f"{p}.name", "Name", value=raw.get("name", "")),
            "mode": self._field(f"{p}.executionMode", "Mode", "select", mode, choices=MODE_CHOICES),
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
                                        rac.get(param, default))
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
            "extra": self._field(f"{p}.extra", "Other profile fields (JSON)", "textarea",
                                 _json_text(_extra(raw, FORM_PROFILE_FIELDS)),
                                 help=EXTRA_HELP.format("openingTurn, hooks, customInstructions, loopDetection, "
                                                        "modelSlots, ...")),
        }

    def _param_field(self, name, cap_id, param, default, value):
        choices = PARAM_CHOICES.get((cap_id, param))
        kind_of = type(default) if default is not None else REQUIRED_PARAM_TYPES.get(param, str)
        if choices:
            return self._field(name, param, "select", value, choices=tuple((x, x) for x in choices))
        if kind_of is bool:
            return self._field(name, param, "checkbox", bool(value))
        if kind_of in (int, float):
            return self._field(name, param, "number", "" if value is None else value,
                               step="any" if kind_of is float else "1")
        if param == "states":
            return self._field(name, param, "slot")  # the machine's states have their own rows
        return self._field(name, param, "text", "" if value is None else value)

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
        else:
            kind = "script" if "script" in provider else "demo"
        script = provider.get("script")
        return {
            "kind": self._field("provider.kind", "Provider", "radio", kind, choices=PROVIDER_KINDS),
            "fields": [
                self._field("provider.demo", "Demo", "select", provider.get("demo", ""),
                            choices=tuple((d, d) for d in demo_names())),
                self._field("provider.script", "Script", "textarea", _json_text(script),
                            help="a JSON object mapping a profile slug (or agent id) to its list of replies"),
                self._field("provider.baseUrl", "Base URL", value=provider.get("baseUrl", ""),
                            help="e.g. https://api.openai.com/v1"),
                self._field("provider.model", "Model", value=provider.get("model", "")),
                self._field("provider.apiKeyEnv", "API key environment variable", value=provider.get("apiKeyEnv", ""),
                            help="the NAME of the variable holding the key (e.g. OPENAI_API_KEY); "
                                 "the key itself is never stored"),
            ],
        }


def default_profile(slug, name):
    """A fresh tool-calling profile with gg's older default-on capabilities and its allowlist."""
    profile = {"slug": slug, "name": name, "executionMode": "tool_calling",
               "capabilities": [{"id": c, "enabled": True, "params": {}} for c in DEFAULT_ON]}
    key, names = derived_allowlist(profile)
    profile[key] = names
    return profile


def mode_of(raw):
    caps = _capabilities_by_id(raw)
    if (caps.get("fsm") or {}).get("enabled", False):
        return MACHINE
    if raw.get("executionMode"):
        return raw["executionMode"]
    return "responses_as_code" if (caps.get("responses-as-code") or {}).get("enabled") else "tool_calling"


def allowlist_of(raw):
    """("tools" | "operations", names) as the profile wrote it; names None when it wrote none."""
    for key in ("tools", "operations"):
        if raw.get(key) is not None:
            return key, raw[key]
    return ("operations" if mode_of(raw) == "responses_as_code" else "tools"), None


def derived_allowlist(raw):
    """What the enabled capabilities offer, in the profile's mode's vocabulary; (None, []) for a machine."""
    mode = mode_of(raw)
    if mode == MACHINE:
        return None, []
    caps = _capabilities_by_id(raw)
    enabled = [c for c in CHECKLIST if c.id in caps and caps[c.id].get("enabled", True)]
    if mode == "responses_as_code":
        return "operations", [op for c in enabled for op in c.operations]
    return "tools", [tool for c in enabled for tool in c.tools]


def demo_spec(name):
    """A shipped demo's ready spec (runs/demo/<name>.spec.json), or None."""
    if name not in demo_names():
        return None
    path = Path(DEMO_DIR) / f"{name}.spec.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _capabilities_by_id(raw):
    return {c["id"]: c for c in raw.get("capabilities") or [] if isinstance(c, dict) and "id" in c}


def _flags(value):
    if isinstance(value, list):
        return [str(x) for x in value]
    try:
        return sorted(docviews.resolve(value), key=docviews.FLAGS.index)
    except ValueError:
        return []


def _extra(spec, own):
    return {key: value for key, value in spec.items() if key not in own}


def _json_text(value):
    return "" if value in (None, {}) else json.dumps(value, indent=2)


def _limit_value(spec, key):
    value = (spec.get("limits") or {}).get(key)
    return "" if value is None else value


class _PostParser:
    """One pass over a QueryDict: builds the spec, the source of every path and the conversion errors."""

    def __init__(self, data):
        self.data = data
        self.sources = {}
        self.raw = {}
        self.errors = []

    def form(self):
        spec = {"task": self.text("task", "task"), "agents": self.agents(), "limits": self.limits(),
                "provider": self.provider()}
        name = self.text("name", "name")
        if name:
            spec["name"] = name
        files = self.json("workspace.files", "workspace.files")
        if files is not None:
            spec["workspace"] = {"files": files}
        self.merge_extra(spec, "extra", "", FORM_TOP_LEVEL)
        self.sources["workspace"] = WORKSPACE_FIELD
        self.sources.setdefault("agents", "agents")
        self.sources.setdefault("limits", "limits")
        configuration = {key: self.text(f"configuration.{key}", f"configuration.{key}")
                         for key in ("name", "description")}
        form = LaunchForm(spec, raw=self.raw, sources=self.sources, configuration=configuration)
        for path, message in self.errors:
            form.add_error(path, message)
        return form

    # Each reader records the input behind the spec path it fills.
    def text(self, name, path):
        self.sources[path] = name
        return self.data.get(name, "").strip()

    def number(self, name, path, kind=int):
        self.sources[path] = name
        text = self.data.get(name, "").strip()
        if not text:
            return None
        try:
            return kind(text)
        except ValueError:
            self.raw[name] = text
            self.errors.append((path, "a whole number" if kind is int else "a number"))
            return None

    def json(self, name, path):
        text = self.text(name, path)
        if not text:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            self.raw[name] = text
            self.errors.append((path, f"not valid JSON: {exc}"))
            return None

    def merge_extra(self, target, name, path, own):
        """Fold an "other fields" JSON object into `target`; a field that has its own input is refused."""
        extra = self.json(name, f"{path}.extra" if path else "extra")
        if extra is None:
            return
        if not isinstance(extra, dict):
            self.raw[name] = self.data.get(name, "")
            self.errors.append((f"{path}.extra" if path else "extra", "a JSON object of further fields"))
            return
        for key, value in extra.items():
            self.sources[f"{path}.{key}" if path else key] = name
            if key in own:
                self.raw[name] = self.data.get(name, "")
                self.errors.append((f"{path}.{key}" if path else key, f"{key!r} has its own input; "
                                                                       "it is not written here"))
            else:
                target[key] = value

    def indexes(self, prefix):
        pattern = re.compile(re.escape(prefix) + r"\.(\d+)\.")
        return sorted({int(m.group(1)) for key in self.data for m in [pattern.match(key)] if m})

    def agents(self):
        return [self.profile(i, n) for n, i in enumerate(self.indexes("agents"))]

    def profile(self, i, n):
        f, path = f"agents.{i}", f"agents[{n}]"
        self.sources[path] = f
        profile = {"slug": self.text(f"{f}.slug", f"{path}.slug")}
        if name := self.text(f"{f}.name", f"{path}.name"):
            profile["name"] = name
        mode = self.data.get(f"{f}.executionMode", "tool_calling")
        if mode == MACHINE:
            states = self.states(f, f"{path}.capabilities[0].params.states")
            profile["capabilities"] = [{"id": "fsm", "enabled": True, "params": {"states": states}}]
            self.sources[f"{path}.capabilities[0]"] = f"{f}.executionMode"
            self.merge_extra(profile, f"{f}.extra", path, FORM_PROFILE_FIELDS)
            return profile
        profile["executionMode"] = self.text(f"{f}.executionMode", f"{path}.executionMode") or "tool_calling"
        if model := self.text(f"{f}.modelId", f"{path}.modelId"):
            profile["modelId"] = model
        caps = []
        if mode == "responses_as_code":
            profile["programLanguage"] = self.text(f"{f}.programLanguage", f"{path}.programLanguage")
            flags = self.data.getlist(f"{f}.docViewTypes")
            profile["docViewTypes"] = flags or docviews.NONE
            self.sources[f"{path}.docViewTypes"] = f"{f}.docViewTypes"
            params = {}
            for param in RAC_PARAMS:
                name = f"{f}.cap.responses-as-code.params.{param}"
                value = self.number(name, f"{path}.capabilities[0].params.{param}")
                if value is not None:
                    params[param] = value
            caps.append({"id": "responses-as-code", "enabled": True, "params": params})
        for info in CHECKLIST:
            if self.data.get(f"{f}.cap.{info.id}"):
                caps.append(self.capability(info, f"{f}.cap.{info.id}", f"{path}.capabilities[{len(caps)}]"))
        profile["capabilities"] = caps
        key = "operations" if mode == "responses_as_code" else "tools"
        names = re.split(r"[\s,]+", self.text(f"{f}.allowlist", f"{path}.{key}"))
        if names != [""]:
            profile[key] = names
        roster = self.roster(f, path)
        if roster:
            profile["subagents"] = roster
        self.merge_extra(profile, f"{f}.extra", path, FORM_PROFILE_FIELDS)
        return profile

    def capability(self, info, f, path):
        self.sources[path] = f
        cap = {"id": info.id, "enabled": True, "params": {}}
        if info.implementations:
            cap["implementation"] = self.text(f"{f}.implementation", f"{path}.implementation")
        for param, default in info.params.items():
            name, ppath = f"{f}.params.{param}", f"{path}.params.{param}"
            kind_of = type(default) if default is not None else REQUIRED_PARAM_TYPES.get(param, str)
            if param == "states":
                continue
            if (info.id, param) not in PARAM_CHOICES and kind_of is bool:
                self.sources[ppath] = name
                cap["params"][param] = bool(self.data.get(name))
            elif kind_of in (int, float) and (info.id, param) not in PARAM_CHOICES:
                value = self.number(name, ppath, kind_of)
                if value is not None:
                    cap["params"][param] = value
            elif value := self.text(name, ppath):
                cap["params"][param] = value
        return cap

    def roster(self, f, path):
        out = []
        for j in self.indexes(f"{f}.subagents"):
            row = f"{f}.subagents.{j}"
            if not self.data.get(f"{row}.agent", "").strip():
                continue  # the blank row every roster ends with
            epath = f"{path}.subagents[{len(out)}]"
            self.sources[epath] = f"{row}.agent"
            self.sources[f"{epath}.scopes"] = f"{row}.scopes"
            out.append({"agent": self.text(f"{row}.agent", f"{epath}.agent"),
                        "description": self.text(f"{row}.description", f"{epath}.description"),
                        "scopes": self.data.getlist(f"{row}.scopes")})
        return out

    def states(self, f, path):
        self.sources[path] = f"{f}.states.0.name"
        out = []
        for s in self.indexes(f"{f}.states"):
            row = f"{f}.states.{s}"
            if not (self.data.get(f"{row}.name", "").strip() or self.data.get(f"{row}.agent", "").strip()):
                continue
            spath = f"{path}[{len(out)}]"
            self.sources[spath] = f"{row}.name"
            state = {"name": self.text(f"{row}.name", f"{spath}.name"),
                     "agent": self.text(f"{row}.agent", f"{spath}.agent"), "transitions": []}
            for t in self.indexes(f"{row}.transitions"):
                edge = f"{row}.transitions.{t}"
                if not self.data.get(f"{edge}.to", "").strip():
                    continue
                epath = f"{spath}.transitions[{len(state['transitions'])}]"
                self.sources[epath] = f"{edge}.to"
                self.sources[f"{epath}.transfer"] = f"{edge}.transfer"
                item = {"to": self.text(f"{edge}.to", f"{epath}.to"),
                        "transfer": self.data.getlist(f"{edge}.transfer")}
                if description := self.text(f"{edge}.description", f"{epath}.description"):
                    item["description"] = description
                state["transitions"].append(item)
            out.append(state)
        return out

    def limits(self):
        limits = {}
        for key, _label, kind in LIMITS:
            value = self.number(f"limits.{key}", f"limits.{key}", kind)
            if value is not None:
                limits[key] = value
        self.merge_extra(limits, "limits.extra", "limits", [k for k, *_ in LIMITS])
        return limits

    def provider(self):
        kind = self.data.get("provider.kind", "demo")
        self.sources["provider"] = "provider.kind"
        self.sources["provider.kind"] = "provider.kind"
        if kind == "openai":
            provider = {"kind": "openai"}
            for key in ("baseUrl", "model", "apiKeyEnv"):
                if value := self.text(f"provider.{key}", f"provider.{key}"):
                    provider[key] = value
            return provider
        if kind == "script":
            script = self.json("provider.script", "provider.script")
            return {"kind": "scripted", "script": {} if script is None else script}
        return {"kind": "scripted", "demo": self.text("provider.demo", "provider.demo")}
