"""The job page: stage timeline with times, the research loop's turn-by-turn tool calls,
the blocked reason with the ``resolve`` actions it allows, the tool calls waiting for a
reviewer's signed approval (with their arguments and ``approve-call`` commands),
manifests, and the receipt."""

from __future__ import annotations

import json

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from contracts.pricing import format_usd
from contracts.workflow_messages import JobStatus, ResearchProgress
from webconsole.pages.common import Deps, render, signed_in

#: the ``--add-source`` value a hint shows: the option takes the source spec itself as
#: YAML or JSON (``workflows/resolution.py``), not a file name
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
    return format_usd(research.cost_micro_usd) + (
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


async def job_page(request: Request, deps: Deps) -> Response:
    session = signed_in(request, deps)
    job_id = request.path_params["job_id"]
    detail = await deps.backend.job(job_id, session.reviewer)
    reason = detail.view.live.blocked_reason if detail.view.live is not None else (
        detail.view.result.reason if detail.view.result is not None else detail.view.failure)
    return render(request, deps, "job.html", {
        "detail": detail, "reason": reason,
        "actions": resolve_actions(detail.status, reason),
        "tokens": (detail.view.live.research.tokens_used
                   if detail.view.live is not None and detail.view.live.research else None),
        "cost": _cost(detail.view.live.research if detail.view.live is not None else None),
        "pending_calls": pending_calls(detail.view.live), "job_id": detail.job_id,
    }, session=session)


__all__ = ["ADD_SOURCE_HINT", "PendingCall", "job_page", "pending_calls", "resolve_actions"]
