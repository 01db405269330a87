"""Model providers: `scripted` (deterministic replies from a JSON script) and `openai` (any
OpenAI-compatible chat-completions endpoint).

A provider answers `complete(request) -> Reply`. The request carries the agent's messages in the
chat-completions shape, the tools it is offered (a code agent's one tool is `submit_program`) and
whether a tool call is forced. A provider that cannot answer raises `ProviderError` naming gg's
turn error type; `status` is set when the failure ends the session (auth, a spent script).

Script format: `{"<agent id or profile slug>": [reply, ...]}`. An agent takes its replies from the
list under its own id when there is one (`agent-2`), else from its profile's list, each list
read in order by every incarnation that uses it. A reply is any of::

    {"text": "prose"}                                  # no call: an error turn
    {"program": "import gg\\n..."}                      # a code agent's submit_program
    {"toolCalls": [{"name": "read_file", "args": {"path": "a.txt"}}], "text": "optional"}
    {"delayMs": 200, ...}                              # the model takes this long to answer
    {"cost": 0.25, ...}                                # what the call cost, in US dollars
    {"error": "model_timeout"}                         # the call fails with this error type
"""

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from runs.demo import DEMO_DIR
from runs.engine.tools.context_views import estimate_tokens

SUBMIT_PROGRAM = {
    "name": "submit_program",
    "description": "Submit one program; it is run in the sandbox and its views are what you see next.",
    "parameters": {"type": "object", "properties": {"program": {"type": "string"}}, "required": ["program"]},
}


@dataclass
class ToolCall:
    id: str
    name: str
    args: dict


@dataclass
class Reply:
    text: str = ""
    tool_calls: list = field(default_factory=list)
    tokens: dict = field(default_factory=dict)  # TokenMetrics
    finish_reason: str = "stop"
    provider: str | None = None
    cost: dict | None = None


@dataclass
class Request:
    agent_id: str
    profile: str
    model: str
    messages: list  # chat-completions messages
    tools: list  # [{"name", "description", "parameters"}]
    force_tool: str | None = None  # a code agent's submit_program


class ProviderError(Exception):
    def __init__(self, error_type, message, status=None):
        super().__init__(message)
        self.error_type = error_type  # GgTurnErrorType leaf, e.g. model_timeout
        self.status = status  # session status when this ends the run (auth_error, model_error)


def _tokens(uncached, output, cached=None, reasoning=None):
    return {"uncachedInput": uncached, "cachedInput": cached, "output": output, "reasoning": reasoning}


class ScriptedProvider:
    name = "scripted"

    def __init__(self, script):
        self.script = script
        self.cursors = {}
        self.call_ids = 0

    @classmethod
    def demo(cls, name):
        return cls(json.loads((DEMO_DIR / f"{name}.script.json").read_text()))

    def complete(self, request):
        key = request.agent_id if request.agent_id in self.script else request.profile
        replies = self.script.get(key, [])
        index = self.cursors.get(key, 0)
        if index >= len(replies):
            raise ProviderError("model_retry_exhausted", f"the script has no reply left for {key}",
                                status="model_error")
        self.cursors[key] = index + 1
        reply = replies[index]
        if reply.get("delayMs"):
            time.sleep(reply["delayMs"] / 1000)
        if reply.get("error"):
            raise ProviderError(reply["error"], f"scripted failure: {reply['error']}")
        calls = [("submit_program", {"program": reply["program"]})] if "program" in reply else []
        calls += [(c["name"], c.get("args", {})) for c in reply.get("toolCalls", [])]
        tool_calls = []
        for name, args in calls:
            self.call_ids += 1
            tool_calls.append(ToolCall(f"call-{self.call_ids}", name, args))
        prompt = sum(estimate_tokens(m.get("content") or "") for m in request.messages)
        output = estimate_tokens(reply.get("text", "") + json.dumps([c.args for c in tool_calls]))
        cost = {"comparable": reply["cost"], "actual": reply["cost"]} if "cost" in reply else None
        return Reply(text=reply.get("text", ""), tool_calls=tool_calls, tokens=_tokens(prompt, output),
                     finish_reason="tool_calls" if tool_calls else "stop", provider=self.name, cost=cost)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A provider answers where it was asked: a redirect is an error, never followed elsewhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)
ERROR_DETAIL_CHARS = 160  # what of an HTTP error body reaches the stream
MAX_RESPONSE_BYTES = 32 * 1024 * 1024


def _detail(exc):
    """The start of an error body, on one line: enough to tell an operator why, not a page of it."""
    try:
        raw = exc.read(ERROR_DETAIL_CHARS * 4)
    except OSError:
        raw = b""
    text = " ".join(raw.decode(errors="replace").split())
    return text[:ERROR_DETAIL_CHARS] + ("…" if len(text) > ERROR_DETAIL_CHARS else "")


class OpenAIProvider:
    """Chat completions over HTTP (standard library only): base URL, model, key from a named env var.
    The spec's validation (runs.engine.provider_policy) has checked both against the operator's
    allowlists; redirects are not followed and error bodies are cut before they reach the stream."""

    name = "openai"

    def __init__(self, base_url, model, api_key_env=None, timeout=120):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout

    def complete(self, request):
        body = {"model": request.model or self.model, "messages": request.messages,
                "tools": [{"type": "function", "function": t} for t in request.tools]}
        if not request.tools:
            del body["tools"]
        elif request.force_tool:
            body["tool_choice"] = {"type": "function", "function": {"name": request.force_tool}}
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ProviderError("model_auth", f"the environment variable {self.api_key_env} is not set",
                                    status="auth_error")
            headers["Authorization"] = f"Bearer {key}"
        http_request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers)
        try:
            with _OPENER.open(http_request, timeout=self.timeout) as response:
                raw = response.read(MAX_RESPONSE_BYTES + 1)
            if len(raw) > MAX_RESPONSE_BYTES:
                raise ProviderError("model_parse", f"the response is over {MAX_RESPONSE_BYTES // (1024 * 1024)} MiB")
            payload = json.loads(raw)
        except urllib.error.HTTPError as exc:
            detail = _detail(exc)
            if 300 <= exc.code < 400:
                raise ProviderError("model_rejected", f"HTTP {exc.code}: the provider redirected; redirects are "
                                                      "not followed") from None
            if exc.code in (401, 403):
                raise ProviderError("model_auth", f"HTTP {exc.code}: {detail}", status="auth_error") from None
            raise ProviderError("model_rejected", f"HTTP {exc.code}: {detail}") from None
        except TimeoutError:
            raise ProviderError("model_timeout", f"no answer from {self.url} in {self.timeout}s") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ProviderError("model_retry_exhausted", f"{self.url}: {exc}", status="model_error") from None
        return self._reply(payload)

    def _reply(self, payload):
        try:
            choice = payload["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ProviderError("model_parse", "the response carries no choices[0].message") from None
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            try:
                args = json.loads(function.get("arguments") or "{}")
            except ValueError:
                args = {"_unparsed": function.get("arguments")}
            calls.append(ToolCall(call.get("id", ""), function.get("name", ""), args if isinstance(args, dict) else {}))
        usage = payload.get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        prompt = usage.get("prompt_tokens")
        tokens = _tokens(prompt - (cached or 0) if prompt is not None else None, usage.get("completion_tokens"),
                         cached, (usage.get("completion_tokens_details") or {}).get("reasoning_tokens"))
        return Reply(text=message.get("content") or "", tool_calls=calls, tokens=tokens,
                     finish_reason=choice.get("finish_reason") or "stop", provider=payload.get("provider"))


def make_provider(config):
    if config["kind"] == "openai":
        return OpenAIProvider(config["baseUrl"], config["model"], config.get("apiKeyEnv"))
    if "demo" in config:
        return ScriptedProvider.demo(config["demo"])
    return ScriptedProvider(config["script"])
