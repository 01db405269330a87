"""What a launch spec may ask of a provider, checked by spec validation (issue 19).

A launch spec is written by anyone holding `runs.add_run`, so its provider block is hostile:

* `apiKeyEnv` names the server environment variable whose value is sent as the bearer key. Only
  names the operator allows may be read: any `GG_PROVIDER_KEY_*` variable, and the names listed in
  the `GG_PROVIDER_KEY_ENVS` setting (comma-separated in the environment; empty by default). So
  `apiKeyEnv: HOME` or `DJANGO_SECRET_KEY` is refused before anything runs.
* `baseUrl` must be http(s) on a host the operator allows in `GG_PROVIDER_HOSTS` (`host`,
  `host:port`, or `*.domain` for its subdomains; empty by default: no openai provider can be
  launched until the operator names one), with no user info in it.
* A scripted provider's replies are checked shape by shape, so a malformed one is a field error at
  launch instead of an `internal_error` mid-run.
"""

from urllib.parse import urlsplit

from django.conf import settings

KEY_ENV_PREFIX = "GG_PROVIDER_KEY_"
REPLY_FIELDS = {"text", "program", "toolCalls", "delayMs", "cost", "error"}
MAX_DELAY_MS = 600_000
MODEL_ERRORS = ("model_auth", "model_rejected", "model_retry_exhausted", "model_response_loop",
                "model_vision_unsupported", "model_parse", "model_provider_mismatch", "model_timeout",
                "model_length_capped")  # the GgTurnErrorType leaves a model call can fail with


def key_env_refusal(name):
    """Why the server will not send variable `name` as a provider key, or None."""
    if name.startswith(KEY_ENV_PREFIX) and len(name) > len(KEY_ENV_PREFIX) or name in settings.GG_PROVIDER_KEY_ENVS:
        return None
    allowed = ", ".join(settings.GG_PROVIDER_KEY_ENVS)
    return (f"{name} is not a variable this server sends as a provider key: use a {KEY_ENV_PREFIX}* variable"
            + (f" or one of {allowed}" if allowed else "") + " (the operator's GG_PROVIDER_KEY_ENVS)")


def base_url_refusal(url):
    """Why the server will not call `url` as a provider, or None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "baseUrl is not a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "baseUrl is an http(s) URL"
    if parts.username is not None or parts.password is not None:
        return "baseUrl carries no user name or password"
    host = parts.hostname.lower()
    for allowed in settings.GG_PROVIDER_HOSTS:
        name, _, allowed_port = allowed.partition(":")
        if allowed_port and str(port or {"http": 80, "https": 443}[parts.scheme]) != allowed_port:
            continue
        if host == name or name.startswith("*.") and host.endswith(name[1:]):
            return None
    if not settings.GG_PROVIDER_HOSTS:
        return "this server calls no provider host: the operator has not set GG_PROVIDER_HOSTS"
    return f"{host} is not a provider host this server calls (the operator's GG_PROVIDER_HOSTS)"


def reply_errors(reply):
    """[(field under the reply, message)] for one scripted reply; empty when it is well formed."""
    if not isinstance(reply, dict):
        return [("", "a reply is an object: {text, program, toolCalls, delayMs, cost, error}")]
    out = [(key, f"unknown reply field {key!r}") for key in sorted(set(reply) - REPLY_FIELDS)]
    for key in ("text", "program"):
        if key in reply and not isinstance(reply[key], str):
            out.append((key, f"{key} is a string"))
    if "error" in reply and reply["error"] not in MODEL_ERRORS:
        out.append(("error", f"error is a model call's failure: one of {', '.join(MODEL_ERRORS)}"))
    delay = reply.get("delayMs", 0)
    if not isinstance(delay, int) or isinstance(delay, bool) or not 0 <= delay <= MAX_DELAY_MS:
        out.append(("delayMs", f"delayMs is a whole number of milliseconds up to {MAX_DELAY_MS}"))
    cost = reply.get("cost", 0)
    if not isinstance(cost, (int, float)) or isinstance(cost, bool) or not 0 <= cost < float("inf"):
        out.append(("cost", "cost is a number of US dollars, 0 or more"))
    calls = reply.get("toolCalls", [])
    if not isinstance(calls, list):
        return out + [("toolCalls", "toolCalls is a list of {name, args}")]
    for i, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or set(call) - {"name", "args"}:
            out.append((f"toolCalls[{i}]", "a tool call is {name: string, args: object}"))
        elif not isinstance(call.get("args", {}), dict):
            out.append((f"toolCalls[{i}].args", "args is an object"))
    return out
