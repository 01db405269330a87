"""Parsing a submitted launch form: every input named after where its value goes (see
`runs.launch.forms`), turned into the spec's types; a value that does not convert is an error on its
input. Every rule beyond the types is `validate_spec`'s.
"""

import re

from surfaces import docviews

from runs.launch.fields import (CHECKLIST, FORM_PROFILE_FIELDS, FORM_TOP_LEVEL, LIMITS, MACHINE, PARAM_CHOICES,
                                PROVIDER_KINDS, RAC_PARAMS, REQUIRED_PARAM_TYPES, WORKSPACE_FIELD)
from runs.launch.starter import starter_script
from runs.stream.record import RecordError, loads_record

# int() and float() read any Unicode digit ("٣" is 3) and "1_000": a number input takes ASCII alone,
# a whole number its digits alone (float's "nan" and "inf" are left to validate_spec to name).
WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")


class PostParser:
    """One pass over a QueryDict: builds the spec, the source of every path and the conversion errors."""

    def __init__(self, data):
        self.data = data
        self.sources = {}
        self.raw = {}
        self.errors = []

    def parse(self):
        """The spec the inputs write; `sources`, `raw`, `errors` and `configuration` filled beside it."""
        agents = self.agents()
        spec = {"task": self.text("task", "task"), "agents": agents, "limits": self.limits(),
                "provider": self.provider(agents)}
        name = self.text("name", "name")
        if name:
            spec["name"] = name
        files = self.json("workspace.files", "workspace.files")
        if files is not None:
            spec["workspace"] = {"files": files}
        self.hooks(spec, "hooks", "hooks")
        self.merge_extra(spec, "extra", "", FORM_TOP_LEVEL)
        self.sources["workspace"] = WORKSPACE_FIELD
        self.sources.setdefault("agents", "agents")
        self.sources.setdefault("limits", "limits")
        self.configuration = {key: self.text(f"configuration.{key}", f"configuration.{key}")
                              for key in ("name", "description", "loaded", "replace")}
        return spec

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
            value = kind(text) if text.isascii() and (kind is not int or WHOLE_NUMBER.fullmatch(text)) else None
        except ValueError:  # not a number, or past the digits int() reads
            value = None
        if value is None:
            self.raw[name] = text
            self.errors.append((path, "a whole number" if kind is int else "a number"))
        return value

    def json(self, name, path):
        text = self.text(name, path)
        if not text:
            return None
        try:
            # Read as a stream line is: no NaN or Infinity (the spec is stored and sent as JSON), no
            # nesting past MAX_DEPTH, no number past what int() reads — each a field error, not a 500.
            return loads_record(text)
        except RecordError as exc:
            self.raw[name] = text
            self.errors.append((path, str(exc)))
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
        self.hooks(profile, f"{f}.hooks", f"{path}.hooks")
        self.merge_extra(profile, f"{f}.extra", path, FORM_PROFILE_FIELDS)
        return profile

    def hooks(self, target, name, path):
        """A hooks box: gg's list as written (the spec's validation names what is wrong in it)."""
        self.sources[path] = name
        value = self.json(name, path)
        if value is not None:
            target["hooks"] = value

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

    def provider(self, agents):
        kind = self.data.get("provider.kind", "demo")
        self.sources["provider"] = "provider.kind"
        self.sources["provider.kind"] = "provider.kind"
        if kind not in dict(PROVIDER_KINDS):
            self.raw["provider.kind"] = kind
            self.errors.append(("provider.kind", f"{kind!r} is no provider kind; one of: "
                                                 f"{', '.join(dict(PROVIDER_KINDS))}"))
            return {"kind": "scripted", "script": {}}  # a stand-in the spec's rules pass: the kind's error is said
        if kind == "openai":
            provider = {"kind": "openai"}
            for key in ("baseUrl", "model", "apiKeyEnv"):
                if value := self.text(f"provider.{key}", f"provider.{key}"):
                    provider[key] = value
            return provider
        if kind == "starter":  # built for the profiles as they stand, so it always fits them
            return {"kind": "scripted", "script": starter_script(agents)}
        if kind == "script":
            script = self.json("provider.script", "provider.script")
            return {"kind": "scripted", "script": {} if script is None else script}
        return {"kind": "scripted", "demo": self.text("provider.demo", "provider.demo")}
