"""The draft review page and the decision it sends.

The page shows the pending draft (escaped, citations linked to the excerpts the model was
shown), the diff against the previous revision, and a form bound to the displayed draft:
its revision, content hash and destination travel as hidden fields and are what the
reviewer signs. Signing needs the reviewer's password again — it decrypts their key for
this one request (``webconsole.accounts``) — so a stolen session cookie cannot approve —
and that password is throttled with the account's sign-ins and checked off the event
loop (``webconsole.throttle``), so the cookie cannot buy unlimited guesses either.
The workflow's Update validator is the judge: a stale page gets its refusal shown plainly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from contracts.errors import JobError
from contracts.job_spec import topic_heading
from webconsole.accounts import AccountError
from webconsole.backend import DraftReview, NotVisible, may_decide
from webconsole.diff import diff_rows
from webconsole.draft_html import render_draft
from webconsole.evidence import Excerpt, resolve
from webconsole.pages.common import Deps, audit, peer_host, render, signed_in
from webconsole.sessions import Session, csrf_ok
from webconsole.throttle import GuardBusy, Throttled

_DECISIONS = {"approve", "request_changes", "reject"}
_MAX_COMMENT_CHARS = 4000
_MAX_FIELD = 1000


#: lines of context shown before and after an excerpt, when the job read them
CONTEXT_LINES = 8


@dataclass(frozen=True)
class Context:
    """An excerpt's surroundings at the same revision, as far as the job's reads returned
    them: ``(line number, text, cited)`` rows, and the link to the whole file."""

    rows: list[tuple[int, str, bool]]
    first: int
    last: int


def file_url(job_id: str, excerpt: Excerpt) -> str | None:
    """The console's page of the excerpt's whole file at its pinned revision."""
    if excerpt.revision is None:
        return None
    parts = excerpt.parts
    query = {"source": parts.name, "path": parts.path, "revision": excerpt.revision}
    if excerpt.line_start is not None:
        query["lines"] = f"{excerpt.line_start}-{excerpt.line_end}"
    return f"/jobs/{quote(job_id, safe='')}/file?{urlencode(query)}"


def excerpt_context(excerpt: Excerpt, read: dict[tuple[str, str, str], dict[int, str]]
                    ) -> Context | None:
    """``CONTEXT_LINES`` before and after the excerpt, read at the excerpt's own revision
    (``None`` when the job read nothing around it)."""
    if excerpt.line_start is None or excerpt.line_end is None or excerpt.revision is None:
        return None
    parts = excerpt.parts
    lines = read.get((parts.name, parts.path, excerpt.revision)) or {}
    first = max(1, excerpt.line_start - CONTEXT_LINES)
    last = excerpt.line_end + CONTEXT_LINES
    rows = [(n, lines[n], excerpt.line_start <= n <= excerpt.line_end)
            for n in range(first, last + 1) if n in lines]
    if not any(not cited for _, _, cited in rows):
        return None
    return Context(rows=rows, first=rows[0][0], last=rows[-1][0])


def summary(draft: DraftReview, claims: int, cited: list[Excerpt],
            unresolved: int) -> dict[str, object]:
    """The decision bar's summary: what the reviewer is about to sign for."""
    return {"claims": claims, "citations": len(cited), "unresolved": unresolved,
            "files": len({(e.parts.name, e.parts.path) for e in cited}),
            "sources": len({e.parts.name for e in cited}),
            "missing": [topic_heading(t) for t in draft.missing_topics],
            "flags": draft.security_flags, "cost": draft.cost}


def _page_context(draft: DraftReview, session: Session) -> dict[str, object]:
    rendered = render_draft(draft.text, lambda c: resolve(c, draft.blocks))
    diff = (diff_rows(draft.previous_text, draft.text)
            if draft.previous_text is not None else None)
    return {"draft": draft, "rendered": rendered, "diff": diff,
            "may_decide": may_decide(draft.spec, session.reviewer),
            "summary": summary(draft, rendered.claims, rendered.cited,
                               len(rendered.unresolved)),
            "contexts": {e.anchor: excerpt_context(e, draft.lines_read)
                         for e in rendered.cited},
            "file_urls": {e.anchor: file_url(draft.job_id, e) for e in rendered.cited}}


async def published_page(request: Request, deps: Deps) -> Response:
    """The article a job published, as its reviewer approved it, with its citations
    resolved to what the model was shown, and the signed decision behind it: who decided,
    when, on which draft revision and hash, with which comments, and whether the signature
    holds against the reviewer's key the job lists (``contracts.approval``, the check the
    publisher made). Readable by every reviewer the job lists."""
    session = signed_in(request, deps)
    job_id = request.path_params["job_id"]
    article = await deps.backend.published(job_id, session.reviewer)
    rendered = render_draft(article.text, lambda c: resolve(c, article.blocks))
    signature = article.decision.get("signature") or {}
    return render(request, deps, "published.html", {
        "article": article, "rendered": rendered, "signer": signature.get("signer"),
        "signed_at": signature.get("signed_at") or article.decision.get("decided_at"),
        "contexts": {e.anchor: excerpt_context(e, article.lines_read)
                     for e in rendered.cited},
        "file_urls": {e.anchor: file_url(job_id, e) for e in rendered.cited}},
        session=session)


async def file_page(request: Request, deps: Deps) -> Response:
    """One file of a source at one revision, as the job's reads returned it: every line
    they returned, numbered, the gaps said (``ConsoleBackend.file_read``)."""
    session = signed_in(request, deps)
    job_id = request.path_params["job_id"]
    source = request.query_params.get("source", "")[:_MAX_FIELD]
    path = request.query_params.get("path", "")[:_MAX_FIELD]
    revision = request.query_params.get("revision", "")[:_MAX_FIELD]
    lines = await deps.backend.file_read(job_id, session.reviewer, source, path, revision)
    cited: tuple[int, int] | None = None
    a, _, b = request.query_params.get("lines", "").partition("-")
    if a.isdigit() and b.isdigit():
        cited = (int(a), int(b))
    rows: list[dict[str, object]] = []
    previous = 0
    for n in sorted(lines):
        if n > previous + 1:
            rows.append({"gap": (previous + 1, n - 1)})
        rows.append({"n": n, "text": lines[n],
                     "cited": cited is not None and cited[0] <= n <= cited[1]})
        previous = n
    return render(request, deps, "file.html", {
        "job_id": job_id, "source": source, "path": path, "revision": revision,
        "rows": rows, "found": bool(lines)}, session=session)


async def review_page(request: Request, deps: Deps) -> Response:
    session = signed_in(request, deps)
    job_id = request.path_params["job_id"]
    draft = await deps.backend.draft_review(job_id, session.reviewer)
    await audit(deps, actor=session.reviewer, action="view_draft", outcome="ok", job_id=job_id,
                tenant=draft.spec.scope.tenant, project=draft.spec.scope.project,
                detail=f"r{draft.pending.revision} {draft.pending.content_hash}")
    return render(request, deps, "review.html", _page_context(draft, session), session=session)


def _comments(text: str) -> list[str]:
    """One comment per paragraph (blank-line separated)."""
    blocks = [" ".join(p.split()) for p in text.replace("\r\n", "\n").split("\n\n")]
    return [b for b in blocks if b]


_CLAIM_FIELD = "claim_comment_"
#: claim comments read from one form at most (a draft's claims are numbered from 1)
_MAX_CLAIM_COMMENTS = 200


def _claim_comments(form: Any) -> list[tuple[int, str]]:
    """``(claim number, comment)`` for each non-empty ``claim_comment_N`` field."""
    found: list[tuple[int, str]] = []
    for key in list(form.keys())[:_MAX_CLAIM_COMMENTS + 50]:
        number = key.removeprefix(_CLAIM_FIELD)
        if key.startswith(_CLAIM_FIELD) and number.isdigit() and len(number) < 6:
            text = " ".join(str(form.get(key, ""))[:_MAX_COMMENT_CHARS].split())
            if text:
                found.append((int(number), text))
    return sorted(found)[:_MAX_CLAIM_COMMENTS]


def claim_comment(number: int, claim: str, text: str) -> str:
    """A comment anchored to one claim, as the agent receives it: the claim quoted (its
    citation included), then the reviewer's request."""
    quoted = claim if len(claim) <= 400 else claim[:400] + "…"
    return f"On claim {number} (“{quoted}”): {text}"


async def review_submit(request: Request, deps: Deps) -> Response:
    session = signed_in(request, deps)
    job_id = request.path_params["job_id"]
    form = await request.form()
    try:
        spec = await deps.backend.spec(job_id, session.reviewer)
    except NotVisible:  # recorded in the console's own log: the job is not the viewer's
        await audit(deps, actor=session.reviewer, action="decision_refused",
                    outcome="refused", detail="a job that does not list the reviewer")
        raise
    scope = {"job_id": job_id, "tenant": spec.scope.tenant, "project": spec.scope.project}
    if not csrf_ok(session, str(form.get("csrf_token", ""))):
        await audit(deps, actor=session.reviewer, action="decision_refused",
                    outcome="refused", detail="missing or wrong CSRF token", **scope)
        return render(request, deps, "error.html", {"message": "Missing or wrong form token; "
                      "reload the page and decide again."}, status_code=403, session=session)
    decision = str(form.get("decision", ""))
    comments = _comments(str(form.get("comments", ""))[:_MAX_COMMENT_CHARS])
    on_claims = _claim_comments(form)

    async def refused(message: str, status_code: int) -> Response:
        await audit(deps, actor=session.reviewer, action="decision_refused", outcome="refused",
                    detail=f"{decision}: {message}"[:500], **scope)
        try:
            draft = await deps.backend.draft_review(job_id, session.reviewer)
            context = {**_page_context(draft, session), "refusal": message}
            return render(request, deps, "review.html", context, status_code=status_code,
                          session=session)
        except JobError:
            return render(request, deps, "error.html", {"message": message},
                          status_code=status_code, session=session)

    if decision not in _DECISIONS:
        return await refused("unknown decision", 400)
    try:
        revision = int(str(form.get("draft_revision", "")))
    except ValueError:
        return await refused("the form names no draft revision", 400)
    if on_claims:  # each quotes its claim, taken from the draft itself (never the form)
        try:
            shown_draft = await deps.backend.draft_review(job_id, session.reviewer)
        except JobError as exc:
            return await refused(str(exc), 409)
        if shown_draft.pending.revision != revision:
            return await refused("the draft changed since the page was shown; its claims "
                                 "are numbered anew — reload and comment again", 409)
        claims = render_draft(shown_draft.text,
                              lambda c: resolve(c, shown_draft.blocks)).claim_texts
        for number, text in on_claims:
            if not 1 <= number <= len(claims):
                return await refused(f"the draft has no claim {number}", 400)
            comments.append(claim_comment(number, claims[number - 1], text))
    try:  # the sign-in's throttle: a stolen session cookie gets no guesses of its own
        attempt = deps.guard.begin(session.reviewer, peer_host(request))
    except Throttled as exc:
        return await refused(f"too many wrong passwords: try again in "
                             f"{math.ceil(exc.retry_after)} s; the decision was not signed",
                             429)
    try:
        key = await deps.guard.check(deps.accounts.signing_key, session.reviewer,
                                     str(form.get("password", ""))[:_MAX_FIELD])
    except AccountError:
        attempt.failed()
        return await refused("wrong password: the decision was not signed", 403)
    except GuardBusy as exc:
        attempt.cancel()
        return await refused(f"{exc}: the decision was not signed", 503)
    attempt.succeeded()
    try:
        result = await deps.backend.decide(
            job_id, session.reviewer, decision,  # type: ignore[arg-type]
            key=key, draft_revision=revision,
            draft_hash=str(form.get("draft_hash", ""))[:_MAX_FIELD],
            destination=str(form.get("destination", ""))[:_MAX_FIELD], comments=comments)
    except NotVisible as exc:
        return await refused(str(exc), 403)
    except JobError as exc:  # the validator's refusal (stale hash, wrong destination …)
        return await refused(str(exc), 409)
    finally:
        del key
    await audit(deps, actor=session.reviewer, action="decision", outcome=result.decision,
                detail=f"{result.decision_id} r{revision}", **scope)
    return RedirectResponse(f"/jobs/{job_id}?decided={result.decision}", status_code=303)


__all__ = ["Context", "claim_comment", "excerpt_context", "file_page", "file_url",
           "published_page", "review_page", "review_submit", "summary"]
