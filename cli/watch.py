"""``pressroom watch JOB``: a live view of one job (README.md, "Commands").

A pure ``render`` turns one status snapshot (``client.jobs.JobView`` plus the spec's
turn limit) into lines, so what the view shows is testable without a terminal; ``watch``
is the thin loop around it. The loop is event-driven: it long-polls the job's history
(``fetch_history_events(wait_new_event=True)``) and queries the workflow's status only
when an event arrives, or at most every ``REFRESH_SECONDS`` as a bound — never a busy
loop (``client.live``, shared with the review console's live job page). It ends when
the job needs a human or ends, with ``status``'s exit code (``cli.commands.exit_code``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text
from temporalio.client import Client

from client import jobs
from client.live import REFRESH_SECONDS, STOP_STATES, finished, history_ticks
from contracts.pricing import format_usd, spent_usd

__all__ = ["REFRESH_SECONDS", "STOP_STATES", "finished", "render", "resolve_actions",
           "watch"]


def resolve_actions(job_id: str, status: str, reason: str | None) -> list[str]:
    """The ``resolve`` commands a blocked or needs-operator job accepts (README.md, "Commands")."""
    if status == "needs_operator":
        return [f"pressroom resolve {job_id}  (retry the step)",
                f"pressroom resolve {job_id} --abandon"]
    if status != "blocked":
        return []
    text = reason or ""
    if "budget" in text:
        return [f"pressroom resolve {job_id} --token-budget N / --cost-budget USD",
                f"pressroom resolve {job_id} --accept-gathered",
                f"pressroom resolve {job_id} --abandon"]
    return [f"pressroom resolve {job_id} --add-source … / --refresh-source … / "
            "--accept KEY=REV / --budget N / --context-limit N",
            f"pressroom resolve {job_id}  (assemble again)",
            f"pressroom resolve {job_id} --abandon"]


def render(view: jobs.JobView, max_turns: int | None, *, calls: int = 5) -> list[str]:
    """The view's lines for one snapshot: stage, turn k of the limit, tokens and cost
    against the budgets, the last ``calls`` tool calls with their sizes, and a blocked or
    needs-operator reason with the ``resolve`` actions it allows."""
    lines = [f"job {view.job_id}: {view.summary}"]
    live = view.live
    if live is None:
        return lines
    lines.append(f"stage {live.stage}  status {live.status}  revision round "
                 f"{live.revision_round}")
    research = live.research
    if research is not None:
        limit = (f" of {research.round_start_turn + max_turns}" if max_turns is not None
                 else "")
        stopped = f"  stopped: {research.stop_reason}" if research.stop_reason else ""
        lines.append(f"research turn {research.turn}{limit}{stopped}")
        budget = f" / {research.token_budget}" if research.token_budget else ""
        cost = spent_usd(research.cost_micro_usd, research.unpriced_calls) + (
            f" / {format_usd(research.cost_budget_micro_usd)}"
            if research.cost_budget_micro_usd else "")
        lines.append(f"tokens {research.tokens_used}{budget}  cost {cost}  refused calls "
                     f"{research.rejected_calls}")
        for call in research.last_calls[-calls:]:
            why = f" ({call.rejection})" if call.rejection else ""
            lines.append(f"  t{call.turn} {call.tool_name:<11} {call.status}{why} "
                         f"{call.result_chars} chars")
    if live.status in ("blocked", "needs_operator"):
        lines.append(f"reason: {live.blocked_reason or '-'}")
        lines.extend(f"  {action}" for action in
                     resolve_actions(view.job_id, live.status, live.blocked_reason))
    elif live.status == "awaiting_review":
        lines.append(f"  pressroom approve {view.job_id} / request-changes / reject")
    return lines


async def watch(console: Console, client: Client, job_id: str, *,
                worker_grace: float, live_view: bool | None = None,
                refresh: float = REFRESH_SECONDS,
                timeout: float | None = None) -> jobs.JobView:
    """Show ``job_id`` until it needs a human or ends, or ``timeout`` seconds have passed
    (``None``: no limit); return its last view. ``live_view``: a rich Live panel (default:
    when ``console`` is a terminal), else one plain line per change."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        spec = await jobs.job_spec_of(client, job_id)
        max_turns: int | None = spec.research.max_turns
    except Exception:  # a job without a readable spec still shows its status
        max_turns = None
    if live_view is None:
        live_view = console.is_terminal
    tick = asyncio.Event()
    poller = asyncio.create_task(history_ticks(client, job_id, tick))
    shown: list[str] = []
    try:
        with contextlib.ExitStack() as stack:
            live: Live | None = None
            if live_view:
                live = stack.enter_context(Live(Text(""), console=console,
                                                auto_refresh=False, transient=False))
            while True:
                tick.clear()
                view = await jobs.view_job(client, job_id, worker_grace=worker_grace)
                lines = render(view, max_turns)
                if live is not None:
                    live.update(Group(*(Text(line) for line in lines)), refresh=True)
                else:
                    for line in lines:
                        if line not in shown:
                            console.print(line, highlight=False, markup=False,
                                          soft_wrap=True)
                    shown = lines
                left = None if deadline is None else deadline - time.monotonic()
                if finished(view) or (left is not None and left <= 0):
                    return view
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(tick.wait(), refresh if left is None
                                           else min(refresh, left))
    finally:
        poller.cancel()
        with contextlib.suppress(BaseException):
            await poller


