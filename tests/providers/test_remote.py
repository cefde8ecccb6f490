"""OpenAI and Anthropic providers: request building and error paths only.

No test here calls a real API. Where a call path is exercised, a small fake stands in for
the paid SDK client (``_FakeClient``) or for the SDK module itself (installed into
``sys.modules``), and the test says so; the rest checks what would be sent and the typed
errors for a missing SDK, a missing key, a wrong adapter and failing calls.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from activities.providers import AnthropicProvider, OpenAIProvider, get_provider
from contracts.errors import (
    ProviderCallError,
    ProviderConfigError,
    ProviderInputError,
    ProviderUnavailable,
)
from tests.providers.conftest import BuiltRequest


class _APIError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"status {status_code}")
        self.status_code = status_code


class _FakeClient:
    """Fake of the paid SDK client: records the request, returns an SDK-shaped response."""

    def __init__(self, response: Any = None, error: Exception | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.response, self.error = response, error
        self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(create=self._create))
        self.messages = types.SimpleNamespace(create=self._create)

    async def _create(self, **kwargs: Any) -> Any:
        self.requests.append(kwargs)
        if self.error:
            raise self.error
        return self.response


def _ns(**kw: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**kw)


def test_get_provider_names_and_config_errors() -> None:
    assert isinstance(get_provider("openai", model="gpt-x"), OpenAIProvider)
    assert isinstance(get_provider("anthropic"), AnthropicProvider)
    with pytest.raises(ProviderConfigError, match="unknown model provider 'gpt'"):
        get_provider("gpt")
    with pytest.raises(ProviderConfigError, match="bad configuration"):
        get_provider("extractive", temperature=0.3)


def test_requests_are_the_sealed_payload(built: BuiltRequest) -> None:
    openai_payload = built.payload("openai_chat")
    assert OpenAIProvider().build_request(openai_payload, "openai_chat") == openai_payload
    overridden = OpenAIProvider(model="gpt-4.1").build_request(openai_payload, "openai_chat")
    assert overridden["model"] == "gpt-4.1" and overridden["messages"] == openai_payload["messages"]
    anthropic_payload = built.payload("anthropic_messages")
    assert AnthropicProvider().build_request(anthropic_payload, "anthropic_messages") == (
        anthropic_payload
    )
    with pytest.raises(ProviderConfigError, match="needs an openai_chat payload"):
        OpenAIProvider().build_request(anthropic_payload, "anthropic_messages")
    with pytest.raises(ProviderConfigError, match="needs an anthropic_messages payload"):
        AnthropicProvider().build_request(openai_payload, "openai_chat")
    with pytest.raises(ProviderInputError, match="max_tokens"):
        AnthropicProvider().build_request(
            {k: v for k, v in anthropic_payload.items() if k != "max_tokens"},
            "anthropic_messages",
        )


@pytest.mark.parametrize("cls,module", [(OpenAIProvider, "openai"),
                                        (AnthropicProvider, "anthropic")])
async def test_missing_sdk_is_provider_unavailable(
    built: BuiltRequest, monkeypatch: pytest.MonkeyPatch, cls: Any, module: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    provider = cls()
    with pytest.raises(ProviderUnavailable, match=r"pressroom\[providers\]"):
        await provider.complete(built.payload(cls.adapter), adapter=cls.adapter, purpose="draft")


@pytest.mark.parametrize("cls,module,sdk_class", [
    (OpenAIProvider, "openai", "AsyncOpenAI"),
    (AnthropicProvider, "anthropic", "AsyncAnthropic"),
])
async def test_missing_key_is_a_config_error(
    built: BuiltRequest, monkeypatch: pytest.MonkeyPatch, cls: Any, module: str, sdk_class: str
) -> None:
    # A fake SDK module stands in for the installed package; it is never asked to call out.
    fake = types.ModuleType(module)
    setattr(fake, sdk_class, lambda **kw: pytest.fail("client built without a key"))
    monkeypatch.setitem(sys.modules, module, fake)
    monkeypatch.delenv(cls.env_key, raising=False)
    with pytest.raises(ProviderConfigError, match=cls.env_key):
        await cls().complete(built.payload(cls.adapter), adapter=cls.adapter, purpose="draft")


async def test_openai_response_and_usage_with_a_fake_client(built: BuiltRequest) -> None:
    response = _ns(choices=[_ns(message=_ns(content="draft text"))],
                   usage=_ns(prompt_tokens=1234, completion_tokens=56), model="gpt-x-2025")
    client = _FakeClient(response)
    result = await OpenAIProvider(client=client).complete(
        built.payload("openai_chat"), adapter="openai_chat", purpose="draft"
    )
    assert client.requests == [built.payload("openai_chat")]
    assert (result.text, result.input_tokens, result.output_tokens) == ("draft text", 1234, 56)
    assert (result.provider, result.model) == ("openai", "gpt-x-2025")


async def test_anthropic_response_and_usage_with_a_fake_client(built: BuiltRequest) -> None:
    response = _ns(content=[_ns(type="text", text="part one, "), _ns(type="tool_use"),
                            _ns(type="text", text="part two")],
                   usage=_ns(input_tokens=999, output_tokens=12), model="claude-x")
    result = await AnthropicProvider(client=_FakeClient(response)).complete(
        built.payload("anthropic_messages"), adapter="anthropic_messages", purpose="draft"
    )
    assert result.text == "part one, part two"
    assert (result.input_tokens, result.output_tokens, result.model) == (999, 12, "claude-x")


@pytest.mark.parametrize("status,retryable", [(429, True), (503, True), (400, False),
                                              (401, False)])
async def test_call_failures_are_typed_with_retryability(
    built: BuiltRequest, status: int, retryable: bool
) -> None:
    provider = OpenAIProvider(client=_FakeClient(error=_APIError(status)))
    with pytest.raises(ProviderCallError, match=f"HTTP {status}") as info:
        await provider.complete(built.payload("openai_chat"), adapter="openai_chat",
                                purpose="draft")
    assert info.value.retryable is retryable


def test_provider_errors_tell_temporal_whether_to_retry() -> None:
    from temporalio.exceptions import ApplicationError

    missing_key = ProviderConfigError("OPENAI_API_KEY is not set")
    assert isinstance(missing_key, ApplicationError) and isinstance(missing_key, ValueError)
    assert missing_key.non_retryable and missing_key.type == "ProviderConfigError"
    assert ProviderUnavailable("no sdk").non_retryable
    assert not ProviderCallError("429", retryable=True).non_retryable
    assert ProviderCallError("400", retryable=False).non_retryable


def test_the_submit_time_provider_table_matches_the_provider_classes() -> None:
    """``pressroom check`` refuses a provider/adapter pair from
    ``contracts.model_endpoints``' table; the classes that send the requests agree with it."""
    from activities.providers import PROVIDERS
    from contracts.model_endpoints import PROVIDER_ADAPTERS, PROVIDER_KEY_ENV

    assert set(PROVIDERS) == set(PROVIDER_ADAPTERS)
    for name, cls in PROVIDERS.items():
        assert getattr(cls, "adapter", None) == PROVIDER_ADAPTERS[name], name
        assert getattr(cls, "env_key", None) == PROVIDER_KEY_ENV.get(name), name
