"""Model providers: ``get_provider(name, **config)`` → an object with ``complete(...)``.

``extractive`` (offline, deterministic default: the research agent decides research
turns, drafts are composed extractively), ``openai`` (also OpenAI-compatible
servers via ``OPENAI_BASE_URL``) and ``anthropic``. Errors: ``ProviderError`` and its
subclasses in ``contracts.errors``.
"""

from __future__ import annotations

from typing import Any

from activities.providers.base import ModelProvider, ProviderResult
from activities.providers.extractive import ExtractiveProvider, compose
from activities.providers.payload import RequestView, read_request
from activities.providers.remote import AnthropicProvider, OpenAIProvider
from activities.providers.research_agent import OfflineProvider
from contracts.errors import ProviderConfigError

PROVIDERS: dict[str, type[Any]] = {
    "extractive": OfflineProvider,
    "openai": OpenAIProvider,
    "anthropic": AnthropicProvider,
}


def get_provider(name: str, **config: Any) -> ModelProvider:
    """The provider called ``name``, configured with ``config`` (e.g. ``model=...``)."""
    try:
        cls = PROVIDERS[name]
    except KeyError:
        raise ProviderConfigError(
            f"unknown model provider {name!r}; known: {', '.join(sorted(PROVIDERS))}"
        ) from None
    try:
        provider: ModelProvider = cls(**config)
    except TypeError as exc:
        raise ProviderConfigError(f"bad configuration for provider {name!r}: {exc}") from exc
    return provider


__all__ = [
    "PROVIDERS",
    "AnthropicProvider",
    "ExtractiveProvider",
    "ModelProvider",
    "OfflineProvider",
    "OpenAIProvider",
    "ProviderResult",
    "RequestView",
    "compose",
    "get_provider",
    "read_request",
]
