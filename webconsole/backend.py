"""The console's one narrow interface to the outside: Temporal and the artifact store.

Pages never touch a client or a store; they call a ``ConsoleBackend`` method and render
the value object it returns. Every method takes the signed-in reviewer (``viewer``, a
normalized name) and enforces the console's one visibility rule before reading anything
else: **a reviewer sees only jobs that list them** (as reviewer or operator). A job that
does not list the viewer is ``NotVisible`` — the same answer as a job that does not exist,
so the console never confirms another tenant's job id.

What is read from where:

* the job list: Temporal's visibility store, one ``list_workflows`` query per page over
  the typed search attributes the workflow sets (``workflows.visibility``);
* a job: its spec (first history event), live status (the workflow's ``status`` query, or
  its result), the stage timeline (the history, ``webconsole.timeline``), the research
  turns (stored ``model_decision`` and ``tool_record`` artifacts) and the publish receipt;
* a draft: the pending revision from the store, checked against the content hash the
  workflow holds, the previous revision for the diff, and the excerpts its citations point
  at — the data blocks of the sealed request it was drafted from, re-hashed against the
  manifest first;
* a manifest: the sealed record, with its serialized request re-hashed.

Decisions go through ``client.jobs.review_job``: the real Update, validated by the
workflow. The backend signs with a key the caller decrypted for this one call.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections import OrderedDict
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.client import Client

import artifacts
from artifacts import Store
from artifacts.errors import InvalidArtifact, ScopeDenied
from client import jobs, live
from client.errors import JobNotFound
from context import DataBlockView, ManifestDiff, diff_manifests
from contracts.approval import approval_problem
from contracts.errors import JobError
from contracts.job_spec import JobSpec
from contracts.ownership import ForeignArtifact, check_manifest, check_owned, check_record
from contracts.pricing import spent_usd
from contracts.signing import normalize_name
from contracts.workflow_messages import PendingDraft, ReviewResult
from presentation.explain import flagged_items
from presentation.turns import TraceTurn, lines_read, research_turns, turn_request
from webconsole.evidence import item_texts, request_blocks
from webconsole.timeline import Stage, Step, number_turns, stage_of, stages

CONSOLE_PRINCIPAL = "pressroom-console"
#: one live-update stream lasts at most this long; the browser then reconnects, and the
#: reconnection is signed in and visibility-checked again like any request
LIVE_STREAM_SECONDS = 300.0
#: job questions remembered (a job's spec never changes, and a job id is never reused)
QUESTIONS_KEPT = 2048
#: the jobs list reads at most this many specs at once
QUESTION_READS = 8
#: a manifest's request larger than this is summarized, not inlined in the page
MAX_REQUEST_CHARS = 2_000_000


class NotVisible(JobNotFound):
    """The job does not exist, or does not list the signed-in reviewer."""


class DraftUnavailable(JobError):
    """The job has no draft waiting, or its stored text does not match the held hash."""


def status_of(view: jobs.JobView) -> str:
    """A job's status as the console shows it: the live one, the result's, or its end."""
    if view.live is not None:
        return view.live.status
    if view.result is not None:
        return view.result.status
    return "failed" if view.failure else view.execution.lower()


@dataclass
class JobDetail:
    job_id: str
    spec: JobSpec
    view: jobs.JobView
    stages: list[Stage]
    turns: list[TraceTurn]
    manifests: list[dict[str, Any]]
    receipt: dict[str, Any] | None
    viewer_is_reviewer: bool

    @property
    def status(self) -> str:
        return status_of(self.view)

    @property
    def stage(self) -> str:
        return self.view.live.stage if self.view.live is not None else "done"


@dataclass
class DraftReview:
    job_id: str
    spec: JobSpec
    pending: PendingDraft
    destination: str
    text: str
    previous_text: str | None
    previous_revision: int | None
    blocks: list[DataBlockView]
    manifest_id: str | None
    request_verified: bool
    #: the spec's topics without admitted evidence (the research loop's, else the draft
    #: step's manifest's)
    missing_topics: list[str]
    #: items of the draft step's manifest its security screening flagged
    security_flags: int
    #: what the research turns cost (``contracts.pricing.spent_usd``: "not priced" when
    #: the worker had no price for the model), ``None`` before the first turn
    cost: str | None
    #: every line the job's reads returned, by (source, path, revision)
    lines_read: dict[tuple[str, str, str], dict[int, str]]


@dataclass
class PublishedArticle:
    """A published job's article as its reviewer approved it, and that signed decision.

    The text is the approved draft revision read from the store and checked against the
    hash the decision binds (the published file adds only a provenance header,
    ``activities.publish``); ``signature_problem`` is ``contracts.approval``'s verdict on
    the decision — what the publisher checked before writing — ``None`` when it holds."""

    job_id: str
    spec: JobSpec
    receipt: dict[str, Any]
    decision: dict[str, Any]
    signature_problem: str | None
    draft_revision: int
    draft_hash: str
    text: str
    blocks: list[DataBlockView]
    manifest_id: str | None
    request_verified: bool
    lines_read: dict[tuple[str, str, str], dict[int, str]]


def _principal(spec: JobSpec) -> artifacts.Principal:
    return artifacts.Principal(principal_id=CONSOLE_PRINCIPAL, tenant=spec.scope.tenant,
                               project=spec.scope.project)


def listed(spec: JobSpec) -> set[str]:
    """Everyone a job lists: its reviewers and operators, normalized."""
    return {normalize_name(p.name) for p in (*spec.review.reviewers, *spec.review.operators)}


def may_decide(spec: JobSpec, viewer: str) -> bool:
    """Whether ``viewer`` may approve, request changes or reject (a listed reviewer who is
    not the job's own principal; the workflow's validator checks again)."""
    return (viewer in {normalize_name(p.name) for p in spec.review.reviewers}
            and viewer != normalize_name(spec.principal.principal_id))


class ConsoleBackend:
    """Reads for the pages and the one write (a signed decision); see the module docstring."""

    def __init__(self, client: Client, store: Store, *, worker_grace: float) -> None:
        self.client, self.store, self.worker_grace = client, store, worker_grace
        self._questions: OrderedDict[str, str] = OrderedDict()
        self._question_reads = asyncio.Semaphore(QUESTION_READS)

    async def visible_jobs(self, viewer: str, *, status: str | None = None,
                           tenant: str | None = None) -> list[Any]:
        """The jobs listing ``viewer``: one visibility query."""
        found: list[Any] = await jobs.list_visible_jobs(self.client, reviewer=viewer,
                                                        status=status, tenant=tenant)
        return found

    async def questions(self, viewer: str, found: list[Any]) -> dict[str, str]:
        """The question of each job ``visible_jobs`` listed for ``viewer`` (read from each
        job's spec once, then remembered); a job whose spec cannot be read, or that does not
        list ``viewer``, has none."""
        async def one(job_id: str) -> tuple[str, str | None]:
            if job_id in self._questions:
                self._questions.move_to_end(job_id)
                return job_id, self._questions[job_id]
            async with self._question_reads:
                try:
                    spec = await self.spec(job_id, viewer)
                except (JobNotFound, JobError):
                    return job_id, None
            self._questions[job_id] = spec.question
            while len(self._questions) > QUESTIONS_KEPT:
                self._questions.popitem(last=False)
            return job_id, spec.question
        pairs = await asyncio.gather(*(one(job.job_id) for job in found))
        return {job_id: question for job_id, question in pairs if question is not None}

    async def spec(self, job_id: str, viewer: str) -> JobSpec:
        """The job's spec, or ``NotVisible`` when it does not list ``viewer``."""
        try:
            spec = await jobs.job_spec_of(self.client, job_id)
        except JobNotFound:
            raise NotVisible(f"no job {job_id!r} that lists you") from None
        if viewer not in listed(spec):
            raise NotVisible(f"no job {job_id!r} that lists you")
        return spec

    async def follow(self, job_id: str, viewer: str, *, refresh: float = live.REFRESH_SECONDS,
                     timeout: float = LIVE_STREAM_SECONDS
                     ) -> tuple[JobSpec, AsyncGenerator[jobs.JobView, None]]:
        """The job's spec and its live views (``client.live.follow``: one per history
        change, ending when the job needs a human or ends, or after ``timeout`` seconds);
        ``NotVisible`` — before anything is read of the job — when it does not list
        ``viewer``."""
        spec = await self.spec(job_id, viewer)
        return spec, live.follow(self.client, job_id, worker_grace=self.worker_grace,
                                 refresh=refresh, timeout=timeout)

    async def job(self, job_id: str, viewer: str) -> JobDetail:
        spec = await self.spec(job_id, viewer)
        view = await jobs.view_job(self.client, job_id, worker_grace=self.worker_grace)
        steps = await self._steps(job_id)
        principal = _principal(spec)
        turns = await research_turns(self.store, job_id, principal)
        # columns only: a long loop's 200 bodies would be megabytes read and re-hashed
        # for one page view; the manifest page opens and verifies the one asked for
        manifests = [{"id": row["manifest_id"], "step_id": row["step_id"],
                      "status": row["status"], "sealed_at": row["created_at"]}
                     for row in await self.store.manifest_summaries(
                         job_id, principal=principal)]
        receipt = None
        result_receipt = (view.live.receipt if view.live is not None else
                          view.result.receipt if view.result is not None else None)
        if result_receipt is not None:
            receipt = result_receipt.model_dump(mode="json")
        return JobDetail(job_id=job_id, spec=spec, view=view, stages=stages(steps),
                         turns=turns, manifests=manifests, receipt=receipt,
                         viewer_is_reviewer=may_decide(spec, viewer))

    async def _steps(self, job_id: str) -> list[Step]:
        """Every activity, update and signal of the current run's history, in order."""
        handle = self.client.get_workflow_handle(job_id)
        by_id: dict[int, Step] = {}
        steps: list[Step] = []
        async for event in handle.fetch_history_events():
            at = event.event_time.ToDatetime()
            kind = event.WhichOneof("attributes")
            if kind == "activity_task_scheduled_event_attributes":
                attrs = event.activity_task_scheduled_event_attributes
                name = attrs.activity_type.name
                stage = stage_of(name, _input_field(attrs.input.payloads, "stage"))
                step = Step(name=name, stage=stage, started_at=at)
                by_id[event.event_id] = step
                steps.append(step)
            elif kind in ("activity_task_completed_event_attributes",
                          "activity_task_failed_event_attributes",
                          "activity_task_timed_out_event_attributes",
                          "activity_task_canceled_event_attributes",
                          "activity_task_started_event_attributes"):
                attrs = getattr(event, kind)
                step_or_none = by_id.get(attrs.scheduled_event_id)
                if step_or_none is None:
                    continue
                if kind == "activity_task_started_event_attributes":
                    step_or_none.attempt = attrs.attempt
                    continue
                step_or_none.finished_at = at
                step_or_none.outcome = kind.removeprefix("activity_task_").removesuffix(
                    "_event_attributes")
            elif kind == "workflow_execution_update_accepted_event_attributes":
                update = event.workflow_execution_update_accepted_event_attributes
                steps.append(Step(name=f"update {update.accepted_request.input.name}",
                                  stage="review", started_at=at, finished_at=at,
                                  outcome="accepted"))
            elif kind == "workflow_execution_signaled_event_attributes":
                signal = event.workflow_execution_signaled_event_attributes
                steps.append(Step(name=f"signal {signal.signal_name}", stage="review",
                                  started_at=at, finished_at=at, outcome="received"))
        number_turns(steps)
        return steps

    async def draft_review(self, job_id: str, viewer: str) -> DraftReview:
        spec = await self.spec(job_id, viewer)
        view = await jobs.view_job(self.client, job_id, worker_grace=self.worker_grace)
        if view.live is None or view.live.pending_draft is None:
            raise DraftUnavailable(f"job {job_id!r} has no draft waiting for review "
                                   f"({view.summary})")
        pending = view.live.pending_draft
        principal = _principal(spec)
        try:  # the status names the draft: it must be this job's own (contracts/ownership.py)
            check_owned(job_id, "article_draft", pending.artifact_id)
            record, body = await self.store.get("article_draft", pending.artifact_id,
                                                principal=principal, revision=pending.revision)
            check_record(job_id, spec.scope.tenant, spec.scope.project, record)
        except ForeignArtifact:
            raise DraftUnavailable(f"job {job_id!r} names a draft that is not its own; "
                                   "not shown") from None
        if "sha256:" + hashlib.sha256(body).hexdigest() != pending.content_hash:
            raise DraftUnavailable(f"job {job_id!r}: the stored draft r{pending.revision} does "
                                   "not match the hash the job holds; not shown")
        previous_text = previous_revision = None
        if record.parent_revision is not None:
            _, old = await self.store.get("article_draft", pending.artifact_id,
                                          principal=principal, revision=record.parent_revision)
            previous_text, previous_revision = old.decode("utf-8"), record.parent_revision
        manifest_id, manifest, blocks, verified = await self._draft_request(
            job_id, principal, record)
        research = view.live.research
        if research is not None and research.turn:
            missing = [t.name for t in spec.topics if t.name not in research.covered_topics]
        else:
            missing = [str(t) for t in manifest.get("missing_topics") or []]
        return DraftReview(job_id=job_id, spec=spec, pending=pending,
                           missing_topics=missing,
                           security_flags=len(flagged_items(manifest)) if manifest else 0,
                           cost=(spent_usd(research.cost_micro_usd, research.unpriced_calls)
                                 if research is not None and research.turn else None),
                           lines_read=await lines_read(self.store, job_id, principal),
                           destination=view.live.destination, text=body.decode("utf-8"),
                           previous_text=previous_text, previous_revision=previous_revision,
                           blocks=blocks, manifest_id=manifest_id if isinstance(
                               manifest_id, str) else None, request_verified=verified)

    async def _draft_request(self, job_id: str, principal: artifacts.Principal, record: Any
                             ) -> tuple[str | None, dict[str, Any], list[DataBlockView], bool]:
        """The sealed request a draft revision was written from (its record names the draft
        step's manifest): the manifest's id and body, its data blocks, and whether the
        request still hashes to its seal."""
        manifest_id = record.metadata.get("manifest_id")
        if not isinstance(manifest_id, str):
            return None, {}, [], False
        manifest: dict[str, Any] = await self.store.get_manifest(manifest_id,
                                                                 principal=principal)
        try:
            check_manifest(job_id, manifest, manifest_id)
        except ForeignArtifact:
            raise DraftUnavailable(f"job {job_id!r}: its draft's manifest is not its own; "
                                   "not shown") from None
        blocks, verified = _blocks_of(manifest)
        return manifest_id, manifest, blocks, verified

    async def published(self, job_id: str, viewer: str) -> PublishedArticle:
        """The article ``job_id`` published and the signed decision that approved it;
        ``DraftUnavailable`` when it has published nothing, or what the store holds does
        not match what the receipt and decision bind (then nothing of it is shown)."""
        spec = await self.spec(job_id, viewer)
        view = await jobs.view_job(self.client, job_id, worker_grace=self.worker_grace)
        receipt = (view.live.receipt if view.live is not None else
                   view.result.receipt if view.result is not None else None)
        if receipt is None:
            raise DraftUnavailable(f"job {job_id!r} has published nothing ({view.summary})")
        principal = _principal(spec)
        decision: dict[str, Any] | None = None
        try:
            for rec in await self.store.history("review_decision", f"{job_id}.review",
                                                principal=principal):
                check_record(job_id, spec.scope.tenant, spec.scope.project, rec)
                _, body = await self.store.get("review_decision", rec.artifact_id,
                                               principal=principal, revision=rec.revision)
                found = json.loads(body)
                if found.get("decision_id") == receipt.review_decision_id:
                    decision = found
        except ForeignArtifact:
            raise DraftUnavailable(f"job {job_id!r}: its review decisions are not its own; "
                                   "not shown") from None
        if decision is None or decision.get("decision") != "approve":
            raise DraftUnavailable(f"job {job_id!r}: the decision its receipt names "
                                   f"({receipt.review_decision_id}) is not stored as an "
                                   "approval; not shown")
        bound = decision.get("draft") or {}
        try:
            check_owned(job_id, "article_draft", str(bound.get("artifact_id")))
            record, text = await self.store.get("article_draft", str(bound["artifact_id"]),
                                                principal=principal,
                                                revision=int(bound["revision"]))
            check_record(job_id, spec.scope.tenant, spec.scope.project, record)
        except (ForeignArtifact, KeyError, ValueError, TypeError):
            raise DraftUnavailable(f"job {job_id!r}: its approval binds no draft of its own; "
                                   "not shown") from None
        if "sha256:" + hashlib.sha256(text).hexdigest() != bound.get("content_hash"):
            raise DraftUnavailable(f"job {job_id!r}: the stored draft r{bound.get('revision')} "
                                   "does not match the hash its approval binds; not shown")
        manifest_id, _manifest, blocks, verified = await self._draft_request(
            job_id, principal, record)
        return PublishedArticle(
            job_id=job_id, spec=spec, receipt=receipt.model_dump(mode="json"),
            decision=decision, signature_problem=approval_problem(spec, decision),
            draft_revision=int(bound["revision"]), draft_hash=str(bound["content_hash"]),
            text=text.decode("utf-8"), blocks=blocks, manifest_id=manifest_id,
            request_verified=verified,
            lines_read=await lines_read(self.store, job_id, principal))

    async def file_read(self, job_id: str, viewer: str, source: str, path: str,
                        revision: str) -> dict[int, str]:
        """The lines of ``source:path`` at ``revision`` the job's reads returned (empty when
        it read none, or the source is not one the job declares). Read from the job's own
        stored tool records only: the console opens no source and no file."""
        spec = await self.spec(job_id, viewer)
        if source not in {s.name for s in spec.sources}:
            return {}
        found = await lines_read(self.store, job_id, _principal(spec))
        return found.get((source, path, revision), {})

    async def manifest(self, job_id: str, viewer: str, manifest_id: str) -> dict[str, Any]:
        """A manifest of ``job_id`` (only one it names) with its request re-hashed."""
        spec = await self.spec(job_id, viewer)
        try:
            manifest: dict[str, Any] = await self.store.get_manifest(
                manifest_id, principal=_principal(spec))
        except (ScopeDenied, InvalidArtifact):
            manifest = {}
        try:  # another job's, or none: the same answer
            check_manifest(job_id, manifest, manifest_id)
        except ForeignArtifact:
            raise NotVisible(f"job {job_id!r} has no manifest {manifest_id!r}") from None
        serialized = manifest.get("serialized_request") or {}
        canonical = serialized.get("canonical_json")
        manifest["_request_verified"] = isinstance(canonical, str) and (
            "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
            == serialized.get("hash"))
        if manifest["_request_verified"] and isinstance(canonical, str):
            with contextlib.suppress(ValueError):
                payload = json.loads(canonical)
                manifest["_item_texts"] = item_texts(payload if isinstance(payload, dict)
                                                     else {})
        if isinstance(canonical, str):
            manifest["_request_pretty"] = (
                json.dumps(json.loads(canonical), indent=2, ensure_ascii=False)
                if len(canonical) <= MAX_REQUEST_CHARS
                else canonical[:MAX_REQUEST_CHARS] + "\n… (cut; see `pressroom explain`)")
        return manifest

    async def compare(self, job_b: str, turn_b: int, job_a: str, turn_a: int,
                      viewer: str) -> ManifestDiff:
        """The sealed requests of ``job_a``'s research turn ``turn_a`` and ``job_b``'s turn
        ``turn_b`` compared item by item (``context.diff_manifests``, as ``pressroom explain
        --diff``), each job's own id reading ``{job}``. Both jobs must list ``viewer``;
        ``NotVisible`` when either does not, or has no such turn — one answer for both."""
        sides = []
        for job_id, turn in ((job_a, turn_a), (job_b, turn_b)):
            spec = await self.spec(job_id, viewer)
            found = await turn_request(self.store, job_id, turn, _principal(spec))
            if found is None:
                raise NotVisible(f"job {job_id!r} has no research turn {turn}")
            sides.append(found)
        (a, cost_a), (b, cost_b) = sides
        return diff_manifests(a, b, jobs=(job_a, job_b), cost_a=cost_a, cost_b=cost_b)

    async def decide(self, job_id: str, viewer: str, decision: jobs.Decision, *,
                     key: Ed25519PrivateKey, draft_revision: int, draft_hash: str,
                     destination: str, comments: list[str]) -> ReviewResult:
        """Sign and send ``decision`` through the real review Update."""
        spec = await self.spec(job_id, viewer)
        if not may_decide(spec, viewer):
            raise NotVisible(f"you are not a reviewer of job {job_id!r}")
        return await jobs.review_job(self.client, job_id, decision, reviewer=viewer, key=key,
                                     draft_revision=draft_revision, draft_hash=draft_hash,
                                     destination=destination, comments=comments,
                                     worker_grace=self.worker_grace)


def _blocks_of(manifest: dict[str, Any]) -> tuple[list[DataBlockView], bool]:
    """The data blocks of a manifest's sealed request, if it still hashes to its seal."""
    serialized = manifest.get("serialized_request") or {}
    canonical = serialized.get("canonical_json")
    if not isinstance(canonical, str):
        return [], False
    if "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest() != serialized.get(
            "hash"):
        return [], False
    try:
        payload = json.loads(canonical)
    except ValueError:
        return [], False
    return request_blocks(payload if isinstance(payload, dict) else {}), True


def _input_field(payloads: Any, name: str) -> str | None:
    """``name`` from an activity's JSON input (the stage of a shared activity)."""
    for payload in payloads:
        try:
            value = json.loads(payload.data).get(name)
        except (ValueError, AttributeError):
            return None
        return value if isinstance(value, str) else None
    return None


__all__ = ["ConsoleBackend", "DraftReview", "DraftUnavailable", "JobDetail", "NotVisible",
           "listed", "may_decide", "status_of"]
