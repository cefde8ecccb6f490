"""The budget stage: partition budgets on real token counts, and the required-evidence check
(docs/context-engine.md#partition-budgets).

Every admitted item and every verbatim tool exchange becomes one all-or-nothing unit
(``context.budget.units``); ``allocate`` fills each partition's minimum, then lets free
budget flow by the policy's borrowing rules, evicting what does not fit
(``budget_evicted``) — free budget never admits anything, it only decides what of the
admitted set is sent. Then every required partition must hold a real candidate and every
blocking topic must be covered by admitted evidence, or the assembly blocks.

The seal stage calls :meth:`BudgetStage.evict` and :meth:`BudgetStage.check_required` again
when the exact count of the serialized request overshoots.
"""

from __future__ import annotations

from context.assembly.state import AssemblyState, Blocked
from context.budget.allocation import Allocation, Unit, allocate, cost_text, usable_budget
from context.budget.cover import cover_order
from context.budget.units import build_units
from context.limits.block_store import BlockStore
from context.ranking.relevance import TermScan, evidence_topics
from context.tools.stage import ToolStage
from context.vocabulary import BlockedReason, ExclusionReason, Partition

__all__ = ["BudgetStage"]

_HINT = {
    Partition.CONTROL: "system_policy (role control)",
    Partition.TASK: "user_request (role task_intent)",
    Partition.STATE: "runtime_state (role state)",
    Partition.DIRECT_EVIDENCE: "evidence",
    Partition.RECENT_TOOL_PAIRS: "tool history",
    Partition.BACKGROUND: "background",
}


class BudgetStage:
    def __init__(self, state: AssemblyState, tools: ToolStage, blocks: BlockStore,
                 term_scan: TermScan) -> None:
        self.state = state
        self.tools = tools
        self.blocks = blocks
        self.term_scan = term_scan
        #: the allocation, once run (the seal stage releases units from it on overshoot)
        self.allocation: Allocation | None = None
        #: the usable input budget: the context limit less reserve, overhead and margin
        self.usable = 0
        #: required topics the cheapest-cover order recovered (``cover_repair``)
        self.recovered: list[str] = []

    def run(self) -> None:
        state = self.state
        units = build_units(state, self.tools, self.blocks, self.term_scan)
        state.unit_order = {unit.unit_id: unit.order for unit in units}
        self.usable = usable_budget(state.policy.budget, state.request.model.context_limit)
        allocation = allocate(units, state.policy.budget, self.usable,
                              state.request.evidence_budget, costing=self.blocks)
        allocation = self.cover_repair(units, allocation)
        self.allocation = allocation
        for unit in allocation.evicted:
            self.evict(unit, "does not fit its partition budget")
        if allocation.blocked is not None:
            raise Blocked(allocation.blocked, allocation.blocked_detail)
        self.check_required()
        state.stage(
            "budget",
            f"usable {self.usable}, estimated {allocation.used}, {len(allocation.admitted)} "
            f"units admitted, {len(allocation.evicted)} evicted"
            + (f"; cheapest-cover order recovered {self.recovered}" if self.recovered else ""),
        )

    def _answers(self, unit_id: str) -> frozenset[str]:
        a = self.state.admitted.get(unit_id)
        if a is None:
            return frozenset()
        return frozenset(evidence_topics(a.item, a.zone, a.load_mode, a.covered,
                                         a.gate.effective_trust))

    def cover_repair(self, units: list[Unit], allocation: Allocation) -> Allocation:
        """When the rank order lost a required topic to the budget that an evicted evidence
        unit answers, allocate again in cheapest-cover order (``context.budget.cover``) and
        keep that allocation if it answers more required topics; else keep ``allocation``."""
        evidence = [u for u in units if u.partition is Partition.DIRECT_EVIDENCE]
        if allocation.blocked is not None or not evidence:
            return allocation
        answers = {u.unit_id: self._answers(u.unit_id) for u in evidence}
        kept = {u.unit_id for u in allocation.admitted}

        def answered(admitted: set[str]) -> frozenset[str]:
            return frozenset().union(*(answers[u.unit_id] for u in evidence
                                       if u.unit_id in admitted))

        have = answered(kept)
        lost = frozenset().union(*(answers[u.unit_id] for u in evidence
                                   if u.unit_id not in kept)) - have
        if not lost:
            return allocation
        # Exact costs for every unit that answers a topic, and the rank order allocated
        # again on them: what the repair decides and reports must not depend on which
        # costs an earlier assembly left in the memo (lazy costing decides the same as
        # exact costing; only its bounds and ``uncounted`` demand would differ).
        uncosted = [u for u in evidence if u.cost is None and answers[u.unit_id]]
        if uncosted:
            self.blocks.cost(uncosted)
        policy, cap = self.state.policy.budget, self.state.request.evidence_budget
        ranked = allocate(units, policy, self.usable, cap, costing=self.blocks)
        before = {u.unit_id: (u.order, u.floor, u.bound) for u in units}
        costed = [u for u in evidence if u.cost is not None]
        slots = sorted(u.order for u in costed)
        for slot, unit in zip(slots, cover_order(costed, answers), strict=True):
            unit.order = slot
        retry = allocate(units, policy, self.usable, cap, costing=self.blocks)
        gained = answered({u.unit_id for u in retry.admitted})
        if retry.blocked is None and len(gained) > len(have):
            self.state.unit_order.update({u.unit_id: u.order for u in evidence})
            self.recovered = sorted(lost & gained)
            return retry
        for unit in units:  # the rank order stands, with what its allocation recorded
            unit.order, unit.floor, unit.bound = before[unit.unit_id]
        return ranked

    def evict(self, unit: Unit, detail: str) -> None:
        admitted = self.state.admitted.get(unit.unit_id)
        if admitted is not None:
            self.state.exclude(admitted, ExclusionReason.BUDGET_EVICTED, "budget",
                               f"{detail} ({cost_text(unit)}, partition {unit.partition.value})")
        else:
            self.tools.evict(unit, detail)

    def check_required(self) -> None:
        """Required partitions filled, blocking topics covered; sets ``state.missing``."""
        state, request = self.state, self.state.request
        real = {item.item_id for item in request.candidates}
        for partition in state.policy.blocking.required_partitions:
            if not any(a.partition is partition and a.item.item_id in real
                       for a in state.admitted.values()):
                raise Blocked(
                    BlockedReason.REQUIRED_PARTITION_MISSING,
                    f"partition {partition.value} has no admitted candidate (supply e.g. a "
                    f"{_HINT[partition]} item, or a policy whose "
                    f"blocking.required_partitions omits {partition.value})",
                )
        covered = {topic for a in state.admitted.values()
                   for topic in evidence_topics(a.item, a.zone, a.load_mode, a.covered,
                                                a.gate.effective_trust)}
        covered |= self.tools.covered_topics()
        state.missing = [topic.name for topic in request.required_topics
                         if topic.name not in covered]
        hard = [topic.name for topic in request.required_topics
                if topic.blocking and topic.name in state.missing]
        if hard:
            raise Blocked(
                BlockedReason.REQUIRED_EVIDENCE_MISSING,
                f"no admitted evidence for blocking topics {hard}",
            )
