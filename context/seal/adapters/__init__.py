"""Provider adapters: AssemblyInput → validated provider request (``SerializedRequest``).

``get_adapter(name)`` returns the adapter for ``"openai_chat"`` or ``"anthropic_messages"``;
each has ``name``, ``version``, ``serialization_policy_version``, ``serialize(assembly,
model_name, max_tokens)``, ``validate(payload)`` and ``count_tokens(payload)``. A payload
that breaks a provider rule raises ``SerializationError`` (``.rule`` names it).
"""

from __future__ import annotations

from context.seal.adapters.anthropic_messages import AnthropicMessagesAdapter
from context.seal.adapters.base import (
    Adapter,
    CacheRequest,
    SerializationError,
    SerializedRequest,
)
from context.seal.adapters.openai_chat import OpenAIChatAdapter
from context.vocabulary import ADAPTER_NAMES

__all__ = [
    "ADAPTERS",
    "Adapter",
    "AnthropicMessagesAdapter",
    "CacheRequest",
    "OpenAIChatAdapter",
    "SerializationError",
    "SerializedRequest",
    "get_adapter",
]

ADAPTERS: dict[str, Adapter] = {
    adapter.name: adapter for adapter in (OpenAIChatAdapter(), AnthropicMessagesAdapter())}
assert tuple(ADAPTERS) == ADAPTER_NAMES, "one adapter per context.vocabulary.ADAPTER_NAMES"


def get_adapter(name: str) -> Adapter:
    """The adapter called ``name``; an unknown name is a ``ValueError`` listing the known."""
    try:
        return ADAPTERS[name]
    except KeyError:
        raise ValueError(f"unknown adapter {name!r}; known: {sorted(ADAPTERS)}") from None
