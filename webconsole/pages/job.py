"""The job page: stage timeline with times, the research loop's turn-by-turn tool calls,
the blocked reason with the ``resolve`` actions it allows, the tool calls waiting for a
reviewer's signed approval (with their arguments and ``approve-call`` commands),
manifests, and the receipt.

While the job runs the page stays live: ``/jobs/{id}/events`` is a server-sent-events
stream (signed in and visibility-checked like the page itself) of the job's ``live_state``
— status, stage, turn counter, tokens, cost and the last calls — sent each time the job's
history moves (``client.live.follow``: a long-poll, never a busy loop), ending with an
``end`` event when the job needs a human or ends; ``static/console.js`` writes each
state into the page as text (never as markup)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from client import jobs
from client.live import finished
from contracts.pricing import format_usd, spent_usd
from contracts.workflow_messages import JobStatus, ResearchProgress
from presentation.turns import TraceTurn
from webconsole.backend import status_of
from webconsole.pages.common import Deps, render, signed_in
from webconsole.shown import marked

#: how many of the latest tool calls the live panel lists
LIVE_CALLS = 6

#: the ``--add-source`` value a hint shows: the option takes the source spec itself as
#: YAML or JSON (``cli/resolution.py``), not a file name
ADD_SOURCE_HINT = "--add-source '{kind: document, name: NAME, path: PATH}'"

#: what each blocked reason can be resolved with (``pressroom resolve JOB <flags>``); the
#: empty string is ``resolve`` with no option, which assembles or runs the step again
_FIXES = {
    "required_evidence_missing": [ADD_SOURCE_HINT, "--refresh SOURCE", "--accept-gathered"],
    "required_partition_missing": [ADD_SOURCE_HINT, "--refresh SOURCE"],
    "minimums_exceed_budget": ["--budget TOKENS", "--context-limit TOKENS"],
    "transform_blocked": ["--context-limit TOKENS", "--budget TOKENS"],
    "unsafe_tool_repair": [""],
    "serialization_invalid": [""],
    # ``budget_exhausted`` is the research loop's token budget or, when the reason says so,
    # its cost budget (docs/configuration.md#cost-in-money): the first matching key wins
    "cost budget used": ["--cost-budget USD"],
    "budget_exhausted": ["--token-budget TOKENS"],
    "stale": ["--accept CANONICAL_KEY=REVISION", "--refresh SOURCE"],
}


def resolve_actions(status: str, reason: str | None) -> list[str]:
    """The ``pressroom resolve`` flags a blocked (or needs-operator) job accepts, best
    first; ``""`` (no option) retries the step and ``--abandon`` always ends the job without
    publishing. Every one parses with the real CLI (``tests/test_cli_hints.py``)."""
    if status == "needs_operator":
        return ["", "--abandon"]
    if status != "blocked":
        return []
    text = reason or ""
    for key, flags in _FIXES.items():
        if key in text:
            return [*flags, "--abandon"]
    return ["", ADD_SOURCE_HINT, "--budget TOKENS", "--abandon"]


def _cost(research: ResearchProgress | None) -> str | None:
    """The research turns' cost against the cost budget (docs/configuration.md#cost-in-money)."""
    if research is None or not research.turn:
        return None
    budget = research.cost_budget_micro_usd
    return spent_usd(research.cost_micro_usd, research.unpriced_calls) + (
        f" of {format_usd(budget)} budget" if budget else "")


class PendingCall(BaseModel):
    """A waiting ``effect: write`` call as the page shows it: its arguments as indented
    JSON (escaped by the template like every other value)."""

    call_id: str
    server: str
    tool: str
    turn: int
    arguments_text: str
    arguments_sha256: str


def pending_calls(live: JobStatus | None) -> list[PendingCall]:
    """The calls waiting for a reviewer's signed approval (docs/mcp.md)."""
    if live is None:
        return []
    return [PendingCall(call_id=p.call_id, server=p.server, tool=p.tool, turn=p.turn,
                        arguments_text=json.dumps(p.arguments, indent=2, sort_keys=True,
                                                  ensure_ascii=False),
                        arguments_sha256=p.arguments_sha256)
            for p in live.pending_tool_approvals]


def _text(value: object) -> str:
    """A value as the live panel shows it: plain text, invisible characters marked."""
    return str(marked(str(value)))


def live_state(view: jobs.JobView, max_turns: int | None,
               turns: list[TraceTurn] | None = None) -> dict[str, Any]:
    """What the live panel shows of one status snapshot, as JSON-ready plain text (the
    page's script sets it as text, never as markup). A job that has ended answers no
    status query with its research progress: ``turns`` (its stored turns,
    ``presentation.turns.research_turns``) then say where its research ended — a
    published job showed "turn 0" and no tokens."""
    status = status_of(view)
    live = view.live
    research = live.research if live is not None else None
    if research is None and turns:
        return {**_ended_state(turns), "status": status,
                "status_label": status.replace("_", " "),
                "stage": live.stage if live is not None else "done",
                "summary": _text(view.summary), "ended": finished(view)}
    turn = research.turn if research is not None else 0
    limit = (research.round_start_turn if research is not None else 0) + max_turns \
        if max_turns is not None else None
    tokens = ""
    if research is not None:
        tokens = f"{research.tokens_used:,}" + (
            f" of {research.token_budget:,} budget" if research.token_budget else "")
    calls = []
    for call in (research.last_calls if research is not None else [])[-LIVE_CALLS:]:
        why = f" ({call.rejection})" if call.rejection else ""
        calls.append(_text(f"turn {call.turn} · {call.tool_name} · {call.status}{why} · "
                           f"{call.result_chars:,} chars"))
    return {"status": status, "status_label": status.replace("_", " "),
            "stage": live.stage if live is not None else "done",
            "turn": turn, "turn_limit": limit, "tokens": tokens,
            "cost": _cost(research) or "", "calls": calls,
            "summary": _text(view.summary), "ended": finished(view)}


def _ended_state(turns: list[TraceTurn]) -> dict[str, Any]:
    """The research figures of a job's stored turns: the last turn, the tokens and cost
    of every turn's model call, the last calls."""
    costs = [t.cost_micro_usd for t in turns if t.cost_micro_usd is not None]
    calls = []
    for turn in turns:
        for call in turn.calls:
            why = f" ({call.rejection})" if call.rejection else ""
            size = f" · {call.result_chars:,} chars" if call.result_chars is not None else ""
            calls.append(_text(f"turn {turn.turn} · {call.tool_name} · "
                               f"{call.status or 'not run'}{why}{size}"))
    return {"turn": turns[-1].turn, "turn_limit": None,
            "tokens": f"{sum(t.input_tokens + t.output_tokens for t in turns):,}",
            "cost": format_usd(sum(costs)) if costs else "", "calls": calls[-LIVE_CALLS:]}


async def job_page(request: Request, deps: Deps) -> Response:
    session = signed_in(request, deps)
    job_id = request.path_params["job_id"]
    detail = await deps.backend.job(job_id, session.reviewer)
    reason = detail.view.live.blocked_reason if detail.view.live is not None else (
        detail.view.result.reason if detail.view.result is not None else detail.view.failure)
    return render(request, deps, "job.html", {
        "detail": detail, "reason": reason,
        "actions": resolve_actions(detail.status, reason),
        "state": live_state(detail.view, detail.spec.research.max_turns, detail.turns),
        "pending_calls": pending_calls(detail.view.live), "job_id": detail.job_id,
    }, session=session)


def _event(name: str, data: object) -> str:
    return f"event: {name}\ndata: {json.dumps(data, sort_keys=True, ensure_ascii=True)}\n\n"


async def job_events(request: Request, deps: Deps) -> Response:
    """The job's live states as server-sent events (see the module docstring). A stream
    lasts at most ``backend.LIVE_STREAM_SECONDS``; the browser then reconnects — signed in
    and visibility-checked again."""
    session = signed_in(request, deps)
    job_id = request.path_params["job_id"]
    spec, views = await deps.backend.follow(job_id, session.reviewer,
                                            refresh=float(deps.config.refresh_seconds))
    max_turns = spec.research.max_turns

    async def stream() -> AsyncIterator[str]:
        last = None
        yield "retry: 3000\n\n"
        try:
            async for view in views:
                state = live_state(view, max_turns)
                if state != last:
                    yield _event("status", state)
                    last = state
                if state["ended"]:
                    yield _event("end", {"status": state["status"]})
                    return
        except Exception as exc:  # Temporal gone, the job gone: say so, never a traceback
            yield _event("problem", {"message": f"live updates stopped: {type(exc).__name__}"})
        finally:
            await views.aclose()

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"x-accel-buffering": "no"})


__all__ = ["ADD_SOURCE_HINT", "PendingCall", "job_events", "job_page", "live_state",
           "pending_calls", "resolve_actions"]
