"""Provider secrets (issue 19): a launch spec reads only the key variables and calls only the hosts
the operator allows; a provider's redirect is not followed and its error body is cut short."""

import json

import pytest

from runs.engine.providers import OpenAIProvider, ProviderError, Request
from runs.engine.validation import validate_spec
from tests.engine_helpers import LocalPost, run_spec, tool_agent


def openai_spec(**provider):
    return {"task": "t", "agents": [tool_agent("coder", [{"id": "list-dir", "enabled": True}])],
            "provider": {"kind": "openai", "model": "m", "baseUrl": "http://127.0.0.1:9/v1", **provider}}


def errors_of(data):
    spec, errors = validate_spec(data)
    assert spec is None
    return {e["path"]: e["message"] for e in errors}


@pytest.fixture(autouse=True)
def allow_localhost(settings):
    settings.GG_PROVIDER_HOSTS = ("127.0.0.1",)
    settings.GG_PROVIDER_KEY_ENVS = ("OPENROUTER_API_KEY",)


@pytest.mark.parametrize("name", ["HOME", "DJANGO_SECRET_KEY", "PATH", "GG_PROVIDER_KEY_"])
def test_apikeyenv_off_the_allowlist_is_refused_naming_the_field(name):
    message = errors_of(openai_spec(apiKeyEnv=name))["provider.apiKeyEnv"]
    assert name in message and "GG_PROVIDER_KEY_" in message


@pytest.mark.parametrize("name", ["GG_PROVIDER_KEY_OPENAI", "OPENROUTER_API_KEY"])
def test_allowed_key_variables_validate(name):
    spec, errors = validate_spec(openai_spec(apiKeyEnv=name))
    assert errors == [] and spec is not None


@pytest.mark.parametrize("url, words", [
    ("http://10.0.0.5:5432/v1", "not a provider host"), ("http://localhost:8000/v1", "not a provider host"),
    ("http://user:pw@127.0.0.1/v1", "no user name"), ("ftp://127.0.0.1/v1", "http(s)"),
    ("http://127.0.0.1.evil.test/v1", "not a provider host"), ("http://[::1/v1", "not a URL"),
])
def test_base_urls_off_the_allowlist_are_refused(url, words):
    assert words in errors_of(openai_spec(baseUrl=url))["provider.baseUrl"]


def test_an_empty_host_allowlist_refuses_every_openai_provider(settings):
    settings.GG_PROVIDER_HOSTS = ()
    assert "GG_PROVIDER_HOSTS" in errors_of(openai_spec())["provider.baseUrl"]
    settings.GG_PROVIDER_HOSTS = ("*.example.com", "api.test:8443")
    assert validate_spec(openai_spec(baseUrl="https://llm.example.com/v1"))[1] == []
    assert validate_spec(openai_spec(baseUrl="https://api.test:8443/v1"))[1] == []
    assert "provider.baseUrl" in errors_of(openai_spec(baseUrl="https://api.test/v1"))
    assert "provider.baseUrl" in errors_of(openai_spec(baseUrl="https://example.com.evil/v1"))


@pytest.mark.django_db
def test_a_refused_key_variable_is_never_sent(tmp_path, monkeypatch):
    """`apiKeyEnv: HOME` at a local listener delivered `Bearer /root`; now the run never starts."""
    seen = []

    def answer(handler):
        seen.append(handler.headers.get("Authorization"))
        handler.send_response(500)
        handler.end_headers()

    server = LocalPost(answer, "/v1")
    try:
        run, records = run_spec(openai_spec(apiKeyEnv="HOME", baseUrl=server.url), tmp_path)
    finally:
        server.close()
    assert run.status == "error" and seen == []
    assert any("provider.apiKeyEnv" in r.get("message", "") for r in records)


class Answering(LocalPost):
    """A local endpoint giving one fixed status, headers and body to every POST."""

    def __init__(self, status, body=b"", headers=()):
        self.hits, self.status, self.body, self.headers = [], status, body, headers
        super().__init__(self._answer)

    def _answer(self, handler):
        self.hits.append(handler.path)
        handler.rfile.read(int(handler.headers["Content-Length"]))
        handler.send_response(self.status)
        for name, value in self.headers:
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(self.body)))
        handler.end_headers()
        handler.wfile.write(self.body)


def test_a_redirect_is_not_followed():
    inside = Answering(200, json.dumps({"choices": [{"message": {"content": "internal"}}]}).encode())
    redirecting = Answering(307, headers=[("Location", inside.url + "/internal")])
    try:
        with pytest.raises(ProviderError) as refused:
            OpenAIProvider(redirecting.url + "/v1", "m").complete(Request("root", "p", "m", [], []))
    finally:
        inside.close()
        redirecting.close()
    assert refused.value.error_type == "model_rejected" and "not followed" in str(refused.value)
    assert inside.hits == []


def test_an_error_body_is_cut_before_it_reaches_the_stream():
    leaky = Answering(500, ("internal page line\n" * 5000).encode())
    try:
        with pytest.raises(ProviderError) as failed:
            OpenAIProvider(leaky.url + "/v1", "m").complete(Request("root", "p", "m", [], []))
    finally:
        leaky.close()
    assert len(str(failed.value)) < 200 and "\n" not in str(failed.value)
