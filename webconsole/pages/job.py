"""The job page: stage timeline with times, the research loop's turn-by-turn tool calls,
the blocked reason with the ``resolve`` actions it allows, manifests, and the receipt."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from webconsole.pages.common import Deps, render, signed_in

#: what each blocked reason can be resolved with (``pressroom resolve JOB <flag>``)
_FIXES = {
    "required_evidence_missing": ["--add-source FILE.yaml", "--refresh SOURCE",
                                  "--accept-gathered"],
    "required_partition_missing": ["--add-source FILE.yaml", "--refresh SOURCE"],
    "minimums_exceed_budget": ["--budget TOKENS", "--context-limit TOKENS"],
    "transform_blocked": ["--context-limit TOKENS", "--budget TOKENS"],
    "unsafe_tool_repair": ["--retry"],
    "serialization_invalid": ["--retry"],
    "budget_exhausted": ["--token-budget TOKENS"],
    "stale": ["--accept KEY@REVISION", "--refresh SOURCE"],
}


def resolve_actions(status: str, reason: str | None) -> list[str]:
    """The ``pressroom resolve`` flags a blocked (or needs-operator) job accepts, best
    first; ``--abandon`` always ends it without publishing."""
    if status == "needs_operator":
        return ["--retry", "--abandon"]
    if status != "blocked":
        return []
    text = reason or ""
    for key, flags in _FIXES.items():
        if key in text:
            return [*flags, "--abandon"]
    return ["--retry", "--add-source FILE.yaml", "--budget TOKENS", "--abandon"]


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
    }, session=session)


__all__ = ["job_page", "resolve_actions"]
