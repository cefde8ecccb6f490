"""Publishing: re-verify the approval, write the article atomically, keep one receipt.

The workflow already validated the review, but publishing is the irreversible step, so this
activity re-reads the stored review decision and checks it binds exactly this draft (id,
revision, content hash) and this destination, came from an allowed reviewer who is not the
job's principal (names compared normalized), carries that reviewer's valid Ed25519
signature over exactly this approval (contracts/signing.py), and says ``approve``. Anything
else raises ``PublishRefused`` (never retried).

Where the article goes: ``<destination>/<job_id>/<job_id>.md`` — a folder per job, so
publishing never replaces a file it did not write (a job id ``README`` next to a
``README.md`` leaves it alone). The destination must resolve inside the worker's publish
roots (``contracts.path_safety``; ``PathOutsideRoots`` otherwise, never retried) and be a
folder or not exist yet; the folders from the root down are opened, and created, without
following a symbolic link (one swapped in after the check fails the write). An existing
``<job_id>.md`` there is replaced only if it is this job's own article (it starts with the
``<!-- pressroom job=<job_id> tenant=<t> project=<p> run=<first run id> `` header every
article carries: a retry after a crash, by this job's own run chain); anything else — another
job's file, or the article of an earlier workflow that used the same job id, in any tenant —
is left untouched and the publication refused (SECURITY.md, "Tenant isolation"). The
receipt is no file: it is the store's ``put_receipt`` record, shown by ``pressroom status``.

The article is written through a temp file beside it and ``os.replace``, so a reader never
sees half a file and a retry after a crash overwrites the same path with the same bytes:
one copy, one receipt (``put_receipt`` is idempotent). It is mode 0644, whatever the
worker's umask: an article is meant to be read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from activities.runtime import ActivityRuntime, pause_point, principal_of, scope_of
from activities.telemetry import emit, now_ns
from contracts import reviewer_registry
from contracts.activity_messages import PublishInput, PublishResult
from contracts.approval import approval_problem
from contracts.errors import PathRefused, PublishRefused
from contracts.job_spec import JobSpec
from contracts.path_safety import (
    ARTICLE_SUFFIX,
    Located,
    PathRoots,
    existing_type,
    locate,
    open_folder,
)
from contracts.path_safety import article_path as path_of_article
from contracts.signing import normalize_name


def receipt_key(spec: JobSpec, inp: PublishInput) -> str:
    return f"{spec.job_id}.publish.{inp.draft.content_hash.removeprefix('sha256:')[:32]}"


#: what a published article's file mode is (not the 0600 of a temp file)
ARTICLE_MODE = 0o644


def article_path(spec: JobSpec) -> Path:
    """Where ``spec``'s article goes, as the spec names it (the receipt holds the resolved
    path): ``<destination>/<job_id>/<job_id>.md``."""
    return path_of_article(spec.destination, spec.job_id)


def article_marker(job_id: str, owner: tuple[str, str, str] | None = None) -> bytes:
    """How every article of ``job_id`` begins (the header ``publish`` writes): with
    ``owner`` (tenant, project, first run id), the marker of exactly that job's run chain,
    so a later workflow reusing the id — in any tenant — never matches it."""
    if owner is None:  # histories recorded before the first run id was carried
        return f"<!-- pressroom job={job_id} ".encode()
    tenant, project, run = owner
    return f"<!-- pressroom job={job_id} tenant={tenant} project={project} run={run} ".encode()


def write_article(destination: str, job_id: str, data: bytes, roots: PathRoots,
                  owner: tuple[str, str, str] | None = None) -> Path:
    """Write ``data`` as ``job_id``'s article under ``destination`` (see the module
    docstring); returns the article's resolved path. ``data`` must begin with
    ``article_marker(job_id, owner)``: an existing article is replaced only when it does
    too."""
    located = locate(destination, roots, "publish", what="destination")
    kind = existing_type(located.real)
    if kind not in ("folder", "missing"):
        raise PathRefused(f"destination {destination} is a {kind}, not a folder")
    folder = Located(located.root, located.real / job_id)
    if roots.is_private(folder.real):
        raise PathRefused(f"destination folder {folder.real} is Pressroom's own state")
    name = f"{job_id}{ARTICLE_SUFFIX}"
    fd = open_folder(folder, what="destination", create=True)
    try:
        _write_atomically(fd, name, data, owner=article_marker(job_id, owner),
                          family=article_marker(job_id))
    finally:
        os.close(fd)
    return folder.real / name


def _verify(spec: JobSpec, inp: PublishInput, review_rec: Any, decision: dict[str, Any]) -> None:
    if review_rec.content_hash != inp.review.content_hash:
        raise PublishRefused("stored review decision does not match the reference the job holds")
    if decision.get("decision") != "approve":
        raise PublishRefused(f"review decision is {decision.get('decision')!r}, not approve")
    bound_run = decision.get("first_run_id")
    if bound_run is not None and inp.first_run_id is not None and bound_run != inp.first_run_id:
        raise PublishRefused(f"review decision was signed for an earlier job with id "
                             f"{spec.job_id} (first run {bound_run}), not this one")
    bound = decision.get("draft") or {}
    for field in ("artifact_id", "revision", "content_hash"):
        if bound.get(field) != getattr(inp.draft, field):
            raise PublishRefused(f"review decision binds draft {field} {bound.get(field)!r}, "
                                 f"publishing {getattr(inp.draft, field)!r}")
    if decision.get("destination") != spec.destination:
        raise PublishRefused(f"review decision binds destination {decision.get('destination')!r}"
                             f", the job publishes to {spec.destination!r}")
    reviewer = decision.get("reviewer")
    listed = {normalize_name(name) for name in spec.review.reviewer_names()}
    if (not isinstance(reviewer, str)
            or normalize_name(reviewer) == normalize_name(spec.principal.principal_id)
            or normalize_name(reviewer) not in listed):
        raise PublishRefused(f"reviewer {reviewer!r} may not approve this job")
    if review_rec.writer != reviewer:
        raise PublishRefused(f"review decision was written by {review_rec.writer!r}, "
                             f"not by the reviewer {reviewer!r}")
    _verify_signature(spec, decision)


def _verify_signature(spec: JobSpec, decision: dict[str, Any]) -> None:
    """The stored decision's signature, checked again against the spec's keys
    (``contracts.approval``: the console shows a reader the same verdict)."""
    problem = approval_problem(spec, decision)
    if problem is not None:
        raise PublishRefused(problem)


def check_registry(registry: Path, reviewer: str, public_key: str, *,
                   required: bool = False) -> None:
    """The worker's own check: a reviewer the operator registered must have signed with the
    registered key. A job author chooses a job's keys; this stops them from listing a
    registered reviewer's name with a key of their own. ``required`` (a worker that
    accepts only registered reviewers, ``activities.reviewer_registry``): a reviewer with
    no entry is refused too. The entry is read through ``contracts.reviewer_registry``
    (a symbolic link refused)."""
    entry = reviewer_registry.entry_path(registry, reviewer)
    try:
        registered = reviewer_registry.read_entry(registry, reviewer)
    except reviewer_registry.RegistryError as exc:
        raise PublishRefused(str(exc)) from None
    if registered is None:
        if required:
            raise PublishRefused(f"reviewer {reviewer!r} is not in the reviewer registry "
                                 f"{registry}; this worker accepts only registered "
                                 "reviewers (--registered-reviewers-only)")
        return
    if registered != public_key:
        raise PublishRefused(f"reviewer {reviewer!r} signed with a key other than the one "
                             f"registered in {entry}")


def _write_atomically(folder: int, name: str, data: bytes, *, owner: bytes,
                      family: bytes = b"") -> None:
    """``name`` in the open folder ``folder``: temp file, fsync, ``os.replace``, fsync the
    folder — all relative to the folder's descriptor, never through a symbolic link.

    An existing ``name`` is replaced only if it begins with ``owner`` (this job's own
    article); anything else is refused and left as it is. A temp file is never left
    behind: a failed attempt removes its own, and a successful one sweeps those of attempts
    killed between their write and their replace, so the folder holds the article once and
    no second (temp) copy of it.
    """
    _refuse_foreign(folder, name, owner, family)
    tmp = f".{name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 ARTICLE_MODE, dir_fd=folder)
    try:
        try:
            os.fchmod(fd, ARTICLE_MODE)  # the umask may have taken bits away
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=folder)
        raise
    for entry in os.listdir(folder):
        if entry.startswith(f".{name}.") and entry.endswith(".tmp"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry, dir_fd=folder)
    os.fsync(folder)


def _refuse_foreign(folder: int, name: str, owner: bytes, family: bytes = b"") -> None:
    """``PublishRefused`` unless ``name`` is absent or a regular file starting ``owner``;
    one starting ``family`` (any article of the job id) says another run wrote it."""
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode):
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=folder)
        try:
            head = os.read(fd, len(owner))
        finally:
            os.close(fd)
        if head == owner:
            return
        if family and head.startswith(family):
            raise PublishRefused(f"{name} was published by another workflow with the same "
                                 "job id (its tenant, project or first run differ); it is left "
                                 "untouched and nothing is published")
    raise PublishRefused(f"{name} already exists in the job's folder and is not this job's "
                         "article; it is left untouched and nothing is published")


async def publish(runtime: ActivityRuntime, inp: PublishInput) -> PublishResult:
    started = now_ns()
    store = await runtime.store()
    spec = await runtime.spec_of(inp.job)
    principal = principal_of(spec)
    key = receipt_key(spec, inp)
    existing = await store.get_receipt(key, principal=principal)
    if existing is not None:
        emit("publish", started, outcome="already_published", job_id=spec.job_id)
        return PublishResult.model_validate(existing)
    review_rec, review_body = await store.get(inp.review.kind, inp.review.artifact_id,
                                              principal=principal, revision=inp.review.revision)
    decision = json.loads(review_body)
    _verify(spec, inp, review_rec, decision)
    check_registry(runtime.reviewers_dir, decision["reviewer"],
                   decision["signature"]["public_key"],
                   required=runtime.registered_reviewers_only)
    draft_rec, draft_body = await store.get(inp.draft.kind, inp.draft.artifact_id,
                                            principal=principal, revision=inp.draft.revision)
    if draft_rec.content_hash != inp.draft.content_hash:
        raise PublishRefused("stored draft does not match the approved content hash")
    owner = ((spec.scope.tenant, spec.scope.project, inp.first_run_id)
             if inp.first_run_id else None)
    header = (article_marker(spec.job_id, owner).decode("utf-8")
              + f"draft={inp.draft.artifact_id}"
              f"@{inp.draft.revision} {inp.draft.content_hash} "
              f"review={decision['decision_id']} -->\n\n")
    data = header.encode("utf-8") + draft_body
    await pause_point("publish_before_write")
    path = write_article(spec.destination, spec.job_id, data, runtime.roots_for(spec), owner)
    await pause_point("publish_after_write")
    body = PublishResult(
        receipt_key=key, destination=spec.destination, location=str(path),
        content_hash="sha256:" + hashlib.sha256(data).hexdigest(),
        review_decision_id=decision["decision_id"],
        published_at=datetime.now(UTC).isoformat(),
    )
    stored = await store.put_receipt(key, body=body.model_dump(mode="json"), scope=scope_of(spec))
    await pause_point("publish_after_receipt")
    emit("publish", started, outcome="published", job_id=spec.job_id)
    return PublishResult.model_validate(stored)
