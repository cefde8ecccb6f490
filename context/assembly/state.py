"""The bookkeeping every stage of one assembly shares, and how a stage says "block".

Why this exists: the stages used to hold the whole pipeline (``self.p``) and import its
``Blocked`` back inside functions, so the pipeline and its stages formed both an import
cycle and an object cycle that only the cyclic collector could free. Now a stage receives
this state plus what it needs (a gate runner, the block store) and the pipeline alone knows
every stage (docs/architecture.md#the-context-engine-inside).

What lives here is exactly what the manifest is built from and what more than one stage
reads or writes: the admitted items, the excluded entries, the transform and summary
records, the stage log, the candidate and acquisition entries, the missing topics and each
admitted item's budget order. The rule the state enforces: only :meth:`admit` puts an item
into ``admitted`` — the gate stage calls it for a candidate that passed every gate, the tool
stage for a history summary it re-admitted through the gates — and every later stage only
removes (:meth:`exclude`), so free budget can never admit an ineligible item
(docs/context-engine.md#lifecycle-invariants).

This module imports no stage: only the shared types at the top of ``context``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from context import memo
from context.admitted import Admitted, GateOutcome
from context.items import ContextItem
from context.manifest import (
    AcquisitionEntry,
    CandidateEntry,
    ExcludedEntry,
    StageEntry,
    SummaryEntry,
    TransformEntry,
)
from context.manifest_entries import excluded_after_gates
from context.policy import ContextPolicy
from context.request import AssemblyRequest
from context.tokens import TokenCounter
from context.vocabulary import (
    ROLE_ZONE,
    BlockedReason,
    ExclusionReason,
    LoadMode,
    Partition,
    Role,
    Zone,
)

__all__ = ["AssemblyState", "Blocked"]

#: The budget partition an admitted item's role puts it in (background source types are
#: moved from direct evidence to ``background`` by the policy's placement rules).
ROLE_PARTITION = {
    Role.CONTROL: Partition.CONTROL,
    Role.TASK_INTENT: Partition.TASK,
    Role.STATE: Partition.STATE,
    Role.DERIVED_CONTEXT: Partition.STATE,
    Role.UNTRUSTED_DATA: Partition.DIRECT_EVIDENCE,
}
_REASON_BY_PARTITION = {
    Partition.CONTROL: "control_policy",
    Partition.TASK: "task_contract",
    Partition.STATE: "current_state",
}


class Blocked(Exception):
    """A stage decided the assembly must block (internal control flow, never escapes
    ``assemble``: the pipeline turns it into a sealed ``blocked`` manifest)."""

    def __init__(self, reason: BlockedReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass(eq=False)
class AssemblyState:
    """One assembly's shared bookkeeping; see the module docstring for who writes what."""

    request: AssemblyRequest
    counter: TokenCounter
    policy: ContextPolicy = field(init=False)
    step_item_id: str = field(init=False)
    current_stage: str = "start"
    stages: list[StageEntry] = field(default_factory=list)
    candidate_entries: list[CandidateEntry] = field(default_factory=list)
    acquisitions: list[AcquisitionEntry] = field(default_factory=list)
    admitted: dict[str, Admitted] = field(default_factory=dict)
    excluded: list[ExcludedEntry] = field(default_factory=list)
    transforms: list[TransformEntry] = field(default_factory=list)
    summaries: list[SummaryEntry] = field(default_factory=list)
    #: required topics with no admitted evidence (set by the budget stage's check)
    missing: list[str] = field(default_factory=list)
    #: each budgeted unit's order inside its partition (set by the budget stage)
    unit_order: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.policy = self.request.policy
        # per stage, not per step: every turn of a loop renders the same heading, so the
        # request's prefix stays byte-identical (docs/context-engine.md#order-for-the-prompt-cache)
        self.step_item_id = f"step:{self.request.stage}"
        self._background = frozenset(self.policy.placement.background_source_types)

    def stage(self, name: str, detail: str) -> None:
        """Log a finished stage (the manifest's ``stages``)."""
        self.stages.append(StageEntry(stage=name, status="done", detail=detail))

    def admit(self, outcome: GateOutcome, original: ContextItem, load_mode: LoadMode,
              reason: str = "") -> Admitted:
        """Admit an item that passed every gate: its zone follows its role, its partition
        its role and the policy's background source types."""
        item = outcome.item
        partition = ROLE_PARTITION[item.intended_role]
        if partition is Partition.DIRECT_EVIDENCE and item.source_type in self._background:
            partition = Partition.BACKGROUND
        admitted = Admitted(
            item=item, original=original, gate=outcome, load_mode=load_mode,
            zone=ROLE_ZONE[item.intended_role], partition=partition,
            admission_reason=reason or _REASON_BY_PARTITION.get(partition, ""),
        )
        self.admitted[item.item_id] = admitted
        return admitted

    def exclude(self, admitted: Admitted, reason: ExclusionReason, stage: str, detail: str,
                superseded_by: str | None = None) -> None:
        """Take an admitted item out again, with the reason the manifest records."""
        self.admitted.pop(admitted.item.item_id, None)
        key = (reason, stage, detail, superseded_by,
               tuple(admitted.gate.security_assessment.items()))
        entry: ExcludedEntry | None = memo.ENTRIES.get(admitted.item, key)
        if entry is None:
            entry = excluded_after_gates(admitted.item, admitted.gate, reason, stage, detail,
                                         superseded_by)
            memo.ENTRIES.put(admitted.item, key, entry)
        self.excluded.append(entry)

    def ordered(self, zone: Zone, partition: Partition | None = None) -> Sequence[Admitted]:
        """Admitted items of a zone (and partition) in their budget order (deterministic)."""
        members = [a for a in self.admitted.values() if a.zone is zone
                   and (partition is None or a.partition is partition)]
        order = self.unit_order
        return sorted(members, key=lambda a: (order.get(a.item.item_id, 0), a.item.item_id))
