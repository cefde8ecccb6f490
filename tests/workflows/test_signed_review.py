"""Reviewers who prove who they are: every attack on the review, resolve and cancel paths.

Each decision travels the real way — signed on the client (``client.jobs``), sent as a
Temporal Update to a real worker on the dev server, verified in the workflow's validator —
and each refusal is checked to have recorded nothing (no Update event in history, no review
decision in the SQLite store, no article). Keys are deterministic test keys
(``tests.workflows.jobkit.reviewer_key``); nothing is faked.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError

from activities.publish import _verify_signature
from activities.runtime import ActivityRuntime, principal_of
from cli.reviewer_keys import ReviewerKeyError, signing_key
from client import jobs
from client.errors import CommandRefused, ReviewRejected
from client.jobs import Decision
from contracts.approval import approval_problem
from contracts.errors import JobSpecError, PublishRefused
from contracts.job_spec import JobSpec, parse_job_spec
from contracts.signing import SignatureError, public_key_text, sign, verify
from contracts.workflow_messages import CancelInput, ResolveInput, ReviewInput
from settings import Settings
from tests.workflows.conftest import LOCAL
from tests.workflows.jobkit import (
    job_dict,
    published_files,
    resolve,
    review,
    reviewer_key,
    roots_for,
    running_worker,
    start_job,
    update_events,
    wait_status,
)
from workflows.research_job import ResearchJobWorkflow

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

#: "AGENT-writer" in fullwidth letters: NFKC folds it to the principal's own name
FULLWIDTH_PRINCIPAL = "\uff21\uff27\uff25\uff2e\uff34-writer"


async def _reviews(runtime: ActivityRuntime, spec: JobSpec) -> list[Any]:
    store = await runtime.store()
    return list(await store.history("review_decision", f"{spec.job_id}.review",
                                    principal=principal_of(spec)))


def _decision(spec: JobSpec, status: Any, decision: Decision = "approve", *,
              reviewer: str = "alice", comments: list[str] | None = None,
              first_run_id: str | None = None) -> ReviewInput:
    pending = status.pending_draft
    return ReviewInput(decision=decision,
                       reviewer=reviewer, comments=comments or [],
                       draft_revision=pending.revision, draft_hash=pending.content_hash,
                       destination=spec.destination, first_run_id=first_run_id)


def _signed(inp: ReviewInput, job_id: str, *, signer: str | None = None,
            key_of: str | None = None, now: datetime | None = None) -> ReviewInput:
    who = signer or inp.reviewer
    signature = sign(reviewer_key(key_of or who), "review", job_id, inp.signed_body(),
                     signer=who, now=now)
    return inp.model_copy(update={"signature": signature})


async def _refused(handle: Any, inp: ReviewInput, needle: str) -> None:
    with pytest.raises(WorkflowUpdateFailedError) as err:
        await handle.execute_update(ResearchJobWorkflow.review, inp)
    assert needle in str(err.value.cause), str(err.value.cause)


async def test_forged_unsigned_tampered_stale_and_self_decisions_are_refused(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec()
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        status = await wait_status(handle, {"awaiting_review"})
        approve = _decision(spec, status)
        # unsigned: typing a listed name is not enough
        await _refused(handle, approve, "not signed")
        # forged: alice's name, mallory's key
        await _refused(handle, _signed(approve, spec.job_id, key_of="mallory"),
                       "signing key is not the one listed for 'alice'")
        with pytest.raises(ReviewRejected, match="not the one listed"):
            await review(client, spec.job_id, "approve", reviewer="alice",
                         key=reviewer_key("mallory"))
        # signed by another listed reviewer than the one it names
        await _refused(handle, _signed(approve, spec.job_id, signer="bob"),
                       "names reviewer 'alice' but is signed by 'bob'")
        # tampered after signing: a signed reject turned into an approve
        signed_reject = _signed(_decision(spec, status, "reject"), spec.job_id)
        await _refused(handle, signed_reject.model_copy(update={"decision": "approve"}),
                       "does not verify")
        # bound to another destination than the one signed
        await _refused(handle, _signed(approve, spec.job_id).model_copy(
            update={"destination": spec.destination + "-elsewhere"}), "wrong destination")
        # signed for another job
        await _refused(handle, _signed(approve, "another-job"), "does not verify")
        # signed before the draft existed, or far in the future
        await _refused(handle, _signed(approve, spec.job_id,
                                       now=datetime(2020, 1, 1, tzinfo=UTC)), "stale: signed at")
        await _refused(handle, _signed(approve, spec.job_id,
                                       now=datetime.now(UTC) + timedelta(days=1)),
                       "in the future")
        # the job's own principal, in another case and Unicode form, is still itself
        for alias in ("Agent-Writer", FULLWIDTH_PRINCIPAL):
            await _refused(handle, _signed(_decision(spec, status, reviewer=alias),
                                           spec.job_id), "can never review its own draft")
        # a valid signature that names no first run of the job, or another job's
        await _refused(handle, _signed(approve, spec.job_id),
                       "does not name the job's first run")
        await _refused(handle, _signed(approve.model_copy(
            update={"first_run_id": "0" * 36}), spec.job_id), "signed for an earlier job")
        assert await update_events(handle) == 0
        assert await _reviews(runtime, spec) == []
        # a real request for changes is accepted ...
        first = handle.first_execution_run_id
        changes = _signed(_decision(spec, status, "request_changes", first_run_id=first,
                                    comments=["name the retry limit"]), spec.job_id)
        await handle.execute_update(ResearchJobWorkflow.review, changes)
        second = await wait_status(handle, {"awaiting_review"})
        assert second.pending_draft is not None and status.pending_draft is not None
        assert second.pending_draft.revision == status.pending_draft.revision + 1
        # ... and replaying it (same signature, same nonce) is refused
        await _refused(handle, changes, "stale decision")
        # a listed reviewer's name in another case is that reviewer
        await handle.execute_update(ResearchJobWorkflow.review, _signed(
            _decision(spec, second, reviewer="BOB", first_run_id=first), spec.job_id,
            key_of="bob"))
        result = await handle.result()
    assert result.status == "published"
    assert len(published_files(spec)) == 1
    stored = await _reviews(runtime, spec)
    assert len(stored) == 2


async def test_case_variant_principal_cannot_be_listed_as_reviewer(tmp_path: Any) -> None:
    for alias in ("Agent-Writer", "AGENT-WRITER", FULLWIDTH_PRINCIPAL.lower()):
        data = job_dict(tmp_path, tmp_path, review={"reviewers": [alias, "alice"]})
        with pytest.raises(JobSpecError, match="can never review its own draft"):
            parse_job_spec(data)
    # a name with surrounding whitespace is no store name at all: refused before that check
    with pytest.raises(JobSpecError, match="leading or trailing whitespace"):
        parse_job_spec(job_dict(tmp_path, tmp_path,
                                review={"reviewers": ["AGENT-WRITER ", "alice"]}))
    with pytest.raises(JobSpecError, match="the same name listed twice"):
        parse_job_spec(job_dict(tmp_path, tmp_path, review={"reviewers": ["alice", "Alice"]}))
    with pytest.raises(JobSpecError, match="public key must start with"):
        parse_job_spec(job_dict(tmp_path, tmp_path, review={
            "reviewers": [{"name": "alice", "public_key": "ssh-ed25519 AAAA"}]}))


async def test_verify_refuses_a_seen_nonce_and_another_purpose() -> None:
    body = {"decision": "approve"}
    signature = sign(reviewer_key("alice"), "review", "job-1", body, signer="alice")
    allowed = {"alice": [signature.public_key]}
    assert verify(signature, "review", "job-1", body, allowed=allowed) == "alice"
    with pytest.raises(SignatureError, match="replayed"):
        verify(signature, "review", "job-1", body, allowed=allowed,
               seen_nonces=[signature.nonce])
    # a signed resolution can never stand in for a review (the purpose is signed)
    with pytest.raises(SignatureError, match="does not verify"):
        verify(signature, "resolve", "job-1", body, allowed=allowed)


async def test_publish_re_verifies_the_stored_signed_decision(
        make_spec: Callable[..., JobSpec]) -> None:
    """The publish activity's own check, on decisions as ``record_review`` stores them —
    and the console's verdict on a published decision, which is the same check
    (``contracts.approval``)."""
    spec = make_spec()
    draft = {"artifact_id": f"{spec.job_id}.draft", "revision": 1,
             "content_hash": "sha256:" + "a" * 64}
    signed = _signed(ReviewInput(decision="approve", reviewer="alice", draft_revision=1,
                                 draft_hash=draft["content_hash"], destination=spec.destination),
                     spec.job_id)
    stored: dict[str, Any] = {"decision": "approve", "reviewer": "alice", "draft": draft,
              "destination": spec.destination, "comments": [],
              "signature": signed.signature.model_dump(mode="json") if signed.signature else None}
    _verify_signature(spec, stored)
    assert approval_problem(spec, stored) is None
    for change, needle in (
            ({"signature": None}, "not signed"),
            ({"destination": "/elsewhere"}, "does not verify"),
            ({"draft": {**draft, "content_hash": "sha256:" + "b" * 64}}, "does not verify"),
            ({"comments": ["smuggled"]}, "does not verify")):
        with pytest.raises(PublishRefused, match=needle):
            _verify_signature(spec, {**stored, **change})
        assert needle in (approval_problem(spec, {**stored, **change}) or "")
    forged = _signed(ReviewInput(decision="approve", reviewer="alice", draft_revision=1,
                                 draft_hash=draft["content_hash"], destination=spec.destination),
                     spec.job_id, key_of="mallory")
    assert forged.signature is not None
    with pytest.raises(PublishRefused, match="not the one listed"):
        _verify_signature(spec, {**stored, "signature": forged.signature.model_dump()})


async def test_resolve_and_cancel_must_be_signed_by_a_listed_reviewer_or_operator(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    """A job blocked on its context budget: an unsigned ``resolve`` signal is dropped and
    counted, a forged signed resolution is refused to its sender, the operator's resolution
    unblocks it; then an operator's signed ``cancel`` ends it ``cancelled``, unpublished."""
    spec = make_spec(model={"context_limit": 5000},
                     review={"reviewers": ["alice"], "operators": ["ops"], "timeout": "10m"})
    async with running_worker(client, runtime, task_queue):
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"blocked"})
        raise_limit = ResolveInput(action="raise_budget", context_limit=40_000)
        await handle.signal(ResearchJobWorkflow.resolve, raise_limit)
        with pytest.raises(CommandRefused, match="not a listed signer"):
            await resolve(client, spec.job_id, raise_limit, signer="mallory")
        with pytest.raises(CommandRefused, match="not the one listed"):
            await resolve(client, spec.job_id, raise_limit, signer="ops",
                          key=reviewer_key("mallory"))
        status = await handle.query(ResearchJobWorkflow.status)
        assert status.status == "blocked" and status.refused_commands == 1
        await resolve(client, spec.job_id, raise_limit, signer="ops")
        status = await wait_status(handle, {"awaiting_review", "blocked"})
        assert status.status == "awaiting_review", status.blocked_reason
        # cancel: an unsigned one is refused, an operator's is accepted
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(ResearchJobWorkflow.cancel, CancelInput(reason="x"))
        with pytest.raises(CommandRefused, match="not a listed signer"):
            await jobs.cancel_job(client, spec.job_id, signer="mallory",
                                  key=reviewer_key("mallory"))
        await jobs.cancel_job(client, spec.job_id, signer="ops", key=reviewer_key("ops"),
                              reason="superseded")
        result = await handle.result()
    assert result.status == "cancelled" and result.reason == "cancelled by ops"
    assert published_files(spec) == []
    described = await handle.describe()
    assert described.status is not None and described.status.name == "COMPLETED"


async def test_worker_refuses_a_registered_reviewer_signing_with_another_key(
        client: Any, store_url: str, task_queue: str, tmp_path: Path,
        make_spec: Callable[..., JobSpec]) -> None:
    """A job author lists the registered reviewer ``alice`` with a key of their own and
    approves with it. The workflow accepts it (the key is the job's), but the worker's
    publish checks the operator's registry and refuses (once: ``PublishRefused`` is
    permanent); the job waits for an operator, who abandons it: it fails, nothing is
    written."""
    home = tmp_path / "home"
    (home / "reviewers").mkdir(parents=True)
    (home / "reviewers" / "alice.pub").write_text(
        public_key_text(reviewer_key("the-real-alice")) + "\n", encoding="ascii")
    spec = make_spec()  # alice listed with the job author's key for her
    runtime = ActivityRuntime(store_url, locations={**LOCAL, "PRESSROOM_HOME": str(home)},
                              roots=roots_for(tmp_path))
    try:
        async with running_worker(client, runtime, task_queue):
            handle = await start_job(client, spec, task_queue)
            await wait_status(handle, {"awaiting_review"})
            await review(client, spec.job_id, "approve", reviewer="alice")
            status = await wait_status(handle, {"needs_operator"})
            assert "other than the one registered" in (status.blocked_reason or "")
            await resolve(client, spec.job_id, ResolveInput(action="abandon"), signer="bob")
            with pytest.raises(WorkflowFailureError) as err:
                await handle.result()
    finally:
        await runtime.close()
    assert "other than the one registered" in str(err.value.cause)
    assert published_files(spec) == []


async def test_a_key_path_that_is_a_folder_or_a_fifo_is_refused_without_hanging(
        tmp_path: Path) -> None:
    """A folder or a FIFO put where a key is expected: one clear error, no hang."""
    settings = Settings(home=tmp_path)
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    for path in (tmp_path / "folder", tmp_path / "fifo"):
        with pytest.raises(ReviewerKeyError, match="not a regular file"):
            signing_key(settings, "alice", path)
