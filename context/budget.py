"""Partition budgets on real token counts (seed 000 §5).

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from context.policy import BudgetPolicy
from context.vocabulary import BlockedReason, Partition

PROTECTION_ORDER: tuple[Partition, ...] = tuple(Partition)


@dataclass(frozen=True)
class Unit:
    """One all-or-nothing piece of the input. ``order`` is its rank inside its partition."""

    unit_id: str
    partition: Partition
    cost: int
    order: int
    block_tokens: int = 0
    required: bool = False


@dataclass
class PartitionUse:
    minimum: int
    maximum: int | None
    eviction: str
    demand: int = 0
    used: int = 0


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


def usable_budget(policy: BudgetPolicy, model_limit: int) -> int:
    limit = policy.model_context_limit or model_limit
    limit = min(limit, model_limit)
    return limit - policy.response_reserve - policy.protocol_overhead - policy.safety_margin


def allocate(
    units: Sequence[Unit], policy: BudgetPolicy, usable: int, evidence_cap: int | None = None
) -> Allocation:
    alloc = Allocation(usable=usable)
    for p in PROTECTION_ORDER:
        rule = policy.partitions[p]
        minimum = rule.minimum
        maximum = rule.maximum
        if p is Partition.DIRECT_EVIDENCE and evidence_cap is not None:
            minimum = min(minimum, evidence_cap)
        alloc.partitions[p] = PartitionUse(minimum, maximum, rule.eviction)
    by_part: dict[Partition, list[Unit]] = {p: [] for p in PROTECTION_ORDER}
    for u in units:
        by_part[u.partition].append(u)
        alloc.partitions[u.partition].demand += u.cost
    for lst in by_part.values():
        lst.sort(key=lambda u: (u.order, u.unit_id))

    minimums = sum(pu.minimum for pu in alloc.partitions.values())
    if usable <= 0 or minimums > usable:
        alloc.blocked = BlockedReason.MINIMUMS_EXCEED_BUDGET
        alloc.blocked_detail = f"partition minimums {minimums} do not fit usable budget {usable}"
        alloc.evicted = [u for p in PROTECTION_ORDER for u in by_part[p]]
        return alloc

    admitted: set[str] = set()
    evidence_blocks = 0

    def fits_cap(u: Unit) -> bool:
        if u.partition is not Partition.DIRECT_EVIDENCE or evidence_cap is None:
            return True
        return evidence_blocks + u.block_tokens <= evidence_cap

    def take(u: Unit) -> None:
        nonlocal evidence_blocks
        admitted.add(u.unit_id)
        alloc.partitions[u.partition].used += u.cost
        if u.partition is Partition.DIRECT_EVIDENCE:
            evidence_blocks += u.block_tokens

    def claim(pu: PartitionUse) -> int:
        return max(pu.used, min(pu.minimum, pu.demand))

    for p in PROTECTION_ORDER:
        pu = alloc.partitions[p]
        cap = pu.maximum if pu.maximum is not None else usable
        others = sum(claim(q) for k, q in alloc.partitions.items() if k is not p)
        limit = min(cap, usable - others)
        for u in by_part[p]:
            if pu.used + u.cost <= limit and fits_cap(u):
                take(u)
            elif pu.eviction == "complete_pair_only":
                break

    for p in PROTECTION_ORDER:
        for u in by_part[p]:
            (alloc.admitted if u.unit_id in admitted else alloc.evicted).append(u)
    _check_blocking(alloc)
    return alloc


def _check_blocking(alloc: Allocation) -> None:
    for u in alloc.evicted:
        if alloc.partitions[u.partition].eviction == "never":
            alloc.blocked = BlockedReason.REQUIRED_PARTITION_MISSING
            alloc.blocked_detail = (
                f"{u.unit_id} ({u.partition.value}, {u.cost} tokens) does not fit; "
                f"partition {u.partition.value} may not be evicted"
            )
            return
    for u in alloc.evicted:
        if u.required:
            alloc.blocked = BlockedReason.REQUIRED_EVIDENCE_MISSING
            alloc.blocked_detail = f"required item {u.unit_id} ({u.cost} tokens) does not fit"
            return


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
    alloc.partitions[unit.partition].used -= unit.cost
