"""The model-provider interface, its result, and its errors (one hierarchy).

A provider turns one serialized request (the exact payload the context engine sealed) into
text plus token usage. ``ProviderResult.input_tokens`` is the provider's own count (the
API's usage for remote providers, the tiktoken count of the payload for ``extractive``);
the draft activity writes it back to the manifest beside the engine's estimate.

Errors — ``ProviderError`` is the root:

- ``ProviderUnavailable`` — the provider's SDK is not installed (``pip install
  'pressroom[providers]'``). Not retryable.
- ``ProviderConfigError`` — unknown provider name, missing API key, or a payload built for
  another adapter than the provider speaks. Not retryable.
- ``ProviderInputError`` — the payload cannot be read (no messages, malformed data block).
  Not retryable.
- ``ProviderCallError`` — the remote API failed (network, rate limit, server error); it
  carries ``retryable`` so Temporal retries only what may succeed.

Every provider error is a Temporal ``ApplicationError`` whose ``type`` is the class name
and whose ``non_retryable`` is ``not retryable``: raised inside an activity, a missing key
fails the step at once instead of being retried until the activity times out.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field
from temporalio.exceptions import ApplicationError


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


class ProviderError(ApplicationError):
    """Root of every provider error."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message, type=type(self).__name__, non_retryable=not retryable)
        self.retryable = retryable


class ProviderUnavailable(ProviderError):
    """The SDK a provider needs is not installed."""


class ProviderConfigError(ProviderError, ValueError):
    """A provider is misconfigured (name, key, adapter)."""


class ProviderInputError(ProviderError, ValueError):
    """The serialized request cannot be read by the provider."""


class ProviderCallError(ProviderError):
    """The remote API call failed; ``retryable`` says whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message, retryable=retryable)
