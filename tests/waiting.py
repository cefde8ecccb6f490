"""Waiting in tests: on an observable condition, with a deadline — never on time itself.

A sleep that *is* the synchronization ("give the worker a second") is a flake on a slow
machine and wasted time on a fast one. Wait instead for what the sleep hoped for: a
readiness file, a log line, a status query, a process state, with a deadline that fails
the test with ``what`` in the message.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar, overload

T = TypeVar("T")


# The value returned is truthy, so never None: a condition answering ``X | None`` gives ``X``.
# The async form comes first: a coroutine function is also a callable returning a value.
@overload
async def wait_for(condition: Callable[[], Awaitable[T | None]], deadline: float, what: str, *,
                   interval: float = ...) -> T: ...
@overload
async def wait_for(condition: Callable[[], T | None], deadline: float, what: str, *,
                   interval: float = ...) -> T: ...
async def wait_for(condition: Callable[[], object], deadline: float, what: str, *,
                   interval: float = 0.1) -> object:
    """Poll ``condition`` (sync or async) until it returns something truthy, and return it.

    ``deadline``: seconds from now; past it the test fails with "``what`` not within …"
    and the last exception the condition raised, if any (a condition may raise while the
    thing it watches is not there yet — a server not answering, a file half written).
    """
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    last_error: BaseException | None = None
    while True:
        try:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            last_error = None
        except AssertionError:
            raise
        except Exception as exc:  # the condition's subject is not there yet
            last_error = exc
        if loop.time() >= end:
            suffix = f" (last error: {last_error!r})" if last_error is not None else ""
            raise AssertionError(f"{what}: not within {deadline:g} s{suffix}")
        await asyncio.sleep(interval)


def signal_ignored(pid: int, signum: int) -> bool:
    """Whether process ``pid`` ignores ``signum`` (its ``SigIgn`` mask in ``/proc``)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signum - 1)))
    return False
