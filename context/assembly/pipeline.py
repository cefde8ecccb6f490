"""The stages of one assembly up to the budget; ``context.seal.finish`` renders and seals.

Each stage appends a ``StageEntry`` and may exclude items (with the seed's reasons); no
stage ever re-admits what an earlier one excluded — every later stage only iterates over
``self.admitted``, which only gates can fill. See ``context.assembly.engine`` for the overview.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from context import memo
from context.admission.gates import GateOutcome, GateRunner, freshness_key
from context.budget.allocation import Allocation, Unit, allocate, cost_text, usable_budget
from context.budget.units import build_units
from context.items import ContextItem
from context.limits.block_store import BlockStore
from context.manifest import (
    AcquisitionEntry,
    CandidateEntry,
    ContextAssemblyManifest,
    ExcludedEntry,
    StageEntry,
    SummaryEntry,
    TransformEntry,
)
from context.ranking.loading import load_mode_for
from context.ranking.relevance import (
    TermScan,
    covered_topics,
    decision_terms,
    evidence_topics,
    supersede,
    topic_terms,
)
from context.request import AssemblyRequest
from context.seal.adapters import SerializedRequest
from context.seal.manifest_entries import (
    Admitted,
    acquisition_entry,
    candidate_entry,
    excluded_after_gates,
    excluded_from_gate,
    simple_transform,
)
from context.seal.render import AssemblyInput
from context.tokens import TokenCounter
from context.tools.stage import ToolStage
from context.vocabulary import (
    ROLE_ZONE,
    BlockedReason,
    ExclusionReason,
    LoadMode,
    Partition,
    Role,
    SecurityClass,
    SourceType,
    Trust,
    Zone,
)

ENGINE_PRODUCER = "pressroom-context-engine/v1"
_ROLE_PARTITION = {
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


_GateMemo = tuple[GateOutcome, CandidateEntry, ExcludedEntry | None, TransformEntry | None]


@dataclass
class Outcome:
    manifest: ContextAssemblyManifest
    blocked_reason: BlockedReason | None
    serialized: SerializedRequest | None = None
    assembly_input: AssemblyInput | None = None
    rendered_evidence: str = ""


class Blocked(Exception):
    """Internal control flow: a stage decided the assembly must block."""

    def __init__(self, reason: BlockedReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class Pipeline:
    def __init__(self, request: AssemblyRequest, counter: TokenCounter) -> None:
        self.req = request
        self.policy = request.policy
        self.counter = counter
        self.current_stage = "start"
        self.stages: list[StageEntry] = []
        self.excluded: list[ExcludedEntry] = []
        self.transforms: list[TransformEntry] = []
        self.summaries: list[SummaryEntry] = []
        self.admitted: dict[str, Admitted] = {}
        self.candidate_entries: list[CandidateEntry] = []
        self.acquisitions: list[AcquisitionEntry] = []
        self.step_item_id = f"step:{request.step_id}"
        self._background = frozenset(request.policy.placement.background_source_types)
        self.tools = ToolStage(self)
        self.blocks = BlockStore(self)
        self.alloc: Allocation | None = None
        self.units: dict[str, Unit] = {}
        self.usable = 0
        self.missing: list[str] = []
        self.estimated_used: int | None = None
        self.evidence_block_tokens = 0
        self.term_scan = TermScan(  # coverage and relevance: one scan per item for both
            [t for ts in topic_terms(request.required_topics) for t in ts]
            + list(decision_terms(request.question, request.decision))
        )
        self.runner = GateRunner(
            policy=self.policy,
            as_of=request.as_of,
            clearance=request.principal.clearance,
            principal_scope=request.principal.scope,
            request_scope=request.scope,
            required_revisions=request.required_revisions,
        )

    def release(self) -> None:
        """Drop the stage helpers, which point back at the pipeline.

        Without this the pipeline and everything it built (≈10,000 objects at 1,000
        candidates: entries, units, sets) form one reference cycle that only the cyclic
        collector frees; its passes over them cost up to a fifth of a cold assembly. Once
        released, reference counting frees them as ``assemble`` returns.
        """
        self.tools = self.blocks = None  # type: ignore[assignment]

    # -- bookkeeping ---------------------------------------------------------------
    def stage(self, name: str, detail: str) -> None:
        self.stages.append(StageEntry(stage=name, status="done", detail=detail))

    def exclude(self, a: Admitted, reason: ExclusionReason, stage: str, detail: str,
                superseded_by: str | None = None) -> None:
        self.admitted.pop(a.item.item_id, None)
        key = (reason, stage, detail, superseded_by,
               tuple(a.gate.security_assessment.items()))
        entry: ExcludedEntry | None = memo.ENTRIES.get(a.item, key)
        if entry is None:
            entry = excluded_after_gates(a.item, a.gate, reason, stage, detail, superseded_by)
            memo.ENTRIES.put(a.item, key, entry)
        self.excluded.append(entry)

    def run(self) -> Outcome:
        from context.seal.finish import Finisher

        finisher = Finisher(self)
        try:
            for name, step in (
                ("acquisition", self.acquisition),
                ("hard_gates", self.gates),
                ("ranking", self.ranking),
                ("structure", self.tools.run),
                ("source_limits", self.source_limits),
                ("budget", self.budget),
            ):
                self.current_stage = name
                step()
            self.current_stage = "render"
            return finisher.ready()
        except Blocked as blocked:
            self.stages.append(
                StageEntry(stage=self.current_stage, status="blocked", detail=blocked.detail)
            )
            return finisher.blocked(blocked.reason, blocked.detail)

    # -- stages --------------------------------------------------------------------
    def acquisition(self) -> None:
        self.acquisitions = [
            acquisition_entry(a)
            for a in sorted(self.req.acquisitions, key=lambda a: a.source_request_id)
        ]
        counts: dict[str, int] = {}
        for a in self.acquisitions:
            counts[a.outcome.value] = counts.get(a.outcome.value, 0) + 1
        self.stage("acquisition", f"outcomes {dict(sorted(counts.items()))}")

    def step_item(self) -> ContextItem:
        r = self.req
        lines = [f"QUESTION\n{r.question}", f"STAGE\n{r.stage}"]
        if r.decision:
            lines.insert(1, f"DECISION\n{r.decision}")
        if r.required_topics:
            topics = "\n".join(
                f"- {t.name}{' (blocking)' if t.blocking else ''}" for t in r.required_topics
            )
            lines.append(f"REQUIRED TOPICS\n{topics}")
        return ContextItem.build(
            item_id=self.step_item_id,
            source_type=SourceType.USER_REQUEST,
            producer=ENGINE_PRODUCER,
            content="\n\n".join(lines),
            scope=r.scope,
            trust=Trust.TASK_AUTHORITY,
            intended_role=Role.TASK_INTENT,
            security_class=SecurityClass.PUBLIC,
            load_mode=LoadMode.RESIDENT,
            metadata={"goal": r.question},
        )

    def admit(self, out: GateOutcome, original: ContextItem, reason: str = "") -> Admitted:
        item = out.item
        zone = ROLE_ZONE[item.intended_role]
        part = _ROLE_PARTITION[item.intended_role]
        if part is Partition.DIRECT_EVIDENCE and item.source_type in self._background:
            part = Partition.BACKGROUND
        a = Admitted(
            item=item, original=original, gate=out, load_mode=load_mode_for(item, self.policy),
            zone=zone, partition=part, admission_reason=reason or _REASON_BY_PARTITION.get(
                part, "")
        )
        self.admitted[item.item_id] = a
        return a

    def gates(self) -> None:
        r = self.req
        # no as_of here: what an outcome takes from the clock is its freshness_key
        ctx = "|".join((self.policy.digest, r.principal.clearance.value,
                        str(r.principal.scope), str(r.scope)))
        revs = r.required_revisions
        items = [self.step_item(), *sorted(r.candidates, key=lambda i: i.item_id)]
        for item in items:
            repo = item.source_ref.repo
            key = (ctx, freshness_key(item, r.as_of, self.policy), revs.get(item.key),
                   revs.get(f"repo:{repo}") if repo else None)
            cached: _GateMemo | None = memo.GATES.get(item, key)
            if cached is None:
                cached = self._gate(item)
                memo.GATES.put(item, key, cached)
            out, cand, excluded, redaction = cached
            self.candidate_entries.append(cand)
            if excluded is not None:
                self.excluded.append(excluded)
                continue
            a = self.admit(out, item)
            if redaction is not None:
                self.transforms.append(redaction)
                a.transform_ids.append(redaction.record_id)
                if redaction.preservation_assertions["secrets_removed"] != "passed":
                    self.exclude(a, ExclusionReason.SECURITY_REJECTED, "hard_gates",
                                 "redaction left secret material behind")
        failed = len(items) - len(self.admitted)
        self.stage("hard_gates", f"{len(self.admitted)} passed, {failed} excluded")

    def _gate(self, item: ContextItem) -> _GateMemo:
        out = self.runner.run(item)
        fresh = out.freshness.value if out.freshness else None
        cand = candidate_entry(item, fresh)
        if not out.passed:
            return out, cand, excluded_from_gate(out), None
        if out.redaction is None:
            return out, cand, None, None
        clean = self.runner.detector.scan_secrets(out.item.content) is None
        rec = simple_transform(
            record_id=f"transform-redact-{item.item_id}",
            kind="redact",
            before=out.redaction.original,
            after=out.item,
            objective="remove_secret_material",
            policy_version=self.policy.version_label,
            transformer_version="secret-redactor/v1",
            assertions={
                "secrets_removed": "passed" if clean else "failed",
                "trust_not_raised": "passed",
            },
            tokens_before=None,
            tokens_after=None,
        )
        return out, cand, None, rec

    def ranking(self) -> None:
        topics = self.req.required_topics
        pool = [a for a in self.admitted.values() if a.item.item_id != self.step_item_id]
        winners, losers = supersede([a.item for a in pool])
        for loser, winner in losers:
            self.exclude(
                self.admitted[loser.item_id], ExclusionReason.SUPERSEDED, "supersession",
                f"canonical key {loser.key}: revision {winner.revision!r} of {winner.item_id} "
                f"is newer", superseded_by=winner.item_id,
            )
        exempt = set(self.policy.placement.topic_exempt_roles)
        not_required = 0
        term_sets = topic_terms(topics)
        for item in winners:
            a = self.admitted[item.item_id]
            a.covered = covered_topics(a.item, topics, term_sets, self.term_scan)
            placed = a.item.intended_role in exempt or a.load_mode is LoadMode.RESIDENT
            if placed:
                a.admission_reason = a.admission_reason or "resident_by_policy"
                continue
            if a.item.required:
                a.admission_reason = "required_by_step"
            elif not topics:
                a.admission_reason = "no_required_topics_declared"
            elif a.covered:
                a.admission_reason = "covers_required_topics:" + ",".join(a.covered)
            else:
                not_required += 1
                self.exclude(a, ExclusionReason.NOT_REQUIRED, "coverage",
                             "covers none of the required topics "
                             f"{[t.name for t in topics]}")
        self.stage(
            "ranking",
            f"{len(losers)} superseded, {not_required} not required, "
            f"{len(self.admitted)} remain",
        )

    def source_limits(self) -> None:
        limited = disclosed = 0
        shaped = self.blocks.shape_all(self.admitted.values())
        for a in list(self.admitted.values()):
            if a.zone not in (Zone.DATA, Zone.DERIVED):
                continue
            after, recs, failed, body, mode = shaped[a.item.item_id]
            limited += any(r.type == "excerpt" for r in recs)
            disclosed += mode is LoadMode.DISCLOSE
            self.transforms.extend(recs)
            a.transform_ids.extend(r.record_id for r in recs)
            a.body_tokens, a.load_mode = body, mode
            if failed:
                self.exclude(a, ExclusionReason.TRANSFORM_BLOCKED, "source_limits", failed)
            else:
                a.item = after
        self.stage("source_limits", f"{limited} limited, {disclosed} disclosed as index entries")

    # -- budget --------------------------------------------------------------------
    def budget(self) -> None:
        units = build_units(self)
        self.units = {u.unit_id: u for u in units}
        self.usable = usable_budget(self.policy.budget, self.req.model.context_limit)
        alloc = allocate(units, self.policy.budget, self.usable, self.req.evidence_budget,
                         costing=self.blocks)
        self.alloc = alloc
        for u in alloc.evicted:
            self.evict(u, "does not fit its partition budget")
        if alloc.blocked is not None:
            raise Blocked(alloc.blocked, alloc.blocked_detail)
        self.check_required()
        self.stage(
            "budget",
            f"usable {self.usable}, estimated {alloc.used}, {len(alloc.admitted)} units "
            f"admitted, {len(alloc.evicted)} evicted",
        )

    def evict(self, u: Unit, detail: str) -> None:
        if u.unit_id in self.admitted:
            a = self.admitted[u.unit_id]
            self.exclude(a, ExclusionReason.BUDGET_EVICTED, "budget",
                         f"{detail} ({cost_text(u)}, partition {u.partition.value})")
        else:
            self.tools.evict(u, detail)

    def check_required(self) -> None:
        """Required partitions filled, blocking topics covered; sets ``missing``."""
        real = {i.item_id for i in self.req.candidates}
        for part in self.policy.blocking.required_partitions:
            if not any(a.partition is part and a.item.item_id in real
                       for a in self.admitted.values()):
                raise Blocked(
                    BlockedReason.REQUIRED_PARTITION_MISSING,
                    f"partition {part.value} has no admitted candidate (supply e.g. a "
                    f"{_HINT[part]} item, or a policy whose blocking.required_partitions "
                    f"omits {part.value})",
                )
        covered = {t for a in self.admitted.values()
                   for t in evidence_topics(a.item, a.zone, a.load_mode, a.covered)}
        covered |= self.tools.covered_topics()
        self.missing = [t.name for t in self.req.required_topics if t.name not in covered]
        hard = [t.name for t in self.req.required_topics if t.blocking and t.name in self.missing]
        if hard:
            raise Blocked(
                BlockedReason.REQUIRED_EVIDENCE_MISSING,
                f"no admitted evidence for blocking topics {hard}",
            )

    def ordered(self, zone: Zone, part: Partition | None = None) -> Sequence[Admitted]:
        """Admitted items of a zone in their budget order (deterministic)."""
        members = [a for a in self.admitted.values() if a.zone is zone
                   and (part is None or a.partition is part)]
        return sorted(members, key=lambda a: (
            self.units[a.item.item_id].order if a.item.item_id in self.units else 0,
            a.item.item_id))


_HINT = {
    Partition.CONTROL: "system_policy (role control)",
    Partition.TASK: "user_request (role task_intent)",
    Partition.STATE: "runtime_state (role state)",
    Partition.DIRECT_EVIDENCE: "evidence",
    Partition.RECENT_TOOL_PAIRS: "tool history",
    Partition.BACKGROUND: "background",
}
