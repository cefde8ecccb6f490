"""The first two stages: record acquisition outcomes, then run every candidate through the
hard gates (docs/context-engine.md#hard-gates).

Acquisition outcomes (``not_retrieved``, ``retrieval_failed`` …) are recorded as they are,
never disguised as exclusions. Then the step's own contract item and every candidate, in
item-id order, meet the gates; a candidate that passes is admitted into the state, one that
fails becomes an excluded entry naming the gate and the reason. A redacted candidate is
admitted as its redacted copy with a ``redact`` transform record — or excluded if the
redaction left secret material behind.

Gate outcomes are memoized per item object under everything they depend on (the gate set
and order, ``GATE_SET_KEY``; policy digest,
clearance and scopes, the item's freshness at ``as_of``, the revisions the request
requires), so a warm assembly re-gates nothing that could not have changed.
"""

from __future__ import annotations

from context import memo
from context.admission.gates import GateRunner, freshness_key, pinned_revision
from context.admission.security import redact_secrets
from context.admitted import GateOutcome
from context.assembly.state import AssemblyState
from context.items import ContextItem
from context.manifest import CandidateEntry, ExcludedEntry, TransformEntry
from context.manifest_entries import (
    acquisition_entry,
    candidate_entry,
    excluded_from_gate,
    simple_transform,
)
from context.ranking.loading import load_mode_for
from context.request import AssemblyRequest
from context.vocabulary import (
    GATE_SET_KEY,
    ExclusionReason,
    LoadMode,
    Role,
    SecurityClass,
    SourceType,
    Trust,
)

__all__ = ["ENGINE_PRODUCER", "GateStage", "record_acquisitions", "step_item"]

#: The producer named on items the engine itself builds (the step contract).
ENGINE_PRODUCER = "pressroom-context-engine/v1"

_GateMemo = tuple[GateOutcome, CandidateEntry, ExcludedEntry | None, TransformEntry | None]


def record_acquisitions(state: AssemblyState) -> None:
    """The acquisition outcomes, in source-request order, as the manifest lists them."""
    state.acquisitions = [
        acquisition_entry(acquisition, redact_secrets(acquisition.reason)
                          if acquisition.reason else acquisition.reason)
        for acquisition in sorted(state.request.acquisitions,
                                  key=lambda acquisition: acquisition.source_request_id)
    ]
    counts: dict[str, int] = {}
    for entry in state.acquisitions:
        counts[entry.outcome.value] = counts.get(entry.outcome.value, 0) + 1
    state.stage("acquisition", f"outcomes {dict(sorted(counts.items()))}")


def step_item(request: AssemblyRequest, item_id: str) -> ContextItem:
    """The step itself (question, decision, stage, required topics) as a task item, gated
    like any candidate; it never counts towards the required task partition."""
    lines = [f"QUESTION\n{request.question}", f"STAGE\n{request.stage}"]
    if request.decision:
        lines.insert(1, f"DECISION\n{request.decision}")
    if request.required_topics:
        topics = "\n".join(
            f"- {topic.name}{' (blocking)' if topic.blocking else ''}"
            for topic in request.required_topics
        )
        lines.append(f"REQUIRED TOPICS\n{topics}")
    return ContextItem.build(
        item_id=item_id,
        source_type=SourceType.USER_REQUEST,
        producer=ENGINE_PRODUCER,
        content="\n\n".join(lines),
        scope=request.scope,
        trust=Trust.TASK_AUTHORITY,
        intended_role=Role.TASK_INTENT,
        security_class=SecurityClass.PUBLIC,
        load_mode=LoadMode.RESIDENT,
        metadata={"goal": request.question},
    )


class GateStage:
    """Gates every candidate and admits those that pass (the only admission of
    candidates; see ``context.assembly.state``)."""

    def __init__(self, state: AssemblyState, runner: GateRunner) -> None:
        self.state = state
        self.runner = runner

    def run(self) -> None:
        state, request, policy = self.state, self.state.request, self.state.policy
        # no as_of here: what an outcome takes from the clock is its freshness_key
        context_key = "|".join((GATE_SET_KEY, policy.digest, request.principal.clearance.value,
                                str(request.principal.scope), str(request.scope)))
        revisions = request.required_revisions
        items = [step_item(request, state.step_item_id),
                 *sorted(request.candidates, key=lambda item: item.item_id)]
        for item in items:
            repo = item.source_ref.repo
            pinned = pinned_revision(item, revisions)
            key = (context_key, freshness_key(item, request.as_of, policy, pinned=pinned),
                   revisions.get(item.key), revisions.get(f"repo:{repo}") if repo else None)
            cached: _GateMemo | None = memo.GATES.get(item, key)
            if cached is None:
                cached = self._gate(item)
                memo.GATES.put(item, key, cached)
            outcome, candidate, excluded, redaction = cached
            state.candidate_entries.append(candidate)
            if excluded is not None:
                state.excluded.append(excluded)
                continue
            admitted = state.admit(outcome, item, load_mode_for(outcome.item, policy))
            if redaction is not None:
                state.transforms.append(redaction)
                admitted.transform_ids.append(redaction.record_id)
                if redaction.preservation_assertions["secrets_removed"] != "passed":
                    state.exclude(admitted, ExclusionReason.SECURITY_REJECTED, "hard_gates",
                                  "redaction left secret material behind")
        failed = len(items) - len(state.admitted)
        state.stage("hard_gates", f"{len(state.admitted)} passed, {failed} excluded")

    def _gate(self, item: ContextItem) -> _GateMemo:
        outcome = self.runner.run(item)
        freshness = outcome.freshness.value if outcome.freshness else None
        candidate = candidate_entry(item, freshness, outcome.freshness_waiver)
        if not outcome.passed:
            return outcome, candidate, excluded_from_gate(outcome), None
        if outcome.redaction is None:
            return outcome, candidate, None, None
        clean = self.runner.detector.scan_secrets(outcome.item.content) is None
        record = simple_transform(
            record_id=f"transform-redact-{item.item_id}",
            kind="redact",
            before=outcome.redaction.original,
            after=outcome.item,
            objective="remove_secret_material",
            policy_version=self.state.policy.version_label,
            transformer_version="secret-redactor/v1",
            assertions={
                "secrets_removed": "passed" if clean else "failed",
                "trust_not_raised": "passed",
            },
            tokens_before=None,
            tokens_after=None,
        )
        return outcome, candidate, None, record
