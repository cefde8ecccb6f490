"""Partition budgets on real token counts (docs/context-engine.md#partition-budgets).

``usable = model_context_limit - response_reserve - protocol_overhead - safety_margin``.
The usable budget is split by responsibility, never evenly by source. Each partition has
a ``minimum`` (reserved for it), an optional ``maximum`` and an eviction rule. A unit (one
item's rendered message, one tool pair, the question) is admitted whole or not at all —
nothing is truncated to squeeze it in.

Allocation, deterministic and in partition protection order (control, task, state,
direct evidence, recent tool pairs, background):

1. The policy's minimums must fit in ``usable`` together, or the assembly blocks
   (``minimums_exceed_budget``).
2. Partitions fill in protection order, each with its units in rank order, up to its
   maximum and up to ``usable`` minus what every *other* partition claims — the larger
   of what it already uses and what it needs of its minimum (``min(minimum, demand)``).
   Borrowing therefore never eats a minimum another partition needs, a minimum nobody
   needs is lent out, and earlier partitions get first call on the free budget.

Within a partition, units are tried in rank order; ``complete_pair_only`` (tool pairs,
newest first) stops at the first pair that does not fit so the kept history is a
contiguous recent tail, the other rules skip a unit that does not fit and try the next
one. A unit of a ``never`` partition that does not fit blocks the assembly
(``required_partition_missing``), as does a unit marked required
(``required_evidence_missing``). The optional ``evidence_cap`` (the request's
``evidence_budget``) bounds the sum of rendered evidence-block tokens in direct evidence.

**Lazy costs.** A unit may arrive uncosted (``cost is None``, data items of a cold
assembly); ``allocate`` then asks its ``Costing`` for a proven lower bound first
(``context.limits.floors``) and evicts the unit without tokenizing it when even the bound exceeds
the room left — the exact algorithm would have evicted it too, so the allocation is the
same as with every unit costed up front. Otherwise the unit is costed exactly (in batches
of the next likely units, two tokenizer threads) and the usual rule decides. A
partition's ``demand`` is then exact for the costed units plus the lower bounds of the
``uncounted`` ones; claims on minimums cost units exactly until the minimum is reached.
A required unit is always costed exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from context.policy import BudgetPolicy
from context.vocabulary import BlockedReason, Partition

PROTECTION_ORDER: tuple[Partition, ...] = tuple(Partition)


@dataclass
class Unit:
    """One all-or-nothing piece of the input. ``order`` is its rank inside its partition.

    ``cost`` is ``None`` until a ``Costing`` prices the unit; ``floor`` (a lower bound on
    the whole message) and ``bound`` (which bound exceeded which room) record why a unit
    was evicted without being costed.
    """

    unit_id: str
    partition: Partition
    cost: int | None
    order: int
    block_tokens: int = 0
    required: bool = False
    floor: int | None = None
    bound: str | None = None

    @property
    def exact(self) -> int:
        assert self.cost is not None, f"unit {self.unit_id} was never costed"
        return self.cost


class Costing(Protocol):
    """Prices uncosted units: exactly (``cost``) or by a proven lower bound (``floor``)."""

    def cost(self, units: Sequence[Unit]) -> None:
        """Set ``cost`` and ``block_tokens`` of each unit exactly (one batch)."""

    def floor(self, unit: Unit, room: int) -> tuple[int, int]:
        """Lower bounds (whole message, data block alone) on the unit's exact costs; may
        stop looking once the message bound exceeds ``room``."""

    def likely(self, unit: Unit) -> int:
        """A rough size estimate, used only to choose which units to cost in one batch."""


@dataclass
class PartitionUse:
    minimum: int
    maximum: int | None
    eviction: str
    demand: int = 0
    used: int = 0
    uncounted: int = 0


@dataclass
class Allocation:
    usable: int
    admitted: list[Unit] = field(default_factory=list)
    evicted: list[Unit] = field(default_factory=list)
    partitions: dict[Partition, PartitionUse] = field(default_factory=dict)
    blocked: BlockedReason | None = None
    blocked_detail: str = ""

    @property
    def used(self) -> int:
        return sum(p.used for p in self.partitions.values())


_BATCH_MAX = 64


def usable_budget(policy: BudgetPolicy, model_limit: int) -> int:
    limit = policy.model_context_limit or model_limit
    limit = min(limit, model_limit)
    return limit - policy.response_reserve - policy.protocol_overhead - policy.safety_margin


def allocate(
    units: Sequence[Unit], policy: BudgetPolicy, usable: int, evidence_cap: int | None = None,
    costing: Costing | None = None,
) -> Allocation:
    """Allocate ``units`` (see the module docstring); ``costing`` prices uncosted units."""
    if costing is None and any(u.cost is None for u in units):
        raise ValueError("uncosted units need a Costing")
    return _Allocator(units, policy, usable, evidence_cap, costing).run()


class _Allocator:
    def __init__(self, units: Sequence[Unit], policy: BudgetPolicy, usable: int,
                 evidence_cap: int | None, costing: Costing | None) -> None:
        self.alloc = alloc = Allocation(usable=usable)
        self.usable, self.cap, self.costing = usable, evidence_cap, costing
        for p in PROTECTION_ORDER:
            rule = policy.partitions[p]
            minimum = rule.minimum
            if p is Partition.DIRECT_EVIDENCE and evidence_cap is not None:
                minimum = min(minimum, evidence_cap)
            alloc.partitions[p] = PartitionUse(minimum, rule.maximum, rule.eviction)
        self.by_part: dict[Partition, list[Unit]] = {p: [] for p in PROTECTION_ORDER}
        for u in units:
            self.by_part[u.partition].append(u)
        for lst in self.by_part.values():
            lst.sort(key=lambda u: (u.order, u.unit_id))
        self.admitted: set[str] = set()
        self.evidence_blocks = 0

    def run(self) -> Allocation:
        alloc, usable = self.alloc, self.usable
        minimums = sum(pu.minimum for pu in alloc.partitions.values())
        if usable <= 0 or minimums > usable:
            alloc.blocked = BlockedReason.MINIMUMS_EXCEED_BUDGET
            alloc.blocked_detail = (
                f"partition minimums {minimums} do not fit usable budget {usable}")
            for p in PROTECTION_ORDER:
                for u in self.by_part[p]:
                    if u.cost is None:
                        self._reject(u, 0)
            self._demand()
            alloc.evicted = [u for p in PROTECTION_ORDER for u in self.by_part[p]]
            return alloc
        for p in PROTECTION_ORDER:
            self._fill(p)
        self._demand()
        for p in PROTECTION_ORDER:
            for u in self.by_part[p]:
                (alloc.admitted if u.unit_id in self.admitted else alloc.evicted).append(u)
        _check_blocking(alloc)
        return alloc

    def _fill(self, p: Partition) -> None:
        pu = self.alloc.partitions[p]
        cap = pu.maximum if pu.maximum is not None else self.usable
        others = sum(self._claim(k) for k in PROTECTION_ORDER if k is not p)
        limit = min(cap, self.usable - others)
        lst = self.by_part[p]
        for i, u in enumerate(lst):
            if u.cost is None and not self._priced(lst, i, limit - pu.used):
                if pu.eviction == "complete_pair_only":
                    self._cost_rest(lst[i + 1:])
                    break
                continue
            if pu.used + u.exact <= limit and self._fits_cap(u):
                self._take(u)
            elif pu.eviction == "complete_pair_only":
                self._cost_rest(lst[i + 1:])
                break

    def _cost_rest(self, rest: list[Unit]) -> None:
        # units cut off by the contiguous-tail rule are evicted for their position, not
        # their size, so no bound can stand for their cost: count them (tool pairs, the
        # one kind this rule is for, are costed up front anyway)
        todo = [u for u in rest if u.cost is None]
        if todo:
            assert self.costing is not None
            self.costing.cost(todo)

    def _priced(self, lst: list[Unit], i: int, room: int, *, cap: bool = True) -> bool:
        """Cost ``lst[i]`` exactly unless a lower bound proves it cannot fit (then False);
        ``cap=False`` asks about ``room`` alone, not the evidence budget."""
        assert self.costing is not None
        u = lst[i]
        if not u.required:
            message, block = self.costing.floor(u, room)
            cap_room = self._cap_room(u) if cap else None
            if message > room:
                u.floor, u.bound = message, f"at least {message} tokens, {room} left"
                return False
            if cap_room is not None and block > cap_room:
                u.floor = message
                u.bound = (f"data block at least {block} tokens, {cap_room} left of the "
                           "evidence budget")
                return False
        # cost this unit and the next uncosted ones that probably fit, in one batch
        batch, expected = [u], self.costing.likely(u)
        for v in lst[i + 1:]:
            if len(batch) >= _BATCH_MAX or expected >= room:
                break
            if v.cost is None:
                expected += self.costing.likely(v)
                if expected <= room:
                    batch.append(v)
        self.costing.cost(batch)
        return True

    def _reject(self, u: Unit, room: int) -> None:
        assert self.costing is not None
        u.floor = self.costing.floor(u, room)[0]
        u.bound = f"at least {u.floor} tokens, {room} left"

    def _cap_room(self, u: Unit) -> int | None:
        if u.partition is not Partition.DIRECT_EVIDENCE or self.cap is None:
            return None
        return self.cap - self.evidence_blocks

    def _fits_cap(self, u: Unit) -> bool:
        cap_room = self._cap_room(u)
        return cap_room is None or u.block_tokens <= cap_room

    def _take(self, u: Unit) -> None:
        self.admitted.add(u.unit_id)
        self.alloc.partitions[u.partition].used += u.exact
        if u.partition is Partition.DIRECT_EVIDENCE:
            self.evidence_blocks += u.block_tokens

    def _claim(self, p: Partition) -> int:
        """What partition ``p`` holds back from the others: its use, or as much of its
        minimum as its units need (costing them in rank order only that far)."""
        pu = self.alloc.partitions[p]
        if pu.used >= pu.minimum:
            return pu.used
        need = 0
        lst = self.by_part[p]
        for i, u in enumerate(lst):
            if need >= pu.minimum:
                break
            # a claim is about demand, not the evidence budget: only a bound above all
            # of usable (hence above the minimum) may stand in for a cost here
            if u.cost is None and not self._priced(lst, i, self.usable, cap=False):
                need += u.floor or 0
                continue
            need += u.exact
        return max(pu.used, min(pu.minimum, need))

    def _demand(self) -> None:
        for p, lst in self.by_part.items():
            pu = self.alloc.partitions[p]
            for u in lst:
                if u.cost is not None:
                    pu.demand += u.cost
                else:
                    pu.demand += u.floor or 0
                    pu.uncounted += 1


def _check_blocking(alloc: Allocation) -> None:
    for u in alloc.evicted:
        if alloc.partitions[u.partition].eviction == "never":
            alloc.blocked = BlockedReason.REQUIRED_PARTITION_MISSING
            alloc.blocked_detail = (
                f"{u.unit_id} ({u.partition.value}, {cost_text(u)}) does not fit; "
                f"partition {u.partition.value} may not be evicted"
            )
            return
    for u in alloc.evicted:
        if u.required:
            alloc.blocked = BlockedReason.REQUIRED_EVIDENCE_MISSING
            alloc.blocked_detail = f"required item {u.unit_id} ({cost_text(u)}) does not fit"
            return


def cost_text(u: Unit) -> str:
    """How a unit's cost reads in a detail: exact, or the bound it was evicted on."""
    if u.cost is not None:
        return f"{u.cost} tokens"
    return f"{u.bound}; not tokenized"


def pick_victim(alloc: Allocation) -> Unit | None:
    """The admitted unit to give up when the exact request count overshoots ``usable``."""
    for p in reversed(PROTECTION_ORDER):
        if alloc.partitions[p].eviction == "never":
            continue
        cands = [u for u in alloc.admitted if u.partition is p and not u.required]
        if cands:
            return max(cands, key=lambda u: (u.order, u.unit_id))
    return None


def release(alloc: Allocation, unit: Unit) -> None:
    alloc.admitted.remove(unit)
    alloc.evicted.append(unit)
    alloc.partitions[unit.partition].used -= unit.exact
