"""Forking a job: the fork's spec derived from its parent's, and the ``fork_state``
activity's messages (docs/architecture.md#forking-a-job).

``fork_spec`` is the one place a fork's spec is made: the parent's spec with the new job
id, the signed edits applied and the lineage recorded. The CLI builds the spec it starts
with it and ``fork_state`` builds it again from the parent's stored spec and compares, so
a fork cannot change anything the edits do not name — not its reviewers, its operators,
its principal, its destination or its scope.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal, InvalidOperation

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contracts.activity_messages import StepState
from contracts.errors import ForkRefused, JobError
from contracts.job_spec import JobSpec
from contracts.lineage import ForkLineage
from contracts.signing import SignatureError, verify
from contracts.workflow_messages import MAX_RESOLVE_AGE


class ForkError(JobError, ValueError):
    """An edit that cannot be applied to the parent's spec (the CLI says it in one line)."""


def fork_spec(parent: JobSpec, lineage: ForkLineage) -> JobSpec:
    """``parent`` as the fork ``lineage`` describes: its id, its edited sources, question
    and budgets, and the lineage itself; ``ForkError`` when an edit does not apply."""
    edits = lineage.edits
    if lineage.parent_job != parent.job_id:
        raise ForkError(f"the lineage names parent {lineage.parent_job!r}, not {parent.job_id!r}")
    names = [s.name for s in parent.sources]
    for name in [*edits.drop_sources, *edits.refresh_sources]:
        if name not in names:
            raise ForkError(f"job {parent.job_id} has no source named {name!r}")
    sources = [s for s in parent.sources if s.name not in edits.drop_sources]
    for added in edits.add_sources:
        if added.name in [s.name for s in sources]:  # same name: replaced, as by resolve
            sources = [added if s.name == added.name else s for s in sources]
        else:
            sources.append(added)
    if not sources:
        raise ForkError("a fork needs at least one source; every source was dropped")
    research = parent.research
    if edits.token_budget is not None:
        research = research.model_copy(update={"token_budget": edits.token_budget})
    if edits.cost_budget_usd is not None:
        try:
            cost = Decimal(edits.cost_budget_usd)
        except InvalidOperation:
            raise ForkError(f"--cost-budget {edits.cost_budget_usd!r} is not a number") from None
        research = research.model_copy(update={"cost_budget_usd": cost})
    data = parent.model_dump(mode="json")
    data.update(job_id=lineage.new_job, sources=[s.model_dump(mode="json") for s in sources],
                research=research.model_dump(mode="json"),
                lineage=lineage.model_dump(mode="json"))
    if edits.question is not None:
        data["question"] = edits.question
    try:
        return JobSpec.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ForkError(f"the fork's spec is not valid: {where}: {first.get('msg')}") from None


def unsigned(spec: JobSpec) -> JobSpec:
    """``spec`` without its lineage's signature (what ``fork_state`` compares)."""
    if spec.lineage is None:
        return spec
    return spec.model_copy(update={"lineage": spec.lineage.model_copy(
        update={"signature": None})})


def check_signature(lineage: ForkLineage, parent: JobSpec, *, now: datetime) -> str:
    """The signer's normalized name, or ``ForkRefused``: signed with purpose ``fork`` for
    the parent job by one of its listed reviewers or operators, at most
    ``MAX_RESOLVE_AGE`` before ``now`` (deterministic: the workflow calls it too)."""
    try:
        signer = verify(lineage.signature, "fork", lineage.parent_job, lineage.signed_body(),
                        allowed=parent.review.signers(operators=True), now=now)
    except SignatureError as exc:
        raise ForkRefused(f"refused: fork of {lineage.parent_job}: {exc}") from None
    assert lineage.signature is not None
    if now - lineage.signature.signed_time() > MAX_RESOLVE_AGE:
        raise ForkRefused(f"refused: fork of {lineage.parent_job}: signed at "
                          f"{lineage.signature.signed_at}, more than {MAX_RESOLVE_AGE} ago; "
                          "sign a new one")
    return signer


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ForkStateInput(_Msg):
    """What ``fork_state`` needs: the fork's spec (its lineage carries the signed request)
    and the fork's first run id (its stored spec is bound to it, as every job's is)."""

    spec: JobSpec
    first_run_id: str | None = None


class ForkStateResult(_Msg):
    """The fork's own references to the state it starts from (all written under its own
    ids), and what the research loop resumes with. No content."""

    refs: StepState
    turn: int = Field(ge=1)
    checkpoint_id: str | None = None
    covered_topics: list[str] = Field(default_factory=list)
    notes_dropped: int = 0
    state_hash: str


__all__ = ["ForkError", "ForkRefused", "ForkStateInput", "ForkStateResult",
           "check_signature", "fork_spec", "unsigned"]
