"""What every Pressroom activity shares: the store handle, identities, heartbeats, test hooks.

``ActivityRuntime`` opens the artifact store once per worker process (lazily, on the first
activity; see ``store_access`` for the worker's write and read policies) so activities
stay cheap. ``heartbeating`` keeps a running activity's heartbeat
alive, which is how the server notices a dead worker within ``heartbeat_timeout`` instead of
waiting for the whole start-to-close timeout. ``put_once`` makes a write safe to retry.

Test hook (documented here because crash tests rely on it): when the environment variable
``PRESSROOM_TEST_PAUSE_AT`` names a pause point (comma-separated), the activity reaching it
writes the marker file ``$PRESSROOM_TEST_PAUSE_DIR/<point>.reached`` (holding the pid of
the process that paused) and then waits, still heartbeating, until the process is killed
or the test writes ``<point>.release`` beside the marker (a released point lets every later
arrival through, each leaving ``<point>.passed``). A test SIGKILLs the worker process once
the marker exists, starts a fresh worker without the variable, and checks the job
completes exactly once; or it injects a fault (a server or database restart, a read-only
or full disk) and releases the point. The hook does nothing when the variable is unset.
The points: ``research``, ``decide``, ``run_tool``, ``record_turn``, ``checkpoint_<stage>``
and ``draft`` (each before the activity's work); and for every activity in
``activities.registry``, ``<activity>_before_write`` (its work done, before its first
store or file write) and ``<activity>_after_write`` (after its last one, before it
returns) — plus ``research_between_writes`` and ``record_turn_between_writes`` (after the
first of their writes), and for ``publish`` ``publish_after_write`` (the article written,
its receipt not yet) and ``publish_after_receipt`` (the fault matrix, ``tests/faults``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import os
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

import artifacts
from activities.fail_hook import fail_point
from activities.store_access import WorkerStore
from artifacts import Store
from artifacts.attestation import Keyring
from artifacts.errors import RevisionConflict
from contracts.activity_messages import ArtifactRef, JobRef
from contracts.errors import CarriedStateMismatch
from contracts.job_spec import JobSpec
from contracts.mcp_servers import McpServers
from contracts.model_endpoints import ModelEndpoints
from contracts.path_safety import PathRoots
from contracts.pricing import PriceTable, default_prices
from contracts.web_policy import WebFetchPolicy
from settings import home_from_env

if TYPE_CHECKING:  # the pool is built by the worker and handed in; only its type is named
    from activities.offload import HelperPool

#: Job specs kept per worker; a long-running worker sees an unbounded number of jobs.
SPEC_CACHE_SIZE = 1024
PAUSE_ENV = "PRESSROOM_TEST_PAUSE_AT"
PAUSE_DIR_ENV = "PRESSROOM_TEST_PAUSE_DIR"
#: The failure type of an attempt a draining worker handed back (``heartbeating``).
WORKER_SHUTDOWN = "WorkerShutdown"


class ActivityRuntime:
    """Per-worker shared state: the artifact store, opened on first use.

    ``locations`` is what the placeholders in a job's source locations stand for on this
    worker (``settings.Settings.locations``); acquisitions expand them from it, never from
    the environment. ``roots`` are the folders this worker reads a job's paths from and
    publishes into (``contracts.path_safety``; the worker builds them from its settings);
    without them only Pressroom's own home and fixtures folder are roots. ``helpers``,
    when given, runs CPU-bound bodies (``offload.OFFLOADABLE``) in helper processes;
    ``None`` runs them here. The worker builds the pool (``worker.build_runtime``) and the
    runtime owns it from then on: ``close`` shuts it down. ``attestation``: the operator's
    attestation keys (``settings.Settings.attestation_keys``, loaded by the worker): the
    store signs every revision with them and candidates are checked against them
    (``activities.candidates``); ``None`` writes and reads unsigned revisions.
    ``registered_reviewers_only``: only keys the operator's reviewer registry holds may
    review (``activities.reviewer_registry``), the registry being ``reviewers_dir``
    (``settings.Settings.reviewers_dir``, passed by the worker). ``prices``: the table
    ``decide`` prices each model call with (``contracts.pricing.load_prices`` of
    ``settings.Settings.prices``); ``None``: the shipped defaults. ``endpoints``: the
    model endpoints a job may name in
    ``model.base_url`` (``contracts.model_endpoints``); ``None``: none.
    ``None``: the shipped defaults. ``web_policy``: where live web pages may be fetched
    from (``settings.Settings.web_policy``; ``None``: nowhere).
    """

    def __init__(self, store_url: str, *, locations: Mapping[str, str],
                 roots: PathRoots | None = None,
                 spec_cache_size: int = SPEC_CACHE_SIZE,
                 helpers: HelperPool | None = None,
                 attestation: Keyring | None = None,
                 registered_reviewers_only: bool = False,
                 prices: PriceTable | None = None,
                 endpoints: ModelEndpoints | None = None,
                 web_policy: WebFetchPolicy | None = None,
                 mcp_servers: McpServers | None = None,
                 mcp_environ: Mapping[str, str] | None = None,
                 reviewers_dir: Path | None = None) -> None:
        self.store_url = store_url
        #: the operator's reviewer registry (``contracts.reviewer_registry``): the worker
        #: passes ``Settings.reviewers_dir``; without one, ``reviewers`` under the home
        #: ``locations`` names
        self.reviewers_dir = (reviewers_dir if reviewers_dir is not None
                              else home_from_env(locations) / "reviewers")
        self.endpoints = endpoints or ModelEndpoints()
        #: the operator's rules for live web pages (``contracts.web_policy``); the default
        #: allows no domain, so a worker built without them fetches nothing
        self.web_policy = web_policy or WebFetchPolicy()
        #: one lock per live page being fetched, so one turn's calls fetch it once
        self.web_locks: dict[str, asyncio.Lock] = {}
        self.registered_reviewers_only = registered_reviewers_only
        self.prices = prices or default_prices()
        #: the operator's MCP servers (``contracts.mcp_servers``) and the variables their
        #: ``headers_from_env`` name, as the worker read them at start (docs/mcp.md)
        self.mcp_servers = mcp_servers
        self.mcp_environ: Mapping[str, str] = dict(mcp_environ or {})
        self.attestation = attestation
        self.locations = dict(locations)
        self.roots = roots or PathRoots.default(locations)
        self.helpers = helpers
        self._store: WorkerStore | None = None
        self._lock = asyncio.Lock()
        self._specs: OrderedDict[tuple[str, ...], JobSpec] = OrderedDict()
        self._spec_cache_size = spec_cache_size

    def roots_for(self, spec: JobSpec) -> PathRoots:
        """The roots ``spec``'s paths are used inside: its tenant's own when the operator
        bound tenants to roots, else this worker's (``PathRoots.for_tenant``)."""
        return self.roots.for_tenant(spec.scope.tenant)

    async def spec_of(self, job: JobRef) -> JobSpec:
        """The job spec revision ``job`` names, read once per worker.

        The cache key carries the reader's tenant and project and the revision's identity,
        not only its hash, so a cached spec is only handed to a reader the store itself
        would have shown it to (as in ``store_access.WorkerStore``).
        """
        key = (job.tenant, job.project, job.spec.kind, job.spec.artifact_id,
               str(job.spec.revision), job.spec.content_hash)
        cached = self._specs.get(key)
        if cached is not None:
            self._specs.move_to_end(key)
            return cached
        store = await self.store()
        principal = artifacts.Principal(principal_id=job.principal_id, tenant=job.tenant,
                                        project=job.project)
        rec, body = await store.get(job.spec.kind, job.spec.artifact_id, principal=principal,
                                    revision=job.spec.revision)
        if rec.content_hash != job.spec.content_hash:
            raise artifacts.IntegrityError("job_spec", job.spec.artifact_id, job.spec.revision,
                                           job.spec.content_hash, rec.content_hash)
        spec = JobSpec.model_validate_json(body)
        # the reference must name this job's own spec in its own tenant and project: a
        # made-up reference to another job's spec is never read as this job's
        # (SECURITY.md, "Tenant isolation")
        if (job.spec.kind != "job_spec" or job.spec.artifact_id != job.job_id
                or spec.job_id != job.job_id
                or (spec.scope.tenant, spec.scope.project) != (job.tenant, job.project)):
            raise CarriedStateMismatch(f"job {job.job_id} names spec {job.spec.artifact_id} "
                                       "of another job; not read")
        self._specs[key] = spec
        while len(self._specs) > self._spec_cache_size:
            self._specs.popitem(last=False)
        return spec

    async def store(self) -> Store:
        async with self._lock:
            if self._store is None:
                self._store = WorkerStore(await artifacts.open_store(
                    self.store_url, keyring=self.attestation))
                _freeze_startup_objects()
            return self._store

    async def close(self) -> None:
        async with self._lock:
            if self._store is not None:
                await self._store.close()
                self._store = None
            if self.helpers is not None:
                await asyncio.to_thread(self.helpers.close)
                self.helpers = None


_frozen = False


def _freeze_startup_objects() -> None:
    """Move what the worker holds once it is up (modules, models, the SQLAlchemy engine,
    the tokenizer) out of the cyclic collector's reach, once per process.

    Every full collection otherwise walks those long-lived objects again: measured at
    ≈9 ms of CPU per job (≈50 ms per full collection) on the benchmark's job, which
    allocates enough to trigger one every few jobs. Objects created later are collected
    as usual; only what exists now (after one full collection) is exempted.
    """
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()
        gc.freeze()


def principal_of(spec: JobSpec, principal_id: str | None = None) -> artifacts.Principal:
    return _principal(principal_id or spec.principal.principal_id, spec.scope.tenant,
                      spec.scope.project)


def scope_of(spec: JobSpec) -> artifacts.Scope:
    return _scope(spec.scope.tenant, spec.scope.project, spec.scope.task)


# Principals and scopes are frozen value objects whose every field is validated on
# construction; a job asks for the same few dozens of times, so each is built once.
@functools.lru_cache(maxsize=1024)
def _principal(principal_id: str, tenant: str, project: str) -> artifacts.Principal:
    return artifacts.Principal(principal_id=principal_id, tenant=tenant, project=project)


@functools.lru_cache(maxsize=1024)
def _scope(tenant: str, project: str, task: str) -> artifacts.Scope:
    return artifacts.Scope(tenant=tenant, project=project, task=task)


async def load_json(store: Store, spec: JobSpec, ref: ArtifactRef | None,
                    default: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of the artifact revision ``ref`` names; ``default`` when it is None."""
    if ref is None:
        return default
    _rec, raw = await store.get(ref.kind, ref.artifact_id, principal=principal_of(spec),
                                revision=ref.revision)
    body: dict[str, Any] = json.loads(raw)
    return body


def ref_of(rec: Any) -> ArtifactRef:
    kind = rec.kind.value if hasattr(rec.kind, "value") else str(rec.kind)
    return ArtifactRef(kind=kind, artifact_id=rec.artifact_id, revision=rec.revision,
                       content_hash=rec.content_hash)


def dumps(body: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, so equal content has an equal hash.

    A lone surrogate (``"\\udcff"`` is legal JSON, so a model may send one in a tool
    argument) cannot be UTF-8: such a body is written with every non-ASCII character
    escaped instead, which still reads back as the same strings — never a crash that
    leaves the record unwritten.
    """
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=str)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, sort_keys=True, ensure_ascii=True, separators=(",", ":"),
                          default=str).encode("ascii")


async def put_once(store: Store, kind: str, artifact_id: str, body: bytes, *, spec: JobSpec,
                   trust: str, parent_revision: int | None, write_id: str,
                   principal_id: str | None = None, media_type: str = "application/json",
                   metadata: dict[str, Any] | None = None) -> artifacts.ArtifactRecord:
    """Append a revision; a retry of the same logical write returns the first one.

    ``write_id`` names the logical write (the workflow step that asked for it). If the
    parent moved because an earlier attempt of this very write already landed, that
    revision is the answer; a conflict with anybody else's write is re-raised.
    """
    principal = principal_of(spec, principal_id)
    meta = {**(metadata or {}), "write_id": write_id}
    try:
        return await store.put(kind, artifact_id, body, principal=principal,
                               scope=scope_of(spec), trust=trust,
                               parent_revision=parent_revision, media_type=media_type,
                               metadata=meta)
    except RevisionConflict:
        for rec in reversed(await store.history(kind, artifact_id, principal=principal)):
            if rec.metadata.get("write_id") == write_id:
                return rec
        raise


@contextlib.asynccontextmanager
async def heartbeating() -> AsyncIterator[None]:
    """Heartbeat in the background while the body runs (no-op outside an activity).

    The beats are also how a long activity notices a cancellation the server asks for (the
    SDK delivers it in a heartbeat's answer and cancels the body); a body cancelled because
    its worker is draining (``worker.py``) ends as a retryable ``WorkerShutdown`` failure.
    """
    try:
        info = activity.info()
    except RuntimeError:
        yield
        return
    fail_point(info.activity_type)  # test hook: PRESSROOM_TEST_FAIL_AT (activities/fail_hook.py)
    timeout = info.heartbeat_timeout
    interval = max(0.2, (timeout.total_seconds() / 4) if timeout else 5.0)

    async def beat() -> None:
        # The first beat waits one interval: the server starts the heartbeat clock when the
        # activity starts, so a beat at once only cost every activity an extra RPC (most
        # finish well within one interval); a stuck or paused one still beats in time.
        while True:
            await asyncio.sleep(interval)
            activity.heartbeat()

    task = asyncio.create_task(beat())
    try:
        yield
    except asyncio.CancelledError:
        if activity.is_worker_shutdown():
            # the worker is draining and its grace is over (worker.py): hand the attempt
            # back as a retryable failure, so the server retries it on another worker at
            # once (a bare cancel of an activity nobody asked to cancel is not an outcome
            # the server can act on; it would wait for the heartbeat timeout)
            raise ApplicationError(
                f"{info.activity_type} attempt {info.attempt} handed back: its worker is "
                "shutting down",
                type=WORKER_SHUTDOWN) from None
        raise
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def pause_point(name: str) -> None:
    """The crash-test hook described in the module docstring."""
    points = {p.strip() for p in os.environ.get(PAUSE_ENV, "").split(",") if p.strip()}
    if name not in points:
        return
    marker_dir = Path(os.environ.get(PAUSE_DIR_ENV) or ".")
    marker_dir.mkdir(parents=True, exist_ok=True)
    # written whole (a test reads the pid as soon as the marker exists)
    partial = marker_dir / f".{name}.{os.getpid()}.partial"
    partial.write_text(str(os.getpid()), encoding="utf-8")
    os.replace(partial, marker_dir / f"{name}.reached")
    release = marker_dir / f"{name}.release"
    while not release.exists():  # killed from outside, or released; heartbeats go on
        await asyncio.sleep(0.05)
    (marker_dir / f"{name}.passed").write_text(str(os.getpid()), encoding="utf-8")
