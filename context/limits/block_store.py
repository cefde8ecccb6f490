"""Per-assembly data blocks and source limits, shared by costing and rendering.

Why this exists: a data item's exact cost is the token count of its rendered data block,
and the renderer later sends that very string. :class:`BlockStore` builds each block once
per assembly (reusing the verified content hash instead of hashing the content again),
hands the source-limit stage its memoized shaping, and is the budget stage's ``Costing``:
it prices an uncosted data unit exactly (its block counted, in batches on two threads via
``TokenCounter.count_batch``, the cost memoized per item) or by a proven lower bound on
its block (``context.limits.floors``) that lets the allocator evict it without tokenizing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from context import memo
from context.admitted import Admitted
from context.assembly.state import AssemblyState
from context.budget.allocation import Unit
from context.budget.costs import BlockCost, block_cost
from context.items import ContextItem
from context.limits.blocks import data_block
from context.limits.floors import prefix_floor
from context.limits.shaping import LimitMemo, shape_item
from context.vocabulary import INSTRUCTION_FLAG, Zone


def flags_of(a: Admitted) -> tuple[str, ...]:
    """The flag labels an item's data block shows (the matched text stays in the manifest)."""
    return (INSTRUCTION_FLAG,) if a.gate.instruction_flags else ()


class BlockStore:
    def __init__(self, state: AssemblyState) -> None:
        self.state = state
        self._blocks: dict[tuple[int, tuple[str, ...]], tuple[ContextItem, str]] = {}
        topics = state.request.required_topics
        self._terms = tuple(t for topic in topics for t in topic.match_terms)
        self._limit_ctx = (state.policy.digest, self._terms)
        self._frame: int | None = None
        # (item id, content hash) of each costed block's item -> the block's tokens (what
        # an excerpt record reports as its size once the excerpt itself was costed)
        self.costed: dict[tuple[str, str], int] = {}

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
        terms). Excerpts are not tokenized here: one is costed as its data block, and only
        if the budget gets that far (``token_estimate_after`` is filled in then)."""
        policy, terms = self.state.policy, self._terms
        out: dict[str, LimitMemo] = {}
        for a in admitted:
            if a.zone not in (Zone.DATA, Zone.DERIVED):
                continue
            cached: LimitMemo | None = memo.SHAPES.get(a.item, (self._limit_ctx, a.load_mode))
            if cached is None:
                cached = shape_item(policy, self.state.counter, a.item, a.load_mode, terms)
                memo.SHAPES.put(a.item, (self._limit_ctx, a.load_mode), cached)
            out[a.item.item_id] = cached
        return out

    # -- Costing (context.budget.allocation) -----------------------------------------------------
    def frame(self) -> int:
        """Tokens a data block's user message adds around the block (exact, constant)."""
        if self._frame is None:
            self._frame = block_cost(self.state.counter, 0).message_tokens
        return self._frame

    def cost(self, units: Sequence[Unit]) -> None:
        """Count the blocks of ``units`` in one batch; costs go to the units and the memo."""
        todo: list[tuple[Unit, Admitted, tuple[str, ...]]] = []
        for u in units:
            a = self.state.admitted[u.unit_id]
            todo.append((u, a, flags_of(a)))
        counter = self.state.counter
        counts = counter.count_batch([self.block(a.item, flags) for _, a, flags in todo])
        for (u, a, flags), n in zip(todo, counts, strict=True):
            cost = block_cost(counter, n)
            memo.COSTS.put(a.item, flags, cost)
            self.record(a, cost)
            u.cost, u.block_tokens = a.tokens, a.block_tokens

    def record(self, a: Admitted, cost: BlockCost) -> None:
        """``a``'s exact block cost, just counted or memoized from an earlier assembly."""
        a.tokens, a.block_tokens = cost.message_tokens, cost.block_tokens
        self.costed[a.item.item_id, a.item.content_hash] = cost.block_tokens

    def floor(self, unit: Unit, room: int) -> tuple[int, int]:
        frame = self.frame()
        item = self.state.admitted[unit.unit_id].item
        need = max(0, room - frame)
        # memoized per item: a bound that counted the whole text, or one already above
        # this room, holds for any later assembly too (warm runs skip the split)
        known: tuple[int, bool] | None = memo.FLOORS.get(item, None)
        if known is None or not (known[1] or known[0] > need):
            known = prefix_floor(item.content, need)
            memo.FLOORS.put(item, None, known)
        return frame + known[0], known[0]

    def likely(self, unit: Unit) -> int:
        return self.frame() + len(self.state.admitted[unit.unit_id].item.content) // 4
