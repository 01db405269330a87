"""The OpenAI-compatible provider against a real local HTTP server, and the scripted provider."""

import json

import pytest

from runs.engine.providers import ProviderError, Request, ScriptedProvider
from tests.engine_helpers import LocalPost, of_type, run_spec, schema_errors, tool_agent


class ChatServer(LocalPost):
    """A chat-completions endpoint that answers with queued replies and records the requests."""

    def __init__(self, replies, status=200):
        self.replies, self.requests, self.status = list(replies), [], status
        super().__init__(self._answer, "/v1")

    def _answer(self, handler):
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        self.requests.append({"path": handler.path, "auth": handler.headers.get("Authorization"), "body": body})
        payload = json.dumps(self.replies.pop(0) if self.status == 200 else {"error": "no"}).encode()
        handler.send_response(self.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)


def completion(content=None, calls=()):
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"id": f"c{i}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}
                                 for i, (name, args) in enumerate(calls)]
    return {"choices": [{"message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30,
                      "prompt_tokens_details": {"cached_tokens": 20}}}


@pytest.fixture
def server():
    servers = []

    def start(replies, status=200):
        servers.append(ChatServer(replies, status))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


@pytest.mark.django_db
def test_openai_provider_drives_a_tool_calling_run(server, tmp_path, monkeypatch, settings):
    settings.GG_PROVIDER_HOSTS = ("127.0.0.1",)
    monkeypatch.setenv("GG_PROVIDER_KEY_TEST", "sekrit")
    chat = server([completion("Listing.", [("list_dir", {})]),
                   completion(None, [("finish", {"summary": "listed"})])])
    data = {"task": "List the workspace.", "agents": [tool_agent("coder", [{"id": "list-dir", "enabled": True}])],
            "provider": {"kind": "openai", "baseUrl": chat.url, "model": "local/test", "apiKeyEnv": "GG_PROVIDER_KEY_TEST"}}
    run, records = run_spec(data, tmp_path)
    assert run.status == "completed" and schema_errors(records) == []
    first = chat.requests[0]
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer sekrit"
    assert first["body"]["model"] == "local/test"
    assert [t["function"]["name"] for t in first["body"]["tools"]] == ["list_dir", "tree", "finish"]
    assert [m["role"] for m in first["body"]["messages"]] == ["system", "user"]
    second = chat.requests[1]["body"]["messages"]
    assert second[2]["tool_calls"][0]["function"]["name"] == "list_dir" and second[3]["role"] == "tool"
    usage = of_type(records, "usage")[0]
    assert usage["modelId"] == "local/test"
    assert usage["tokens"] == {"uncachedInput": 100, "cachedInput": 20, "output": 30, "reasoning": None}


def test_openai_provider_forces_submit_program_for_code_agents(server):
    from runs.engine.providers import SUBMIT_PROGRAM, OpenAIProvider

    chat = server([completion(None, [("submit_program", {"program": "import gg"})])])
    reply = OpenAIProvider(chat.url, "m").complete(
        Request("root", "coder", "m", [{"role": "user", "content": "hi"}], [SUBMIT_PROGRAM], "submit_program"))
    assert reply.tool_calls[0].args == {"program": "import gg"}
    assert chat.requests[0]["body"]["tool_choice"] == {"type": "function", "function": {"name": "submit_program"}}


def test_openai_provider_failures_are_classified(server, monkeypatch):
    from runs.engine.providers import OpenAIProvider

    chat = server([], status=401)
    with pytest.raises(ProviderError) as denied:
        OpenAIProvider(chat.url, "m").complete(Request("root", "p", "m", [], []))
    assert denied.value.error_type == "model_auth" and denied.value.status == "auth_error"
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(ProviderError) as missing:
        OpenAIProvider(chat.url, "m", "NO_SUCH_KEY_VAR").complete(Request("root", "p", "m", [], []))
    assert missing.value.status == "auth_error"


def test_scripted_provider_prefers_the_agent_id_and_is_deterministic():
    script = {"coder": [{"text": "a"}, {"text": "b"}], "agent-3": [{"program": "x = 1"}]}
    provider = ScriptedProvider(script)
    ask = lambda agent: provider.complete(Request(agent, "coder", "m", [], []))  # noqa: E731
    assert ask("root").text == "a"
    assert ask("agent-3").tool_calls[0].name == "submit_program"
    assert ask("agent-4").text == "b"
    with pytest.raises(ProviderError):
        ask("root")
