"""``pressroom doctor``: connect to what the settings name and say what was found.

One ``Check`` per line: the Temporal connection options (``client.connection``), the
server reachable, the namespace there, Pressroom's search attributes registered
(``client.visibility_admin``), a worker polling the task queue, the artifact store
reachable and its schema at the shipped head (``artifacts.migrate``), the attestation key
file. Each check is bounded by ``per_check`` seconds and all of them by ``deadline``; a
check that cannot run because an earlier one failed is ``skip`` (not a failure of its
own). ``fail`` is a failure (the command exits non-zero), ``warn`` is worth knowing but
not one (e.g. revisions unsigned because no attestation key is configured).

Nothing here changes anything: no search attribute is registered, no migration runs, no
SQLite file is created.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import (
    DescribeNamespaceRequest,
    DescribeTaskQueueRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from client.connection import Target, TlsFlags, connect_target, resolve
from client.visibility_admin import missing_search_attributes
from contracts.errors import JobError
from settings import ATTESTATION_KEYS, Settings
from workflows.visibility import create_command

__all__ = ["Check", "run_doctor"]

Outcome = Literal["ok", "warn", "fail", "skip"]


@dataclass(frozen=True)
class Check:
    name: str
    outcome: Outcome
    detail: str

    def line(self) -> str:
        return f"{self.outcome:<4}  {self.name:<18} {self.detail}"


class _Failed(Exception):
    """A check's failure: its message is the line's detail."""


class _Warn(Exception):
    """A check's warning: its message is the line's detail."""


async def run_doctor(settings: Settings, *, address: str | None = None,
                     namespace: str | None = None, task_queue: str | None = None,
                     store_url: str | None = None, tls: TlsFlags | None = None,
                     per_check: float = 5.0, deadline: float = 30.0,
                     report: Callable[[Check], None] | None = None) -> list[Check]:
    """Run every check in order; ``report`` sees each as it finishes (the CLI prints it)."""
    end = time.monotonic() + deadline
    checks: list[Check] = []
    queue = task_queue or settings.task_queue

    async def step(name: str, body: Callable[[], Awaitable[str]], *,
                   needs: bool = True) -> bool:
        remaining = end - time.monotonic()
        if not needs:
            check = Check(name, "skip", "not checked: an earlier check failed")
        elif remaining <= 0:
            check = Check(name, "fail", f"not checked: the {deadline:g} s deadline passed")
        else:
            bound = min(per_check, remaining)
            try:
                check = Check(name, "ok", await asyncio.wait_for(body(), timeout=bound))
            except TimeoutError:
                check = Check(name, "fail", f"no answer within {bound:.3g} s")
            except _Warn as exc:
                check = Check(name, "warn", str(exc))
            except (_Failed, JobError) as exc:
                check = Check(name, "fail", str(exc))
            except RPCError as exc:
                check = Check(name, "fail", _rpc(exc))
            except Exception as exc:  # an unexpected error is still one line
                check = Check(name, "fail", f"{type(exc).__name__}: {_first_line(exc)}")
        checks.append(check)
        if report is not None:
            report(check)
        return check.outcome in ("ok", "warn")

    target: Target | None = None
    client: Client | None = None

    async def options() -> str:
        nonlocal target
        target = resolve(settings, address=address, namespace=namespace, tls=tls)
        return target.describe()

    async def reach() -> str:
        nonlocal client
        assert target is not None
        started = time.monotonic()
        client = await connect_target(target, timeout=per_check, check_namespace=False)
        return f"{target.address} answered in {time.monotonic() - started:.2f} s"

    async def namespace_exists() -> str:
        assert client is not None and target is not None
        try:
            await client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace=target.namespace))
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise _Failed(f"namespace {target.namespace!r} does not exist on "
                              f"{target.address}") from None
            if exc.status == RPCStatusCode.PERMISSION_DENIED:
                raise _Failed(f"not allowed to use namespace {target.namespace!r} on "
                              f"{target.address} (check the API key or client "
                              "certificate)") from None
            raise
        return f"namespace {target.namespace!r} exists"

    async def attributes() -> str:
        assert client is not None and target is not None
        try:
            missing = await missing_search_attributes(client, target.namespace)
        except RPCError as exc:
            if exc.status in (RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNIMPLEMENTED):
                raise _Warn("cannot list search attributes here (no operator access); "
                            "make sure they exist: "
                            f"{create_command(None, target.namespace)}") from None
            raise
        if missing:
            raise _Failed(f"missing {', '.join(missing)}: start a worker (it registers "
                          f"them) or run {create_command(missing, target.namespace)}")
        return "Pressroom's search attributes are registered"

    async def poller() -> str:
        assert client is not None and target is not None
        resp = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
            namespace=target.namespace, task_queue=TaskQueue(name=queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
        if not resp.pollers:
            raise _Failed(f"no worker polls task queue {queue!r}: start `pressroom worker`")
        return f"{len(resp.pollers)} worker(s) poll task queue {queue!r}"

    url = store_url or settings.store_url
    schema_note: list[str] = []

    async def store() -> str:
        from artifacts.database import connect, redact
        from artifacts.migrate import current_revision, head_revision, is_known_revision

        sqlite = url.startswith("sqlite") and ":///" in url
        if sqlite:
            path = Path(url.split(":///", 1)[1].split("?", 1)[0])
            if not path.exists():
                schema_note.append(f"no SQLite store at {path} yet: it is created (at the "
                                   "head schema) on first use")
                return f"{redact(url)}: not created yet"
        db = await connect(url)
        try:
            current = await current_revision(db)
        finally:
            await db.dispose()
        head = head_revision()
        if current == head:
            schema_note.append(f"at the head schema {head}")
        elif current is not None and not is_known_revision(current):
            schema_note.append(f"!schema {current} is unknown to this Pressroom (newer?); "
                               f"it needs {head}")
        elif sqlite:
            schema_note.append(f"schema {current or 'empty'}; migrated to {head} on first "
                               "use")
        else:
            schema_note.append(f"!schema {current or 'empty'}, this Pressroom needs {head}: "
                               "run `pressroom db upgrade`")
        return f"{redact(url)} reachable"

    async def schema() -> str:
        note = schema_note[0]
        if note.startswith("!"):
            raise _Failed(note[1:])
        return note

    async def attestation() -> str:
        from artifacts.attestation import AttestationKeyError, load_keyring

        if settings.attestation_keys is None:
            raise _Warn(f"no attestation key ({ATTESTATION_KEYS} unset): revisions are "
                        "written and read unsigned")
        try:
            ring = load_keyring(settings.attestation_keys)
        except AttestationKeyError as exc:
            raise _Failed(f"{ATTESTATION_KEYS}: {exc}") from None
        return (f"{settings.attestation_keys}: {len(ring.key_ids)} key(s), signing with "
                f"{ring.key_ids[0]!r}")

    try:
        configured = await step("temporal config", options)
        reached = await step("temporal server", reach, needs=configured)
        known = await step("namespace", namespace_exists, needs=reached)
        await step("search attributes", attributes, needs=known)
        await step("worker", poller, needs=known)
    finally:
        client = None  # the SDK's client has no close; drop it
    stored = await step("artifact store", store)
    await step("store schema", schema, needs=stored)
    await step("attestation key", attestation)
    return checks


def _rpc(exc: RPCError) -> str:
    status = exc.status.name if exc.status else "error"
    return f"{status}: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__
