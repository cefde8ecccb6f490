"""OpenAI-compatible and Anthropic providers through their official SDKs.

The SDKs are an optional extra (``pip install 'pressroom[providers]'``) and are imported
only when a call is made, so the offline default never needs them. Keys come from the
environment (``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``; ``OPENAI_BASE_URL`` selects the
worker's default OpenAI-compatible endpoint; a job's own ``model.base_url``, from the
operator's list, and its key are passed in by ``activities.providers.provider_for``).
The payload is sent exactly as the context engine serialized and hashed it — these
classes add nothing to the request but the SDK's transport — so the manifest's
``serialized_model_input_hash`` identifies what the provider received.

``complete`` returns text (drafting); ``decide`` returns the native tool calls of one
research turn (OpenAI ``tool_calls``, Anthropic ``tool_use`` blocks), in the order the model
gave them. Arguments that are not a JSON object are kept raw in ``malformed`` rather than
raised, so the research loop can answer the model with a typed error instead of failing.
A failed call becomes a ``ProviderCallError``; an API's ``Retry-After`` rides on it as
Temporal's next retry delay (the SDK clients never retry: Temporal bounds the attempts),
and the API key is scrubbed from its message.

No test calls a real API: tests replay API-shaped responses through the official SDK's HTTP
transport, so parsing and error mapping run through the real client code.
"""

from __future__ import annotations

import importlib
import json
import math
import os
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any, TypedDict

from activities.providers.base import ProposedToolCall, ProviderDecision, ProviderResult
from contracts.errors import (
    ProviderCallError,
    ProviderConfigError,
    ProviderInputError,
    ProviderUnavailable,
)

_RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
# Raw arguments kept for the research loop's error result; enough to see what went wrong,
# bounded so a runaway model cannot bloat workflow history.
_MALFORMED_LIMIT = 2000
_REDACTED = "[redacted]"


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


def retry_after_seconds(headers: Any, now: datetime | None = None) -> float | None:
    """The wait an HTTP response asked for: ``retry-after-ms`` (OpenAI sends it beside the
    standard header and it is more precise), else ``Retry-After`` as seconds or an HTTP
    date. ``None`` when absent or unparsable; clamping is ``ProviderCallError``'s job."""
    if headers is None:
        return None
    for header, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        return seconds if math.isfinite(seconds) else None
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000" dates parse naive; HTTP dates are always GMT
        when = when.replace(tzinfo=UTC)
    return (when - (now or datetime.now(UTC))).total_seconds()


def _scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, _REDACTED)
    return text


def _call_error(provider: str, exc: Exception, secrets: Iterable[str] = ()) -> ProviderCallError:
    """The typed error for a failed SDK call, with the API's Retry-After and no secret."""
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    retryable = status in _RETRYABLE_STATUS or (
        status is None and ("Connection" in name or "Timeout" in name)
    )
    where = f"HTTP {status}" if status else name
    return ProviderCallError(
        _scrub(f"{provider} call failed ({where}): {exc}", secrets),
        retryable=retryable,
        retry_after=retry_after_seconds(getattr(getattr(exc, "response", None), "headers", None)),
    )


async def _send(
    provider: str, create: Callable[..., Awaitable[Any]], request: dict[str, Any],
    secrets: Iterable[str],
) -> Any:
    """``create(**request)``, with any failure turned into a ``ProviderCallError``."""
    try:
        return await create(**request)
    except Exception as exc:
        known = [secret for secret in secrets if secret]
        # Temporal records an error's cause in workflow history; a cause that quotes the
        # key is dropped rather than stored.
        leaks = any(secret in str(exc) for secret in known)
        raise _call_error(provider, exc, known) from (None if leaks else exc)


def _arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """``(arguments, malformed)`` for one call's raw arguments: a JSON object, or ``{}``
    and the raw text (truncated) when it is not one."""
    if isinstance(raw, dict):
        return raw, None
    text = raw if isinstance(raw, str) else json.dumps(raw, default=str)
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        parsed = None
    if isinstance(parsed, dict):
        return parsed, None
    return {}, text[:_MALFORMED_LIMIT]


def _proposed(call_id: Any, name: Any, raw_arguments: Any) -> ProposedToolCall:
    arguments, malformed = _arguments(raw_arguments)
    return ProposedToolCall(
        provider_call_id=str(call_id or ""), name=str(name or ""),
        arguments=arguments, malformed=malformed,
    )


def _count(value: Any) -> int | None:
    """A token count the API reported: a non-negative int, else ``None`` (not said)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


class _Usage(TypedDict):
    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None
    cache_write_input_tokens: int | None


def _openai_usage(usage: Any) -> _Usage:
    """Chat Completions usage: ``prompt_tokens`` already counts the cached part
    (``prompt_tokens_details.cached_tokens``); OpenAI bills no cache writes."""
    prompt = _count(getattr(usage, "prompt_tokens", None))
    details = getattr(usage, "prompt_tokens_details", None)
    cached = _count(getattr(details, "cached_tokens", None))
    return {"input_tokens": prompt, "output_tokens": _count(getattr(usage, "completion_tokens",
                                                                    None)),
            "cached_input_tokens": cached,
            "cache_write_input_tokens": None if prompt is None else 0}


def _anthropic_usage(usage: Any) -> _Usage:
    """Messages usage: ``input_tokens`` is only the input after the last cache breakpoint
    (neither read from nor written to the cache), so every input token of the request is
    the sum of it, ``cache_read_input_tokens`` and ``cache_creation_input_tokens``
    (activities/providers/base.py)."""
    rest = _count(getattr(usage, "input_tokens", None))
    read = _count(getattr(usage, "cache_read_input_tokens", None))
    write = _count(getattr(usage, "cache_creation_input_tokens", None))
    total = None if rest is None else rest + (read or 0) + (write or 0)
    return {"input_tokens": total, "output_tokens": _count(getattr(usage, "output_tokens", None)),
            "cached_input_tokens": read, "cache_write_input_tokens": write}


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
        request, response = await self._create(payload, adapter)
        usage = getattr(response, "usage", None)
        return ProviderResult(
            text=response.choices[0].message.content or "",
            **_openai_usage(usage),
            model=getattr(response, "model", None) or request["model"],
            provider=self.name,
        )

    async def decide(self, payload: dict[str, Any], *, adapter: str) -> ProviderDecision:
        """One research turn; parallel calls are several ``tool_calls`` entries, in order."""
        request, response = await self._create(payload, adapter)
        choice = response.choices[0]
        message = choice.message
        calls: list[ProposedToolCall] = []
        for call in getattr(message, "tool_calls", None) or []:
            function = getattr(call, "function", None)
            if function is not None:
                calls.append(_proposed(call.id, function.name, function.arguments))
                continue
            # A custom (free-text) tool call names no tool that was sent (all are functions);
            # it is kept as malformed, not dropped, so the loop can still answer its id.
            custom = getattr(call, "custom", None)
            calls.append(ProposedToolCall(
                provider_call_id=str(call.id or ""), name=str(getattr(custom, "name", "")),
                malformed=str(getattr(custom, "input", ""))[:_MALFORMED_LIMIT],
            ))
        usage = getattr(response, "usage", None)
        return ProviderDecision(
            tool_calls=calls,
            text=message.content or "",
            **_openai_usage(usage),
            model=getattr(response, "model", None) or request["model"],
            provider=self.name,
            stop_reason=getattr(choice, "finish_reason", None),
        )

    async def _create(self, payload: dict[str, Any], adapter: str) -> tuple[dict[str, Any], Any]:
        """The request sent and the SDK's response, which has at least one choice."""
        request = self.build_request(payload, adapter)
        client = self.client()
        response = await _send(
            self.name, client.chat.completions.create, request,
            (self.api_key or "", getattr(client, "api_key", None) or ""),
        )
        if not response.choices:
            raise ProviderCallError(f"{self.name} returned no choices", retryable=True)
        return request, response


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
        request, response = await self._create(payload, adapter)
        usage = getattr(response, "usage", None)
        return ProviderResult(
            text=_anthropic_text(response),
            **_anthropic_usage(usage),
            model=getattr(response, "model", None) or request["model"],
            provider=self.name,
        )

    async def decide(self, payload: dict[str, Any], *, adapter: str) -> ProviderDecision:
        """One research turn; parallel calls are several ``tool_use`` blocks, in order."""
        request, response = await self._create(payload, adapter)
        calls = [
            _proposed(block.id, block.name, block.input) for block in response.content
            if getattr(block, "type", None) == "tool_use"
        ]
        usage = getattr(response, "usage", None)
        return ProviderDecision(
            tool_calls=calls,
            text=_anthropic_text(response),
            **_anthropic_usage(usage),
            model=getattr(response, "model", None) or request["model"],
            provider=self.name,
            stop_reason=getattr(response, "stop_reason", None),
        )

    async def _create(self, payload: dict[str, Any], adapter: str) -> tuple[dict[str, Any], Any]:
        """The request sent and the SDK's response."""
        request = self.build_request(payload, adapter)
        client = self.client()
        response = await _send(
            self.name, client.messages.create, request,
            (self.api_key or "", getattr(client, "api_key", None) or ""),
        )
        return request, response


def _anthropic_text(response: Any) -> str:
    """The text blocks of a Messages response, joined (``tool_use`` blocks are not text)."""
    return "".join(
        getattr(block, "text", "") for block in response.content
        if getattr(block, "type", None) == "text"
    )
