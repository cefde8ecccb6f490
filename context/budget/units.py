"""Budget units of one assembly: exact costs and rank order per partition.

Every admitted item becomes one all-or-nothing ``Unit`` (the control frame and the
MISSING EVIDENCE notice are units too; tool pairs come from ``context.tools.stage``). Costs
are exact token counts of the strings that will be sent (``context.budget.costs``), memoized per
item. Control, task and state units are costed here; a data item whose block cost is not
memoized yet enters uncosted and ``context.budget.allocation`` prices it through the block store —
exactly, or by a lower bound that proves it cannot fit. Order inside a partition: direct
evidence coverage first, then rank (``context.ranking.relevance``; its size tie-break is the
item's character length, known without tokenizing), after the policy's optional rank cap
(``ranking_lost``); control by authority then id; the step contract first in the task
partition.
"""

from __future__ import annotations

from context import memo
from context.admitted import Admitted
from context.assembly.state import AssemblyState
from context.budget.allocation import Unit
from context.budget.costs import (
    BlockCost,
    control_frame_cost,
    control_item_cost,
    missing_notice_cost,
    trusted_cost,
)
from context.limits.block_store import BlockStore, flags_of
from context.ranking.relevance import (
    RankInfo,
    TermScan,
    coverage_first,
    decision_relevance,
    decision_terms,
)
from context.tools.stage import ToolStage
from context.vocabulary import ExclusionReason, Partition, Zone

FRAME_UNIT = "control:frame"
MISSING_UNIT = "task:missing-evidence"


def rank_info(state: AssemblyState, a: Admitted, terms: tuple[str, ...],
              term_scan: TermScan) -> RankInfo:
    stages = a.item.stages
    return RankInfo(
        required=a.item.required,
        covered=a.covered,
        relevance=decision_relevance(a.item, terms, term_scan),
        stage_match=not stages or state.request.stage in stages,
        authority=a.item.authority,
        size=len(a.item.content),
        item_id=a.item.item_id,
    )


def rank_cap(state: AssemblyState, order: list[str]) -> list[str]:
    """Apply ``placement.max_evidence_items``: lower-ranked evidence loses the ranking."""
    cap = state.policy.placement.max_evidence_items
    if cap is None or len(order) <= cap:
        return order
    for rank, iid in enumerate(order[cap:], start=cap + 1):
        a = state.admitted[iid]
        if a.item.required:
            continue  # a required item is never ranked out; the budget decides
        state.exclude(a, ExclusionReason.RANKING_LOST, "ranking",
                  f"rank {rank} of {len(order)}; the policy admits at most {cap} "
                  "evidence items per step")
    return [iid for iid in order if iid in state.admitted]


def build_units(state: AssemblyState, tools: ToolStage, blocks: BlockStore,
                term_scan: TermScan) -> list[Unit]:
    """Cost the trusted items (data items lazily) and order each partition's units."""
    c, req = state.counter, state.request
    units: list[Unit] = [Unit(FRAME_UNIT, Partition.CONTROL,
                              control_frame_cost(c, req.tool_definitions), 0)]
    names = [t.name for t in req.required_topics]
    blocking = [t.name for t in req.required_topics if t.blocking]
    if names:
        units.append(Unit(MISSING_UNIT, Partition.TASK,
                          missing_notice_cost(c, names, blocking), 1))
    terms = decision_terms(req.question, req.decision)
    by_part: dict[Partition, list[Admitted]] = {}
    lazy: set[str] = set()
    for a in state.admitted.values():
        flags = flags_of(a)
        if a.zone is Zone.CONTROL:
            a.tokens = control_item_cost(c, a.item)
        elif a.zone in (Zone.TASK, Zone.STATE):
            a.tokens = trusted_cost(c, a.item, a.zone)
        else:
            cost: BlockCost | None = memo.COSTS.get(a.item, flags)
            if cost is not None:
                blocks.record(a, cost)
            else:
                lazy.add(a.item.item_id)
        by_part.setdefault(a.partition, []).append(a)
    for part, members in by_part.items():
        infos = {a.item.item_id: rank_info(state, a, terms, term_scan) for a in members}
        if part is Partition.DIRECT_EVIDENCE:
            order = [r.item_id for r in coverage_first(list(infos.values()), names)]
            order = rank_cap(state, order)
        elif part is Partition.CONTROL:
            order = [a.item.item_id for a in sorted(
                members, key=lambda a: (-a.item.authority, a.item.item_id))]
        else:
            order = [r.item_id for r in sorted(infos.values(), key=RankInfo.sort_key)]
        if state.step_item_id in order:
            order.remove(state.step_item_id)
            order.insert(0, state.step_item_id)
        for rank, iid in enumerate(order, start=2):
            a = state.admitted[iid]
            units.append(Unit(iid, part, None if iid in lazy else a.tokens, rank,
                              a.block_tokens, a.item.required))
    term_scan.clear()  # found terms per item: not needed past ranking
    units += tools.units(c)
    return units
