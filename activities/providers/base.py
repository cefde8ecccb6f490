"""The model-provider interface and its result.

A provider turns one serialized request (the exact payload the context engine sealed) into
text plus token usage. ``ProviderResult.input_tokens`` is the provider's own count (the
API's usage for remote providers, the tiktoken count of the payload for ``extractive``);
the draft activity writes it back to the manifest beside the engine's estimate.

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
    model: str
    provider: str


@runtime_checkable
class ModelProvider(Protocol):
    """A model behind one call: ``complete(payload, adapter=..., purpose=...)``."""

    name: str

    async def complete(
        self, payload: dict[str, Any], *, adapter: str, purpose: str
    ) -> ProviderResult: ...
