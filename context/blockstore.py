"""Per-assembly data blocks and source limits, shared by costing and rendering.

Why this exists: a data item's exact cost is the token count of its rendered data block,
and the renderer later sends that very string. :class:`BlockStore` builds each block once
per assembly (reusing the verified content hash instead of hashing the content again),
hands the source-limit stage its memoized shaping, and lets the budget stage count every
block still unknown in one batch (``TokenCounter.count_batch``, two threads) before it
costs them one by one against the cache.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from context import memo
from context._blocks import data_block
from context.items import ContextItem
from context.layout import block_cost
from context.records import Admitted
from context.shaping import LimitMemo, shape_item, source_limit_of
from context.source_limits import LimitApplied
from context.vocabulary import Zone

if TYPE_CHECKING:
    from context.pipeline import Pipeline

INSTRUCTION_FLAG = "instruction_like_text"


def flags_of(a: Admitted) -> tuple[str, ...]:
    """The flag labels an item's data block shows (the matched text stays in the manifest)."""
    return (INSTRUCTION_FLAG,) if a.gate.instruction_flags else ()


class BlockStore:
    def __init__(self, pipeline: Pipeline) -> None:
        self.p = pipeline
        self._blocks: dict[tuple[int, tuple[str, ...]], tuple[ContextItem, str]] = {}
        topics = pipeline.req.required_topics
        self._terms = tuple(t for topic in topics for t in topic.match_terms)
        self._limit_ctx = (pipeline.policy.digest, self._terms)

    def block(self, item: ContextItem, flags: tuple[str, ...]) -> str:
        """``data_block(item, flags)``, built once per assembly (costing and rendering)."""
        key = (id(item), flags)
        found = self._blocks.get(key)
        if found is not None and found[0] is item:
            return found[1]
        # items reaching a block passed the integrity gate or were derived by the engine
        text = data_block(item, flags, hash_verified=True)
        self._blocks[key] = (item, text)
        return text

    def shape_all(self, admitted: Iterable[Admitted]) -> dict[str, LimitMemo]:
        """The source-limited item of each data item (memoized per item, policy and topic
        terms); the excerpts new to this call are counted first, in one batch."""
        policy, terms = self.p.policy, self._terms
        todo: list[tuple[Admitted, LimitApplied | None]] = []
        out: dict[str, LimitMemo] = {}
        for a in admitted:
            if a.zone not in (Zone.DATA, Zone.DERIVED):
                continue
            cached: LimitMemo | None = memo.LIMITS.get(a.item, (self._limit_ctx, a.load_mode))
            if cached is None:
                todo.append((a, source_limit_of(policy, a.item, a.load_mode, terms)))
            else:
                out[a.item.item_id] = cached
        self.p.counter.count_batch([x.item.content for _, x in todo if x is not None])
        for a, applied in todo:
            shaped = shape_item(policy, self.p.counter, a.item, a.load_mode, terms, applied)
            memo.LIMITS.put(a.item, (self._limit_ctx, a.load_mode), shaped)
            out[a.item.item_id] = shaped
        return out

    def precount(self, admitted: Iterable[Admitted]) -> None:
        """Cost, in one counted batch, the blocks of data items whose exact cost is not
        memoized; the costs go straight to the memo (``data_block_cost`` of the same
        counts), so no block is hashed a second time for a cache lookup."""
        todo: list[tuple[ContextItem, tuple[str, ...]]] = []
        texts = []
        for a in admitted:
            if a.zone in (Zone.DATA, Zone.DERIVED):
                flags = flags_of(a)
                if memo.LIMITS.get(a.item, flags) is None:
                    todo.append((a.item, flags))
                    texts.append(self.block(a.item, flags))
        counter = self.p.counter
        for (item, flags), n in zip(todo, counter.count_batch(texts), strict=True):
            memo.LIMITS.put(item, flags, block_cost(counter, n))
