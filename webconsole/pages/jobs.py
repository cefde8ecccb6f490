"""The jobs page: every job that lists the reviewer, from one visibility query, filtered
by status or tenant, refreshing its rows in place (``/jobs/rows``); each row shows the
job's question (read from its spec once, ``ConsoleBackend.questions``)."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response

from webconsole.pages.common import Deps, render, signed_in

#: the filters a reviewer can pick; "mine" means awaiting my review
STATUS_FILTERS = ("awaiting_review", "blocked", "needs_operator", "running", "published",
                  "rejected", "expired", "failed", "cancelled")


def _age(started: datetime | None) -> str:
    if started is None:
        return ""
    seconds = int((datetime.now(UTC) - started).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


async def _context(request: Request, deps: Deps) -> dict[str, object]:
    session = signed_in(request, deps)
    status = request.query_params.get("status") or None
    tenant = request.query_params.get("tenant") or None
    if status == "mine":
        status = "awaiting_review"
    if status is not None and status not in STATUS_FILTERS:
        status = None
    problem = None
    try:
        found = await deps.backend.visible_jobs(session.reviewer, status=status, tenant=tenant)
    except ValueError:  # a filter value a visibility query cannot carry (a quote, a control)
        found, problem = [], "That tenant filter is not a tenant name; nothing was searched."
    questions = await deps.backend.questions(session.reviewer, found)
    rows = [{"job": job, "age": _age(getattr(job, "started_at", None)),
             "question": questions.get(job.job_id, "")} for job in found]
    return {"session": session, "rows": rows, "status": request.query_params.get("status", ""),
            "tenant": tenant or "", "filters": STATUS_FILTERS, "problem": problem}


async def jobs_page(request: Request, deps: Deps) -> Response:
    context = await _context(request, deps)
    return render(request, deps, "jobs.html", context, session=context["session"])  # type: ignore[arg-type]


async def jobs_rows(request: Request, deps: Deps) -> Response:
    """Only the table body, for the page's live refresh."""
    context = await _context(request, deps)
    return render(request, deps, "jobs_rows.html", context, session=context["session"])  # type: ignore[arg-type]


__all__ = ["jobs_page", "jobs_rows"]
