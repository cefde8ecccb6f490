"""Publishing: re-verify the approval, write the article atomically, keep one receipt.

The workflow already validated the review, but publishing is the irreversible step, so this
activity re-reads the stored review decision and checks it binds exactly this draft (id,
revision, content hash) and this destination, came from an allowed reviewer who is not the
job's principal, and says ``approve``. Anything else raises ``PublishRefused`` (never
retried). The article goes to ``<destination>/<job_id>.md`` through a temp file and
``os.replace``, so a reader never sees half a file and a retry after a crash overwrites the
same path with the same bytes: one copy, one receipt (``put_receipt`` is idempotent).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from activities.runtime import ActivityRuntime, pause_point, principal_of, scope_of
from contracts.activity_messages import PublishInput, PublishResult
from contracts.errors import PublishRefused
from contracts.job_spec import JobSpec


def receipt_key(spec: JobSpec, inp: PublishInput) -> str:
    return f"{spec.job_id}.publish.{inp.draft.content_hash.removeprefix('sha256:')[:32]}"


def article_path(spec: JobSpec) -> Path:
    return Path(spec.destination) / f"{spec.job_id}.md"


def _verify(spec: JobSpec, inp: PublishInput, review_rec: Any, decision: dict[str, Any]) -> None:
    if review_rec.content_hash != inp.review.content_hash:
        raise PublishRefused("stored review decision does not match the reference the job holds")
    if decision.get("decision") != "approve":
        raise PublishRefused(f"review decision is {decision.get('decision')!r}, not approve")
    bound = decision.get("draft") or {}
    for field in ("artifact_id", "revision", "content_hash"):
        if bound.get(field) != getattr(inp.draft, field):
            raise PublishRefused(f"review decision binds draft {field} {bound.get(field)!r}, "
                                 f"publishing {getattr(inp.draft, field)!r}")
    if decision.get("destination") != spec.destination:
        raise PublishRefused(f"review decision binds destination {decision.get('destination')!r}"
                             f", the job publishes to {spec.destination!r}")
    reviewer = decision.get("reviewer")
    if reviewer == spec.principal.principal_id or reviewer not in spec.review.reviewers:
        raise PublishRefused(f"reviewer {reviewer!r} may not approve this job")
    if review_rec.writer != reviewer:
        raise PublishRefused(f"review decision was written by {review_rec.writer!r}, "
                             f"not by the reviewer {reviewer!r}")


def _write_atomically(path: Path, data: bytes) -> None:
    """Temp file in the same directory, fsync, ``os.replace``, fsync the directory.

    A temp file is never left behind: a failed attempt removes its own, and a successful
    one sweeps those of attempts killed between their write and their replace, so the
    destination holds the article once and no second (temp) copy of it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with open(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        stale.unlink(missing_ok=True)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


async def publish(runtime: ActivityRuntime, inp: PublishInput) -> PublishResult:
    store = await runtime.store()
    spec = await runtime.spec_of(inp.job)
    principal = principal_of(spec)
    key = receipt_key(spec, inp)
    existing = await store.get_receipt(key, principal=principal)
    if existing is not None:
        return PublishResult.model_validate(existing)
    review_rec, review_body = await store.get(inp.review.kind, inp.review.artifact_id,
                                              principal=principal, revision=inp.review.revision)
    decision = json.loads(review_body)
    _verify(spec, inp, review_rec, decision)
    draft_rec, draft_body = await store.get(inp.draft.kind, inp.draft.artifact_id,
                                            principal=principal, revision=inp.draft.revision)
    if draft_rec.content_hash != inp.draft.content_hash:
        raise PublishRefused("stored draft does not match the approved content hash")
    header = (f"<!-- pressroom job={spec.job_id} draft={inp.draft.artifact_id}"
              f"@{inp.draft.revision} {inp.draft.content_hash} "
              f"review={decision['decision_id']} -->\n\n")
    data = header.encode("utf-8") + draft_body
    path = article_path(spec)
    _write_atomically(path, data)
    await pause_point("publish_after_write")
    body = PublishResult(
        receipt_key=key, destination=spec.destination, location=str(path),
        content_hash="sha256:" + hashlib.sha256(data).hexdigest(),
        review_decision_id=decision["decision_id"],
        published_at=datetime.now(UTC).isoformat(),
    )
    stored = await store.put_receipt(key, body=body.model_dump(mode="json"), scope=scope_of(spec))
    return PublishResult.model_validate(stored)
