"""The run spec: a launch request for the built-in engine — its format and its model (`RunSpec`,
`Profile`, `Limits`, ...). Validated the way gg refuses a launch by `runs.engine.validation`.

The format is gg's capability set (spec/console.md §3, camelCase field names) plus what a launch
needs beside it::

    {
      "task": "What the root agent is asked to do.",             # required: the prompt (at most 256 KiB)
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

import re
from dataclasses import dataclass, field

from surfaces.catalogue import CAPABILITIES

MODES = ("tool_calling", "responses_as_code")
MODULE_KINDS = ("history", "memories", "tasks", "board", "skills", "archive")
MEMORY_SCOPES = ("isolated", "shared", "inherited", "read-only")
ROSTER_SCOPES = ("subagent", "implementer", "reviewer")
SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# The sandbox runs CPython programs (design.md "Sandbox"); the other arms need gg itself.
ENGINE_LANGUAGES = ("python", "typescript")

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
MAX_UINT64 = 2**64 - 1  # gg's whole numbers (limits, params, a hook's timeout) are uint64 in its schema
# The task is the root's first context_message: a 5 MiB one was over the write path's 1 MiB line and lost.
MAX_TASK_BYTES = 256 * 1024


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
