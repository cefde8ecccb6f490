"""Helper processes that run whole CPU-bound activity bodies off the worker's GIL.

Why this exists: a worker is one Python process, and its workflow activations, payload
conversion, heartbeats and every activity body share one interpreter lock. Context
assembly is pure CPU (admission, ranking, token counting, sealing a manifest of a few
hundred entries): measured at ≈ 80 ms of a job's ≈ 125 ms of activity CPU on the bundled
example job; a draft by the offline extractive provider is another ≈ 15 ms. Run in a
thread they still hold the worker's lock; run here they use another core while the worker
keeps serving Temporal.

What crosses the process boundary is only the activity's input and its small result, as
the JSON of their pydantic models (the same contract Temporal itself carries). The helper
builds its own activity runtime with the factory the worker hands the pool (an
``ActivityRuntime`` on the same store URL; this module does not import ``runtime``, which
holds the pool, so the dependency points one way) and loads the step's candidates itself,
so no request, evidence or manifest is ever pickled — shipping those to a helper
(the engine alone in a process pool) was measured and cost about what it saved.

Choices, and why:

* ``spawn`` start method: forking a process that runs Temporal's Rust threads and an
  asyncio loop is unsafe; a spawned helper imports the activity modules fresh.
* A helper dies with its worker: on Linux it asks for ``SIGKILL`` when its parent exits
  (``PR_SET_PDEATHSIG``), and everywhere a watchdog thread exits when the parent's pid
  changes. A SIGKILLed worker (the crash tests, one of them paused inside a helper's
  draft) therefore leaves no helper running an orphaned activity; the server retries it
  on another worker.
* Failures keep their meaning: an exception in a helper comes back as the
  ``ApplicationError`` Temporal would have reported in-process (same ``type`` name,
  message and ``non_retryable`` flag, a permanent error in its chain classified as the
  worker's ``activities.error_classes`` would), because arbitrary exception classes do not
  survive pickling reliably.
* Helpers are started and imported at pool creation (a warm-up call), not by the first
  job's first step.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import importlib
import logging
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import telemetry
from context import redact_secrets
from contracts.failures import classify

R = TypeVar("R", bound=BaseModel)

#: Activity bodies a helper may run: activity name -> (module, function, input model); an
#: allow-list. ``draft`` and ``decide`` only go to a helper with a CPU-bound provider (the registry
#: decides): a helper runs one call at a time, and a remote model's seconds of waiting
#: would hold it.
_BODIES = {
    "assemble_context": ("activities.context_activity", "assemble_context",
                         "AssembleContextInput"),
    "draft": ("activities.draft", "draft", "DraftInput"),
    "decide": ("activities.decide", "decide", "DecideInput"),
}
OFFLOADABLE = frozenset(_BODIES)
_PR_SET_PDEATHSIG = 1

_log = logging.getLogger(__name__)
_runtime: Any = None
_runner: asyncio.Runner | None = None


def _die_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="pressroom-parent-watch", daemon=True).start()


def _init_helper(pickled_make_runtime: bytes, parent: int) -> None:
    """Runs once in each helper process.

    The runtime factory arrives pickled and is unpickled only here, after SIGINT is
    ignored: unpickling it imports the runtime and the store (a second or more), and a
    Ctrl-C in that window must not kill the helper either.
    """
    global _runtime, _runner
    # Ctrl-C in a terminal signals the whole process group: the worker shuts down
    # gracefully and closes its helpers itself; a helper must not die mid-call (or print
    # a KeyboardInterrupt traceback) on its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Likewise SIGTERM, which a service manager may send to the whole group: the worker
    # drains first and then closes its helpers (``close``).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _die_with_parent(parent)
    _runtime = pickle.loads(pickled_make_runtime)()
    _runner = asyncio.Runner()


def _body(name: str) -> tuple[Callable[[Any, Any], Coroutine[Any, Any, BaseModel]],
                             type[BaseModel]]:
    if name not in _BODIES:
        raise ValueError(f"activity {name!r} cannot run in a helper process")
    module, function, input_model = _BODIES[name]
    messages = importlib.import_module("contracts.activity_messages")
    return (getattr(importlib.import_module(module), function),
            getattr(messages, input_model))


def _warm() -> None:
    """Import what a call needs, so the first step does not pay for it."""
    for name in _BODIES:
        _body(name)


def _call_observed(name: str,
                   payload: str) -> tuple[bool, str | dict[str, Any], list[dict[str, Any]]]:
    """Runs in a helper: ``_call`` and the body's telemetry observations, which the worker
    records in the activity's context (``activities.telemetry``)."""
    telemetry.drain()  # nothing left over from a call that died half-way
    ok, out = _call(name, payload)
    return ok, out, telemetry.drain()


def _call(name: str, payload: str) -> tuple[bool, str | dict[str, Any]]:
    """Runs in a helper: one activity body; returns (ok, result JSON | error fields)."""
    assert _runner is not None
    try:
        fn, input_type = _body(name)
        result: BaseModel = _runner.run(
            fn(_runtime, input_type.model_validate_json(payload)))
        return True, result.model_dump_json()
    except Exception as exc:  # re-raised in the worker as the same failure (docstring)
        # a permanent error anywhere in the chain is marked here, where the chain still
        # exists (contracts.failures; the worker's interceptor sees only what comes back)
        exc = classify(exc) or exc
        return False, {
            "type": exc.type if isinstance(exc, ApplicationError) and exc.type
            else type(exc).__name__,
            # Temporal records the message in workflow history; an error quoting external
            # content (a clone URL with its token) is redacted first
            # an ApplicationError's str() is "<type>: <message>": its message alone, or the
            # worker's re-raise would name the type twice
            "message": redact_secrets(exc.message if isinstance(exc, ApplicationError)
                                      else str(exc)) or type(exc).__name__,
            "non_retryable": bool(getattr(exc, "non_retryable", False)),
        }


class HelperPool:
    """``processes`` helper processes running allow-listed activity bodies.

    ``make_runtime`` builds, in each helper, the runtime the bodies run with (it is pickled
    to the helper, so a module-level class or a ``functools.partial`` of one).
    """

    def __init__(self, make_runtime: Callable[[], Any], processes: int) -> None:
        if processes < 1:
            raise ValueError(f"helper processes must be at least 1, got {processes}")
        self.processes, self._make_runtime = processes, make_runtime
        self._pool = self._start()

    def _start(self) -> ProcessPoolExecutor:
        pool = ProcessPoolExecutor(
            max_workers=self.processes, mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_helper,
            initargs=(pickle.dumps(self._make_runtime), os.getpid()))
        # Start every helper now; each imports the activity modules while the worker
        # connects, instead of during the first job's first step.
        for _ in range(self.processes):
            pool.submit(_warm)
        return pool

    async def run(self, name: str, inp: BaseModel, result_type: type[R]) -> R:
        if name not in OFFLOADABLE:
            raise ValueError(f"activity {name!r} cannot run in a helper process")
        loop, pool = asyncio.get_running_loop(), self._pool
        try:
            ok, out, observed = await loop.run_in_executor(pool, _call_observed, name,
                                                           inp.model_dump_json())
        except BrokenProcessPool as exc:
            # A helper died (killed, out of memory). Temporal's worker treats a broken
            # executor as fatal for the whole worker; here it is one failed attempt, retried
            # on a fresh pool, like any activity whose process went away.
            if self._pool is pool:
                activity.logger.error("a %s helper process died (%s); starting a fresh pool",
                                      name, exc)
                self._pool = self._start()
                pool.shutdown(wait=False, cancel_futures=True)
            raise ApplicationError(f"helper process for {name} died: {exc}",
                                   type="HelperProcessDied") from None
        telemetry.record(observed)  # in this activity's context: its meter, its span
        if ok:
            assert isinstance(out, str)
            return result_type.model_validate_json(out)
        assert isinstance(out, dict)
        raise ApplicationError(out["message"], type=out["type"],
                               non_retryable=out["non_retryable"])

    def close(self, timeout: float = 5.0) -> None:
        """Stop the helpers: idle ones exit at once; one still busy after ``timeout``
        seconds (running an attempt its worker already handed back while draining, or
        paused by a test hook) is killed, as if its worker had been."""
        procs = list((self._pool._processes or {}).values())  # gone after shutdown()
        self._pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + timeout
        for proc in procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in procs:
            if proc.is_alive():
                _log.warning("helper process %s still busy after %g s; killing it",
                             proc.pid, timeout)
                proc.kill()
                proc.join(5)


__all__ = ["OFFLOADABLE", "HelperPool"]
