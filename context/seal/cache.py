"""Prompt-cache identity of an assembly (docs/context-engine.md#prompt-cache-identity).

The stable prefix is the control zone (the system message built from control items) plus
the tool definitions — the part a provider can reuse byte for byte. It is cache-eligible
only when every control item comes from a source type the policy lists in
``cache.stable_prefix_sources`` (default: ``system_policy``). Two values identify
it:

* ``prefix_hash``: sha256 over the canonical JSON of exactly those bytes' sources (the
  control message text, the tool definitions, the adapter and model name — a provider
  cache is per model and wire format);
* ``prefix_identity``: sha256 over *why* the prefix is what it is — the ordered control
  source ids and their content hashes, the tool definitions' digest, and the policy id,
  revision and digest.

Status against the previous manifest of the same run: ``bypassed`` when there is no
previous manifest, it belongs to another run, this assembly is blocked (no call follows)
or has no control prefix; ``miss`` when the policy revision (or digest) changed — always,
even if the bytes happen to match — or when either value differs, or the previous
attempt was blocked; otherwise ``hit``. A hit is an execution optimisation only: every
item was still re-admitted through the gates.

What is *requested* of the provider is part of the sealed request (the adapters place it,
``context.seal.adapters.base.CacheRequest``): a breakpoint at the end of the stable prefix
and one at the last compaction boundary of the history (Anthropic), and a per-job
``prompt_cache_key`` (OpenAI) — ``prompt_cache_key`` derives it from the run id and the
prefix identity, hashed, so nothing of the job's text or any secret is in it. The entry
records what was requested (``breakpoints``, ``prompt_cache_key``) and the engine's own
count of the cacheable prefix in tokens (``cacheable_prefix_tokens``), beside which the
store later keeps what the provider reported it read from and wrote to its cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from context.items import ContextItem, sha256_text
from context.manifest import CacheEntry, ContextAssemblyManifest, canonical
from context.policy import ContextPolicy
from context.seal.adapters.base import Adapter
from context.seal.render import AssemblyInput
from context.tokens import TokenCounter
from context.vocabulary import CacheStatus, Zone


def prefix_values(
    assembly: AssemblyInput,
    control_items: Sequence[ContextItem],
    policy: ContextPolicy,
    adapter: str,
    model_name: str,
) -> tuple[str, str]:
    control_text = [m.content or "" for m in assembly.messages if m.zone is Zone.CONTROL]
    tools = [t.model_dump(mode="json") for t in assembly.tool_definitions]
    wire = {"adapter": adapter, "model": model_name, "control": control_text, "tools": tools}
    prefix_hash = sha256_text(canonical(wire))
    identity = sha256_text(
        canonical(
            {
                "source_ids": [i.item_id for i in control_items],
                "content_hashes": [i.content_hash for i in control_items],
                "tools_digest": sha256_text(canonical(tools)),
                "policy": [policy.id, policy.revision, policy.digest],
            }
        )
    )
    return prefix_hash, identity


def prompt_cache_key(run_id: str, prefix_identity: str) -> str:
    """The per-job cache key: ``pressroom-`` and 32 hex digits of a hash of the run id and
    the stable prefix's identity — one key per job and prefix, within OpenAI's 64
    characters, naming neither the job nor anything in its request."""
    return "pressroom-" + sha256_text(canonical([run_id, prefix_identity]))[7:39]


def requested(payload: dict[str, Any], adapter: Adapter, counter: TokenCounter
              ) -> dict[str, Any]:
    """What ``payload`` asks the provider to cache, and the engine's count of it."""
    found = 0
    for block in [*(payload.get("tools") or []),
                  *(payload["system"] if isinstance(payload.get("system"), list) else []),
                  *(b for m in payload.get("messages") or []
                    if isinstance(m.get("content"), list) for b in m["content"])]:
        found += isinstance(block, dict) and "cache_control" in block
    key = payload.get("prompt_cache_key")
    return {"breakpoints": found, "prompt_cache_key": key if isinstance(key, str) else None,
            "cacheable_prefix_tokens": adapter.cacheable_prefix_tokens(payload, counter)}


def _wire_segments(payload: dict[str, Any]) -> list[str]:
    """The request's parts in the order providers read them — tool definitions, system,
    then each message's blocks — without ``cache_control`` (a breakpoint marks where to
    cache; it is not content the cache compares)."""

    def plain(value: Any) -> str:
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if k != "cache_control"}
        return canonical(value)

    out = [plain(t) for t in payload.get("tools") or []]
    system = payload.get("system")
    if isinstance(system, str):
        out.append(system)
    elif isinstance(system, list):
        out += [plain(b) for b in system]
    for m in payload.get("messages") or []:
        content = m.get("content")
        head = plain({k: v for k, v in m.items() if k != "content"})
        if isinstance(content, list):
            out += [head, *(plain(b) for b in content)]
        else:
            out += [head, content if isinstance(content, str) else plain(content)]
    return out


def _common_prefix(a: str, b: str) -> str:
    """The longest common leading substring (bisected on slice equality)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return a[:low]


def shared_prefix_tokens(previous: dict[str, Any] | None, payload: dict[str, Any],
                         counter: TokenCounter, adapter: Adapter) -> int:
    """Tokens of the longest byte-identical prefix ``payload`` shares with ``previous``, in
    the providers' order: what a prefix cache holding ``previous`` could serve — never
    more than ``previous`` itself counts (the parts are counted one by one, without the
    request's framing). The offline provider reports it as its cached input
    (docs/context-engine.md#prompt-cache-identity)."""
    if previous is None:
        return 0
    return min(_shared(previous, payload, counter), adapter.count_tokens(previous, counter))


def _shared(previous: dict[str, Any], payload: dict[str, Any], counter: TokenCounter) -> int:
    total = 0
    for old, new in zip(_wire_segments(previous), _wire_segments(payload), strict=False):
        if old == new:
            total += counter.count_text(new)
            continue
        same = _common_prefix(old, new)
        return total + (counter.count_text(same) if same else 0)
    return total


def cache_entry(
    *,
    run_id: str,
    policy: ContextPolicy,
    previous: ContextAssemblyManifest | None,
    prefix: tuple[str, str] | None,
    blocked: bool,
) -> CacheEntry:
    prefix_hash, identity = prefix if prefix is not None else (None, None)
    eligible = prefix is not None

    def entry(status: CacheStatus, reason: str) -> CacheEntry:
        return CacheEntry(
            prefix_hash=prefix_hash,
            prefix_identity=identity,
            policy="eligible" if eligible else "ineligible",
            status=status,
            previous_assembly_id=previous.assembly_id if previous is not None else None,
            reason=reason,
        )

    if blocked:
        return entry(CacheStatus.BYPASSED, "assembly blocked: no model call follows")
    if not eligible:
        return entry(CacheStatus.BYPASSED, "no stable prefix (no control items, or control "
                     "items from sources outside cache.stable_prefix_sources)")
    if previous is None:
        return entry(CacheStatus.BYPASSED, "no previous manifest of this run")
    if previous.run_id != run_id:
        return entry(CacheStatus.BYPASSED, f"previous manifest belongs to run {previous.run_id}")
    if (previous.policy.id, previous.policy.revision, previous.policy.digest) != (
        policy.id,
        policy.revision,
        policy.digest,
    ):
        return entry(
            CacheStatus.MISS,
            f"policy changed from {previous.policy.id}/{previous.policy.revision} to "
            f"{policy.id}/{policy.revision}",
        )
    if previous.status == "blocked" or previous.cache.prefix_hash is None:
        return entry(CacheStatus.MISS, "previous attempt made no model call")
    if previous.cache.prefix_identity != identity:
        return entry(CacheStatus.MISS, "stable prefix sources changed")
    if previous.cache.prefix_hash != prefix_hash:
        return entry(CacheStatus.MISS, "stable prefix bytes changed")
    return entry(CacheStatus.HIT, "stable prefix identical to the previous assembly")
