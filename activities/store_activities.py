"""Activities that only write records: the job spec, the research plan, review decisions.

Each write is idempotent under retry (``put_once``) and returns an ``ArtifactRef`` — the
workflow keeps the reference, the bytes stay in the store.
"""

from __future__ import annotations

import hashlib

from activities.reviewer_registry import check_spec_reviewers
from activities.runtime import (
    ActivityRuntime,
    dumps,
    pause_point,
    principal_of,
    put_once,
    ref_of,
)
from contracts.activity_messages import ArtifactRef, PlanInput, RecordReviewInput, StoreJobSpecInput
from contracts.errors import CarriedStateMismatch, JobIdReused
from contracts.job_spec import JobSpec
from contracts.mcp_servers import check_grants
from contracts.model_endpoints import endpoint_of
from contracts.path_safety import check_job_paths
from contracts.web_policy import check_job_urls


def job_spec_id(spec: JobSpec) -> str:
    return spec.job_id


def plan_id(spec: JobSpec) -> str:
    return f"{spec.job_id}.plan"


def review_id(spec: JobSpec) -> str:
    return f"{spec.job_id}.review"


async def store_job_spec(runtime: ActivityRuntime, inp: StoreJobSpecInput) -> ArtifactRef:
    """Store a job's spec (at start, and after ``resolve`` adds a source) — once every path
    it names is inside this worker's roots (``contracts.path_safety.check_job_paths``) and
    every live web page's URL on its allow-list (``contracts.web_policy.check_job_urls``): a
    spec started around ``pressroom run``'s own check is refused here, non-retryably,
    before anything reads it. A worker that accepts only registered reviewers also refuses
    a spec listing a reviewer or operator key its registry does not hold
    (``activities.reviewer_registry``), and every worker a ``model.base_url`` its endpoint
    list does not hold (``ModelEndpointRefused``; ``contracts.model_endpoints``).

    Each revision records the job's first run id (``first_run_id``); a workflow that
    reuses the id of an earlier job in the same tenant and project cannot add a revision
    to that job's spec (``JobIdReused``) and so never reads as that job. With ``held``
    (a continued run checking its carried state) nothing is written: the reference must be
    this job's stored spec head holding exactly this spec (``CarriedStateMismatch``).
    SECURITY.md, "Tenant isolation"."""
    spec = inp.spec
    check_job_paths(spec, runtime.roots, runtime.locations)
    if spec.model.base_url is not None:
        # only an endpoint the operator lists (contracts.model_endpoints): refused here,
        # before anything is read, not at the first model call
        endpoint_of(spec.model, runtime.endpoints, {})
    check_job_urls(spec.sources, runtime.web_policy)  # live web pages: the allow-list
    check_grants(spec.tools, runtime.mcp_servers)  # only operator-defined MCP servers
    if runtime.registered_reviewers_only:
        check_spec_reviewers(spec, runtime.reviewers_dir)
    store = await runtime.store()
    body = dumps(spec.model_dump(mode="json"))
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    head = await store.head("job_spec", job_spec_id(spec), principal=principal_of(spec))
    owner = head.metadata.get("first_run_id") if head is not None else None
    if inp.held is not None:
        held = inp.held
        if (head is None or (held.kind, held.artifact_id, held.revision, held.content_hash)
                != ("job_spec", head.artifact_id, head.revision, head.content_hash)
                or head.content_hash != digest):
            raise CarriedStateMismatch(
                f"the carried spec reference {held.artifact_id} r{held.revision} is not job "
                f"{spec.job_id}'s stored spec in {spec.scope.tenant}/{spec.scope.project}")
        if owner is not None and inp.first_run_id is not None and owner != inp.first_run_id:
            raise CarriedStateMismatch(f"job {spec.job_id}'s stored spec belongs to another "
                                       "run of the same id")
        return ref_of(head)
    if owner is not None and inp.first_run_id is not None and owner != inp.first_run_id:
        raise JobIdReused(f"job id {spec.job_id} already belongs to an earlier job in "
                          f"{spec.scope.tenant}/{spec.scope.project}; nothing written")
    if head is not None and head.content_hash == digest:
        return ref_of(head)
    await pause_point("store_job_spec_before_write")
    first = {"first_run_id": inp.first_run_id} if inp.first_run_id else None
    rec = await put_once(store, "job_spec", job_spec_id(spec), body, spec=spec,
                         trust="task_authority",
                         parent_revision=head.revision if head else None,
                         write_id=f"job-spec:{digest}", metadata=first)
    await pause_point("store_job_spec_after_write")
    return ref_of(rec)


def render_plan(spec: JobSpec) -> str:
    """The research plan, derived deterministically from the job spec (no model call)."""
    lines = [f"# Research plan: {spec.job_id}", "", f"Question: {spec.question}", "",
             "## Topics to cover"]
    for t in spec.topics:
        flag = " (blocking: required before drafting)" if t.blocking else ""
        lines.append(f"- {t.name}{flag}: search terms {', '.join(t.terms)}")
    lines += ["", "## Required sources"]
    lines += [f"- {s.name}: {s.describe()}" for s in spec.sources]
    lines += ["", "## Forbidden actions"]
    lines += [f"- {a}" for a in spec.forbidden_actions] or ["- (none listed)"]
    lines += ["", "## Steps", "1. Acquire every required source at its pinned revision.",
              "2. Draft the article from admitted evidence, one citation per claim.",
              "3. Wait for an approving review by an allowed reviewer.",
              f"4. Publish to {spec.destination} only after that approval.", ""]
    return "\n".join(lines)


async def write_plan(runtime: ActivityRuntime, inp: PlanInput) -> ArtifactRef:
    store = await runtime.store()
    spec = await runtime.spec_of(inp.job)
    text = render_plan(spec)
    await pause_point("write_plan_before_write")
    rec = await put_once(store, "research_plan", plan_id(spec), text.encode("utf-8"),
                         spec=spec, trust="trusted_state",
                         parent_revision=inp.parent_revision,
                         write_id=inp.context.step_id, media_type="text/markdown",
                         metadata={"manifest_id": inp.context.manifest_id})
    await pause_point("write_plan_after_write")
    return ref_of(rec)


async def record_review(runtime: ActivityRuntime, inp: RecordReviewInput) -> ArtifactRef:
    """Store a validated review decision, written by the reviewer's own principal."""
    store = await runtime.store()
    spec = await runtime.spec_of(inp.job)
    body = {
        "decision_id": inp.decision_id,
        "job_id": spec.job_id,
        "decision": inp.decision,
        "reviewer": inp.reviewer,
        "draft": inp.draft.model_dump(mode="json"),
        "destination": inp.destination,
        "comments": inp.comments,
        "decided_at": inp.decided_at,
        "draft_revision": inp.draft.revision,
        "draft_hash": inp.draft.content_hash,
        "signature": (inp.signature.model_dump(mode="json")
                      if inp.signature is not None else None),
        # only when signed in (decisions stored before it was carry none: unchanged)
        **({"first_run_id": inp.first_run_id} if inp.first_run_id is not None else {}),
    }
    await pause_point("record_review_before_write")
    rec = await put_once(store, "review_decision", review_id(spec), dumps(body),
                         spec=spec, trust="trusted_state",
                         parent_revision=inp.parent_revision, write_id=inp.decision_id,
                         principal_id=inp.reviewer,
                         metadata={"decision": inp.decision,
                                   "draft_hash": inp.draft.content_hash})
    await pause_point("record_review_after_write")
    return ref_of(rec)


__all__ = ["record_review", "render_plan", "store_job_spec", "write_plan"]
