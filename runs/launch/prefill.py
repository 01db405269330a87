"""A stored spec made readable by the launch form, whatever its shape (issue 19).

"Re-run with edits" and saved configurations pre-fill the form from JSON nobody checked: a run's
`capabilitySet` arrives on the stream from any token holder. `readable(spec)` keeps every value of
the shape the form reads and drops the rest — a list where an object goes, a number where a list
goes, a non-object in a list of objects — so the page is always a form; what was dropped is simply
not pre-filled (validation then names what is missing).
"""

# Expected shapes: a type, a dict of key -> shape for an object, a one-element list for a list.
_STRINGS = [str]
_TRANSITION = {"to": str, "agent": str, "prompt": str}
_STATE = {"name": str, "agent": str, "transitions": [_TRANSITION]}
_CAPABILITY = {"id": str, "enabled": bool, "implementation": str, "params": {"states": [_STATE]}}
_ENTRY = {"agent": str, "agentId": str, "description": str, "scopes": _STRINGS}
_AGENT = {"slug": str, "name": str, "modelId": str, "executionMode": str, "programLanguage": str,
          "capabilities": [_CAPABILITY], "subagents": [_ENTRY], "tools": _STRINGS, "operations": _STRINGS}
_SPEC = {"task": str, "name": str, "agents": [_AGENT], "limits": {},
         "provider": {"kind": str, "demo": str, "script": {}, "baseUrl": str, "model": str, "apiKeyEnv": str},
         "workspace": {"files": {}}}
_MISSING = object()


def readable(spec):
    """A copy of `spec` holding only what the form can read (an empty spec for a non-object)."""
    return _shape(spec, _SPEC) if isinstance(spec, dict) else {}


def _shape(value, shape):
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return _MISSING
        out = {}
        for key, item in value.items():
            kept = _shape(item, shape[key]) if key in shape else item  # fields the form does not read stay
            if kept is not _MISSING:
                out[key] = kept
        return out
    if isinstance(shape, list):
        if not isinstance(value, list):
            return _MISSING
        return [kept for item in value if (kept := _shape(item, shape[0])) is not _MISSING]
    if shape is bool:
        return value if isinstance(value, bool) else _MISSING
    return value if isinstance(value, shape) else _MISSING
