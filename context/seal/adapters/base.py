"""What every provider adapter shares: the serialized request, its errors, id mapping.

Why this exists: the manifest's ``serialized_model_input_hash`` must identify the bytes a
provider receives, so every adapter produces the same kind of :class:`SerializedRequest`
(payload + canonical JSON + hash + the versions that shaped it) and validates the payload
*after* serialization against the provider's rules, raising :class:`SerializationError`
naming the broken rule. The engine turns that error into a blocked manifest
(``serialization_invalid``); nothing invalid is ever sent.

Prompt caching is requested in the payload itself (docs/context-engine.md#prompt-cache-identity),
so the hash covers it: the engine hands the adapter a :class:`CacheRequest` — where the
stable prefix ends, which rendered messages close a compaction boundary, and the per-job
cache key — and each adapter spells it the way its API does (Anthropic ``cache_control``
breakpoints, OpenAI ``prompt_cache_key``). ``cacheable_prefix_tokens`` is the engine's own
count of what was asked to be cached, beside which the provider's reported cache reads sit.

Call ids that do not fit a provider's id rules are mapped deterministically to
``call_`` + the first 24 hex digits of ``sha256(call_id)``; the mapping (original → sent)
is kept in ``SerializedRequest.id_map`` so the manifest's call ids stay the originals.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from context.canonical import canonical_json_large
from context.errors import ContextError
from context.items import sha256_text
from context.seal.render import AssemblyInput
from context.tokens import TokenCounter

__all__ = [
    "Adapter",
    "CacheRequest",
    "SerializationError",
    "SerializedRequest",
    "check_ids_unique",
    "finish",
    "map_call_id",
]


class SerializationError(ContextError):
    """A serialized payload breaks a provider rule; ``rule`` names it."""

    def __init__(self, adapter: str, rule: str, detail: str) -> None:
        super().__init__(f"{adapter}: rule {rule!r} broken: {detail}")
        self.adapter = adapter
        self.rule = rule
        self.detail = detail


class SerializedRequest(BaseModel):
    """The exact request body for a provider, with its identity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    adapter: str
    adapter_version: str
    serialization_policy_version: str
    payload: dict[str, Any]
    canonical_json: str
    hash: str
    id_map: dict[str, str] = {}


class CacheRequest(BaseModel):
    """What of a request the engine asks the provider to cache.

    ``stable_prefix``: the stable prefix (tool definitions, then the system message, in the
    order providers read them) closes with a cache breakpoint. ``boundaries``: indices into
    ``AssemblyInput.messages`` whose last block closes one too (the last compaction
    boundary of the history). ``key``: a per-job cache key with no secret in it (OpenAI's
    ``prompt_cache_key``: requests with one key are routed to the same cache)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stable_prefix: bool = False
    boundaries: tuple[int, ...] = ()
    key: str | None = None


class Adapter(Protocol):
    name: str
    version: str
    serialization_policy_version: str

    def serialize(
        self, assembly: AssemblyInput, model_name: str, max_tokens: int,
        cache: CacheRequest | None = None,
    ) -> SerializedRequest: ...

    def validate(self, payload: dict[str, Any]) -> None: ...

    def count_tokens(self, payload: dict[str, Any], counter: TokenCounter | None = None) -> int: ...

    def cacheable_prefix_tokens(
        self, payload: dict[str, Any], counter: TokenCounter | None = None
    ) -> int: ...


def map_call_id(call_id: str, pattern: re.Pattern[str], max_len: int) -> str:
    """``call_id`` itself when the provider accepts it, else a deterministic stand-in."""
    if len(call_id) <= max_len and pattern.fullmatch(call_id):
        return call_id
    return "call_" + hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:24]


def finish(adapter: Adapter, payload: dict[str, Any], id_map: dict[str, str]) -> SerializedRequest:
    """Validate ``payload`` and seal it into a :class:`SerializedRequest`."""
    adapter.validate(payload)
    try:
        text = canonical_json_large(payload)
    except (TypeError, ValueError) as exc:
        raise SerializationError(adapter.name, "canonical_json", str(exc)) from exc
    return SerializedRequest(
        adapter=adapter.name,
        adapter_version=adapter.version,
        serialization_policy_version=adapter.serialization_policy_version,
        payload=payload,
        canonical_json=text,
        hash=sha256_text(text),
        id_map={k: v for k, v in sorted(id_map.items()) if k != v},
    )


def check_ids_unique(
    adapter: str, id_map: dict[str, str], rule: str = "duplicate_tool_call_id"
) -> None:
    """Two different call ids must not map to the same sent id."""
    sent: dict[str, str] = {}
    for original, mapped in id_map.items():
        other = sent.setdefault(mapped, original)
        if other != original:
            raise SerializationError(
                adapter, rule, f"call ids {other!r} and {original!r} both serialize as {mapped!r}"
            )
