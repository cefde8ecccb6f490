"""Builds and runs the Temporal worker: the workflow, the activities and the data converter.

``python worker.py`` (or ``pressroom worker``) joins the cluster named by the environment
(``PRESSROOM_TEMPORAL_ADDRESS``, ``PRESSROOM_TEMPORAL_NAMESPACE``, ``PRESSROOM_TASK_QUEUE``,
``PRESSROOM_STORE_URL``, ``PRESSROOM_HELPER_PROCESSES``) or by flags, and runs until
SIGINT/SIGTERM. Crash tests start it as a separate process and SIGKILL it.

Context assembly (and a draft by a CPU-bound provider such as ``extractive``) runs in
helper processes (``activities.offload``): one by default on a machine with more than one
core, none on a single core (a helper there only adds hand-offs); ``--helper-processes 0``
keeps them in the worker process.

This module wires the parts: ``build_runtime`` builds the helper pool and hands it to the
``ActivityRuntime`` the activities share, so neither of those two modules imports the
other's builder (``offload`` does not import ``runtime`` at all).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import signal
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.service import TLSConfig
from temporalio.worker import Worker

from activities.offload import HelperPool
from activities.registry import build_activities
from activities.runtime import ActivityRuntime
from contracts.errors import JobError
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import (
    DATA_CONVERTER,
    WORKFLOW_FAILURE_EXCEPTION_TYPES,
    WORKFLOW_RUNNER,
    address_from_env,
    namespace_from_env,
    task_queue_from_env,
)


async def connect(address: str | None = None, namespace: str | None = None, *,
                  tls_cert: str | None = None, tls_key: str | None = None,
                  tls_ca: str | None = None) -> Client:
    """A client with Pressroom's data converter (TLS when a cert, key or CA is given).

    A client certificate and its key go together: one without the other is refused here
    (a lone key used to be ignored, silently connecting without TLS).
    """
    tls: bool | TLSConfig = False
    if bool(tls_cert) != bool(tls_key):
        raise JobError("--tls-cert and --tls-key go together: give both or neither")
    if tls_cert or tls_ca:
        def read(path: str | None) -> bytes | None:
            if not path:
                return None
            try:
                return Path(path).read_bytes()
            except OSError as exc:
                raise JobError(f"cannot read TLS file {path}: {exc.strerror or exc}") from None

        tls = TLSConfig(client_cert=read(tls_cert), client_private_key=read(tls_key),
                        server_root_ca_cert=read(tls_ca))
    return await Client.connect(address or address_from_env(),
                                namespace=namespace or namespace_from_env(),
                                data_converter=DATA_CONVERTER, tls=tls)


def build_worker(client: Client, runtime: ActivityRuntime, *, task_queue: str | None = None,
                 max_concurrent_activities: int = 100, **extra: Any) -> Worker:
    """The Pressroom worker on ``task_queue`` (default from the environment)."""
    return Worker(
        client,
        task_queue=task_queue or task_queue_from_env(),
        workflows=[ResearchJobWorkflow],
        activities=build_activities(runtime),
        workflow_runner=WORKFLOW_RUNNER,
        workflow_failure_exception_types=list(WORKFLOW_FAILURE_EXCEPTION_TYPES),
        max_concurrent_activities=max_concurrent_activities,
        graceful_shutdown_timeout=timedelta(seconds=5),
        **extra,
    )


HELPERS_ENV = "PRESSROOM_HELPER_PROCESSES"


def _helper_count(raw: str) -> int:
    """A helper count as typed; ``ValueError`` naming what is wrong."""
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"not a whole number: {raw!r}") from None
    if value < 0:
        raise ValueError(f"must be 0 or more, got {value}")
    return value


def default_helper_processes() -> int:
    """``$PRESSROOM_HELPER_PROCESSES``, else 1 with two or more cores, else 0."""
    raw = os.environ.get(HELPERS_ENV, "").strip()
    if not raw:
        return 1 if (os.cpu_count() or 1) >= 2 else 0
    try:
        return _helper_count(raw)
    except ValueError as exc:
        raise JobError(f"{HELPERS_ENV}: {exc}") from None


def build_helper_pool(store_url: str | None, processes: int) -> HelperPool:
    """``processes`` helper processes, each with its own ``ActivityRuntime`` on ``store_url``."""
    return HelperPool(functools.partial(ActivityRuntime, store_url), processes)


def build_runtime(store_url: str | None, *, helper_processes: int = 0) -> ActivityRuntime:
    """The runtime the activities share; with ``helper_processes`` > 0 it gets a helper pool
    of that size (started now, closed with the runtime), with 0 none."""
    helpers = build_helper_pool(store_url, helper_processes) if helper_processes else None
    return ActivityRuntime(store_url, helpers=helpers)


async def run_worker(address: str | None = None, namespace: str | None = None, *,
                     task_queue: str | None = None, store_url: str | None = None,
                     tls_cert: str | None = None, tls_key: str | None = None,
                     tls_ca: str | None = None, ready: asyncio.Event | None = None,
                     stop: asyncio.Event | None = None,
                     helper_processes: int | None = None) -> None:
    """Run a worker until ``stop`` is set or SIGINT/SIGTERM arrives."""
    helpers = default_helper_processes() if helper_processes is None else helper_processes
    if helpers < 0:
        raise JobError(f"helper processes must be 0 or more, got {helpers}")
    client = await connect(address, namespace, tls_cert=tls_cert, tls_key=tls_key, tls_ca=tls_ca)
    runtime = build_runtime(store_url or os.environ.get("PRESSROOM_STORE_URL") or None,
                            helper_processes=helpers)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread
            pass
    try:
        async with build_worker(client, runtime, task_queue=task_queue):
            if ready is not None:
                ready.set()
            await stop.wait()
    finally:
        await runtime.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run a Pressroom worker.")
    parser.add_argument("--address", default=None)
    parser.add_argument("--namespace", default=None)
    parser.add_argument("--task-queue", default=None)
    parser.add_argument("--store-url", default=None)
    parser.add_argument("--helper-processes", type=_count, default=None,
                        help="processes that run context assembly (default: "
                             f"${HELPERS_ENV}, else 1 on a multi-core machine)")
    args = parser.parse_args(argv)
    print(f"pressroom worker: {args.address or address_from_env()} "
          f"queue={args.task_queue or task_queue_from_env()}", flush=True)
    try:
        asyncio.run(run_worker(args.address, args.namespace, task_queue=args.task_queue,
                               store_url=args.store_url,
                               helper_processes=args.helper_processes))
    except JobError as exc:  # one clear line, like the pressroom CLI
        parser.exit(2, f"pressroom worker: {exc}\n")


def _count(raw: str) -> int:
    try:
        return _helper_count(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


if __name__ == "__main__":
    main()
