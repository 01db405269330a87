"""The launch form's vocabulary, shared by the form (`runs.launch.forms`) and the POST parser
(`runs.launch.post`): the choices it offers, the fields it has inputs for, an input's element id,
and how a profile is read (its mode, its allowlist, a fresh one's defaults).
"""

import re

from surfaces import docviews
from surfaces.catalogue import BY_ID, CAPABILITIES, OPERATIONS, TOOLS_BY_NAME

from runs.engine.spec import MEMORY_SCOPES

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
          ("maxParallel", "Max parallel agents", int), ("maxCost", "Max cost (USD)", float))
# What an empty limit (or a 0 param) means, said beside its input.
LIMIT_HELP = {
    "maxTurns": "empty: no cap on any agent's turns",
    "maxRuntimeSecs": "empty: no wall-clock cap on the run",
    "maxConsecutiveErrors": "empty: not armed; a run of this many error turns in a row stops it",
    "maxErrorRate": "empty: not armed; set together with the window",
    "errorRateWindow": "empty: not armed; the turns the error rate is measured over",
    "maxParallel": "empty: 4 agents at once",
    "maxCost": "empty: no cost cap; the run ends once its cost reaches this many US dollars",
}
PARAM_HELP = {
    ("shell", "maxLines"): "lines of output kept per call",
    ("shell", "maxChars"): "characters of output kept per call",
    ("read-file", "lineCap"): "lines a read returns at most, unless it asks for fewer",
    ("context-window-override", "windowLimit"): "tokens; empty: the model's own window",
    ("memories", "maxCount"): "0: unlimited",
    ("memories", "maxLenPerMemory"): "characters; 0: unlimited",
    ("memories", "maxTotalLen"): "characters across the store; 0: unlimited",
    ("memories", "maxLenIndex"): "characters of the prompt's index; 0: unlimited",
    ("memories", "maxLenDescription"): "characters; 0: unlimited",
    ("memories", "maxResults"): "hits a search returns; 0: unlimited",
    ("tasks", "maxTasks"): "tasks the list holds at most",
    ("compaction", "summaryHeadroom"): "the share of the window kept free for the summary (0–1)",
    ("project-management", "mergeAgent"): "a profile slug; empty: no merge agent",
    ("project-management", "maxEpics"): "epics the board holds at most",
    ("project-management", "maxIssues"): "issues the board holds at most",
    ("project-management", "maxRetries"): "attempts an issue gets after the first",
    ("subagents", "maxDepth"): "levels of delegation below this agent; empty: gg's cap",
    ("responses-as-code", "timeoutSecs"): "seconds one program may run",
    ("responses-as-code", "maxMemoryBytes"): "bytes of memory one program may use",
}
PROVIDER_KINDS = (("starter", "Starter script: each agent finishes at once (no model needed)"),
                  ("demo", "Shipped scripted demo"), ("script", "Pasted script (JSON)"),
                  ("openai", "OpenAI-compatible endpoint"))
WORKSPACE_FIELD = "workspace_zip"
# What the form has inputs for; any other field of a spec (gg's openingTurn, hooks, customInstructions,
# loopDetection, modelSlots, engine, limits such as maxCost, ...) rides in an "other fields" JSON
# input, so a re-run reproduces the configuration it was opened from.
FORM_TOP_LEVEL = ("name", "task", "agents", "limits", "provider", "workspace", "hooks")
FORM_PROFILE_FIELDS = ("slug", "name", "executionMode", "modelId", "programLanguage", "docViewTypes",
                       "capabilities", "tools", "operations", "subagents", "hooks")
def hooks_help(example_event, events):
    example = ('[{"event": "%s", "action": {"type": "command", "command": "sh check.sh", "timeoutSecs": 60}}]'
               % example_event)
    return (f"gg's hooks, a JSON list such as {example}; actions command, built-in (trace, refuse-empty-write, "
            f"guard-destructive-shell) or custom (a script printing a decision); events: {events}; empty = none")
EXTRA_HELP = "a JSON object of fields this form has no inputs for ({}), kept as written"


def dom_id(name):
    """An input's element id (its error slot is `err-` + this)."""
    return "f-" + re.sub(r"[^A-Za-z0-9_-]", "-", name)


def default_profile(slug, name):
    """A fresh tool-calling profile with gg's older default-on capabilities and its allowlist."""
    profile = {"slug": slug, "name": name, "executionMode": "tool_calling",
               "capabilities": [{"id": c, "enabled": True, "params": {}} for c in DEFAULT_ON]}
    key, names = derived_allowlist(profile)
    profile[key] = names
    return profile


def mode_of(raw):
    caps = capabilities_by_id(raw)
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
    caps = capabilities_by_id(raw)
    enabled = [c for c in CHECKLIST if c.id in caps and caps[c.id].get("enabled", True)]
    if mode == "responses_as_code":  # a retired operation is one the validator refuses: never written
        return "operations", [op for c in enabled for op in c.operations if not BY_ID[op].retired]
    return "tools", [tool for c in enabled for tool in c.tools]


def convert_allowlist(names, mode):
    """An allowlist written in the other mode's vocabulary, in `mode`'s: tool names -> the operations
    those tools serve (retired ones never), operation ids -> the tools underneath them. Returns
    (converted, dropped): dropped are names with no counterpart (an ending, a call no tool backs)."""
    converted, dropped = [], []
    for name in names:
        if mode == "responses_as_code":
            if name in BY_ID:
                targets = [name]
            else:
                targets = [op.id for op in OPERATIONS if op.tool == name and not op.retired
                           and op.binding.kind in ("capability", "machine")]
        else:
            op = BY_ID.get(name)
            targets = [name] if name in TOOLS_BY_NAME else ([op.tool] if op is not None and op.tool else [])
        for target in targets:
            if target not in converted:
                converted.append(target)
        if not targets:
            dropped.append(name)
    return converted, dropped


def capabilities_by_id(raw):
    return {c["id"]: c for c in raw.get("capabilities") or [] if isinstance(c, dict) and "id" in c}


def doc_view_flags(value):
    if isinstance(value, list):
        return [str(x) for x in value]
    try:
        return sorted(docviews.resolve(value), key=docviews.FLAGS.index)
    except ValueError:
        return []


def switch_mode(profile, index):
    """After the operator switched a profile's mode: its allowlist, typed in the old mode's vocabulary,
    rewritten in the new one's (or cleared, for a machine). Returns the notes saying what changed."""
    head = f"Profile {index + 1} ({profile.get('slug') or 'no slug'})"
    key, names = allowlist_of(profile)
    if mode_of(profile) == MACHINE:
        profile.pop("tools", None)
        profile.pop("operations", None)
        return [f"{head}: a machine takes no allowlist; it was cleared."] if names else []
    if not names:
        return []
    converted, dropped = convert_allowlist(names, mode_of(profile))
    if converted == names:
        return []
    profile.pop("tools", None)
    profile.pop("operations", None)
    profile[key] = converted
    vocabulary = "operation ids" if key == "operations" else "tool names"
    note = f"{head}: the allowlist was rewritten as {vocabulary} ({len(converted)})"
    if dropped:
        note += f"; left out, with no counterpart: {', '.join(dropped)}"
    return [note + "."]
