"""OpenAI-compatible and Anthropic providers through their official SDKs.

The SDKs are an optional extra (``pip install 'pressroom[providers]'``) and are imported
only when a call is made, so the offline default never needs them. Keys come from the
environment (``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``; ``OPENAI_BASE_URL`` selects an
OpenAI-compatible endpoint). The payload is sent exactly as the context engine serialized
and hashed it — these classes add nothing to the request but the SDK's transport — so the
manifest's ``serialized_model_input_hash`` identifies what the provider received.

Tests exercise request building and every error path only; no test calls a real API.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

from activities.providers.base import ProviderResult
from contracts.errors import (
    ProviderCallError,
    ProviderConfigError,
    ProviderInputError,
    ProviderUnavailable,
)

_RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


def _import_sdk(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ProviderUnavailable(
            f"the {module!r} SDK is not installed; install it with "
            "`pip install 'pressroom[providers]'` or use provider 'extractive'"
        ) from exc


def _key(env_var: str, given: str | None) -> str:
    key = given or os.environ.get(env_var)
    if not key:
        raise ProviderConfigError(f"{env_var} is not set; export it or use provider 'extractive'")
    return key


def _call_error(provider: str, exc: Exception) -> ProviderCallError:
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    retryable = status in _RETRYABLE_STATUS or (
        status is None and ("Connection" in name or "Timeout" in name)
    )
    where = f"HTTP {status}" if status else name
    return ProviderCallError(f"{provider} call failed ({where}): {exc}", retryable=retryable)


def _checked_request(
    name: str, expected: str, model: str | None, payload: dict[str, Any], adapter: str
) -> dict[str, Any]:
    """A copy of ``payload`` for the SDK call, after the checks both providers share."""
    if adapter != expected:
        raise ProviderConfigError(f"provider {name} needs an {expected} payload, got {adapter}")
    if not isinstance(payload.get("messages"), list) or not payload["messages"]:
        raise ProviderInputError("request has no messages")
    request = dict(payload)
    if model:
        request["model"] = model
    return request


class OpenAIProvider:
    """Chat Completions through ``openai.AsyncOpenAI`` (also OpenAI-compatible servers)."""

    name = "openai"
    adapter = "openai_chat"
    env_key = "OPENAI_API_KEY"

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 120.0,
        client: Any = None,
    ) -> None:
        self.model, self.api_key, self.timeout, self._client = model, api_key, timeout, client
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")

    def build_request(self, payload: dict[str, Any], adapter: str) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create``: the payload, unchanged."""
        return _checked_request(self.name, self.adapter, self.model, payload, adapter)

    def client(self) -> Any:
        if self._client is None:
            sdk = _import_sdk("openai")
            self._client = sdk.AsyncOpenAI(
                api_key=_key(self.env_key, self.api_key), base_url=self.base_url,
                timeout=self.timeout, max_retries=0,  # Temporal owns retries
            )
        return self._client

    async def complete(
        self, payload: dict[str, Any], *, adapter: str, purpose: str
    ) -> ProviderResult:
        request = self.build_request(payload, adapter)
        client = self.client()
        try:
            response = await client.chat.completions.create(**request)
        except Exception as exc:
            raise _call_error(self.name, exc) from exc
        if not response.choices:
            raise ProviderCallError(f"{self.name} returned no choices", retryable=True)
        usage = getattr(response, "usage", None)
        return ProviderResult(
            text=response.choices[0].message.content or "",
            input_tokens=getattr(usage, "prompt_tokens", None),
            output_tokens=getattr(usage, "completion_tokens", None),
            model=getattr(response, "model", None) or request["model"],
            provider=self.name,
        )


class AnthropicProvider:
    """Messages API through ``anthropic.AsyncAnthropic``."""

    name = "anthropic"
    adapter = "anthropic_messages"
    env_key = "ANTHROPIC_API_KEY"

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        client: Any = None,
    ) -> None:
        self.model, self.api_key, self.timeout, self._client = model, api_key, timeout, client

    def build_request(self, payload: dict[str, Any], adapter: str) -> dict[str, Any]:
        """The keyword arguments of ``messages.create``: the payload, unchanged."""
        request = _checked_request(self.name, self.adapter, self.model, payload, adapter)
        if "max_tokens" not in request:
            raise ProviderInputError("an anthropic_messages request needs max_tokens")
        return request

    def client(self) -> Any:
        if self._client is None:
            sdk = _import_sdk("anthropic")
            self._client = sdk.AsyncAnthropic(
                api_key=_key(self.env_key, self.api_key), timeout=self.timeout, max_retries=0
            )
        return self._client

    async def complete(
        self, payload: dict[str, Any], *, adapter: str, purpose: str
    ) -> ProviderResult:
        request = self.build_request(payload, adapter)
        client = self.client()
        try:
            response = await client.messages.create(**request)
        except Exception as exc:
            raise _call_error(self.name, exc) from exc
        text = "".join(
            getattr(block, "text", "") for block in response.content
            if getattr(block, "type", None) == "text"
        )
        usage = getattr(response, "usage", None)
        return ProviderResult(
            text=text,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
            model=getattr(response, "model", None) or request["model"],
            provider=self.name,
        )
