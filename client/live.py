"""Following a running job: its history long-polled, its status queried on each new event.

Shared by ``pressroom watch`` (``cli.watch``) and the review console's live job page
(``webconsole``'s ``/jobs/{id}/events``). Event-driven: ``history_ticks`` long-polls the
job's history (``fetch_history_events(wait_new_event=True)``) and sets an event on each new
history event; ``follow`` queries the workflow's status only when one arrived, or at most
every ``refresh`` seconds as a bound — never a busy loop — and stops once the job needs a
human or ends (``finished``), or its own deadline passed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator

from temporalio.client import Client

from client import jobs

#: the longest wait between two status queries when no history event arrives
REFRESH_SECONDS = 5.0
#: states that end a watch: a human must act, or the job is over
STOP_STATES = {"awaiting_review", "blocked", "needs_operator"}
#: the shortest gap between two status queries: a burst of history events (one turn's
#: activities) costs one query, not one per event
MIN_GAP_SECONDS = 0.25


def finished(view: jobs.JobView) -> bool:
    """Whether a watch ends at ``view``: a human must act, or the job ended. A job no
    worker answers for is waited through (as ``run --wait`` does), not taken for an end."""
    if view.no_worker is not None:
        return False
    return view.live is None or view.live.status in STOP_STATES


async def history_ticks(client: Client, job_id: str, tick: asyncio.Event) -> None:
    """Set ``tick`` on every new history event of the job's current run, following
    continue-as-new (each run's long-poll ends when the run does)."""
    while True:
        handle = client.get_workflow_handle(job_id)
        async for _ in handle.fetch_history_events(wait_new_event=True):
            tick.set()
        tick.set()
        await asyncio.sleep(0.2)  # the next run's history (or the closed job's) is there


async def follow(client: Client, job_id: str, *, worker_grace: float,
                 refresh: float = REFRESH_SECONDS,
                 timeout: float | None = None) -> AsyncGenerator[jobs.JobView, None]:
    """Each new view of ``job_id``: one at once, then one per history change (at most one
    per ``MIN_GAP_SECONDS``, at least one per ``refresh`` seconds), until a view is
    ``finished`` (yielded, then the iteration ends) or ``timeout`` seconds have passed."""
    deadline = None if timeout is None else time.monotonic() + timeout
    tick = asyncio.Event()
    poller = asyncio.create_task(history_ticks(client, job_id, tick))
    try:
        while True:
            tick.clear()
            view = await jobs.view_job(client, job_id, worker_grace=worker_grace)
            yield view
            left = None if deadline is None else deadline - time.monotonic()
            if finished(view) or (left is not None and left <= 0):
                return
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(tick.wait(), refresh if left is None
                                       else min(refresh, left))
            await asyncio.sleep(MIN_GAP_SECONDS)
    finally:
        poller.cancel()
        with contextlib.suppress(BaseException):
            await poller


__all__ = ["MIN_GAP_SECONDS", "REFRESH_SECONDS", "STOP_STATES", "finished", "follow",
           "history_ticks"]
