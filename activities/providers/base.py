"""The model-provider interface and its result.

A provider turns one serialized request (the exact payload the context engine sealed) into
text plus token usage. ``ProviderResult.input_tokens`` is the provider's own count (the
API's usage for remote providers, the tiktoken count of the payload for ``extractive``);
the draft activity writes it back to the manifest beside the engine's estimate.

Prompt caching (docs/context-engine.md#prompt-cache-identity): ``input_tokens`` is *every*
input token of the request, cached or not, for both APIs (OpenAI's ``prompt_tokens``
already is; Anthropic's ``input_tokens`` counts only the uncached rest, so its cache reads
and writes are added). ``cached_input_tokens`` is the part of it the provider read from its
prompt cache (OpenAI ``prompt_tokens_details.cached_tokens``, Anthropic
``cache_read_input_tokens``) and ``cache_write_input_tokens`` the part it wrote to the cache
(Anthropic ``cache_creation_input_tokens``; OpenAI bills no writes, so 0). ``None`` means the
provider did not say. The uncached, unwritten rest is ``input - cached - cache_write``.

Errors: ``ProviderError`` and its subclasses live in ``contracts.errors``, because the
workflow's retry policy names the permanent ones by class and must not import this code.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class ProviderResult(BaseModel):
    """What one model call produced."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cached_input_tokens: int | None = Field(default=None, ge=0)
    cache_write_input_tokens: int | None = Field(default=None, ge=0)
    model: str
    provider: str


class ProposedToolCall(BaseModel):
    """One tool call a model asked for, as it asked: its own id, the tool, the arguments.

    ``arguments`` is the parsed JSON object; a model that sent arguments which are not a
    JSON object gets ``arguments == {}`` and the raw text in ``malformed`` — the research
    loop then records a typed ``malformed_arguments`` error result instead of failing.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider_call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    malformed: str | None = None


class ProviderDecision(BaseModel):
    """What one research-turn model call produced: the tool calls it asked for (in the
    order given; several at once are parallel calls), any text, and token usage."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool_calls: list[ProposedToolCall] = Field(default_factory=list)
    text: str = ""
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cached_input_tokens: int | None = Field(default=None, ge=0)
    cache_write_input_tokens: int | None = Field(default=None, ge=0)
    model: str
    provider: str
    stop_reason: str | None = None


@runtime_checkable
class ModelProvider(Protocol):
    """A model behind one call: ``complete(payload, adapter=..., purpose=...)``."""

    name: str

    async def complete(
        self, payload: dict[str, Any], *, adapter: str, purpose: str
    ) -> ProviderResult: ...

    async def decide(self, payload: dict[str, Any], *, adapter: str) -> ProviderDecision:
        """One research turn: the payload carries ``tools``; the answer is tool calls."""
        ...
