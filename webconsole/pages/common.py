"""What every page shares: its dependencies, the signed-in session, rendering, refusals.

``Deps`` is built once in ``webconsole.app.create_app`` and handed to each page; a page
never reaches for a global. ``signed_in`` is the one door: a local session cookie, or —
when the operator enabled it — a reviewer name asserted by a trusted reverse proxy, which
gets a session of its own so forms carry a CSRF token the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.templating import Jinja2Templates

from contracts.signing import normalize_name
from webconsole.accounts import ReviewerAccounts
from webconsole.audit import AuditEvent, AuditLog
from webconsole.backend import ConsoleBackend
from webconsole.config import ConsoleConfig
from webconsole.sessions import SESSION_COOKIE, Session, Sessions
from webconsole.throttle import PasswordGuard


@dataclass
class Deps:
    config: ConsoleConfig
    backend: ConsoleBackend
    sessions: Sessions
    accounts: ReviewerAccounts
    audit: AuditLog
    templates: Jinja2Templates
    #: password throttles and the argon2 pool (``webconsole.throttle``)
    guard: PasswordGuard


class SignInRequired(Exception):
    """No session: the page answers with a redirect to the sign-in form."""


def set_session_cookie(response: Response, deps: Deps, cookie: str) -> None:
    response.set_cookie(SESSION_COOKIE, cookie, httponly=True, samesite="strict",
                        secure=deps.config.secure_cookies, path="/")


def peer_host(request: Request) -> str | None:
    """The address of the socket's peer. ``pressroom web`` runs uvicorn with
    ``proxy_headers`` off (``webconsole.server.uvicorn_config``), so no forwarding header
    has rewritten it."""
    return request.client.host if request.client else None


def signed_in(request: Request, deps: Deps) -> Session:
    """The request's session, or ``SignInRequired``. A trusted proxy's assertion uses the
    reviewer's one proxy session (``Sessions.for_proxy``), not a new one per request."""
    session = deps.sessions.find(request.cookies.get(SESSION_COOKIE))
    header = deps.config.proxy_header
    if header is not None:
        asserted = request.headers.get(header)
        if asserted and peer_host(request) in deps.config.trusted_proxies:
            name = normalize_name(asserted)
            if session is not None and session.reviewer == name:
                return session
            if deps.accounts.exists(name):
                session, cookie = deps.sessions.for_proxy(name)
                request.state.new_session_cookie = cookie
                return session
    if session is None:
        raise SignInRequired
    return session


def render(request: Request, deps: Deps, template: str, context: dict[str, Any],
           *, status_code: int = 200, session: Session | None = None) -> Response:
    response = deps.templates.TemplateResponse(
        request, template, {"session": session, "config": deps.config, **context},
        status_code=status_code)
    cookie = getattr(request.state, "new_session_cookie", None)
    if cookie:
        set_session_cookie(response, deps, cookie)
    return response


def to_signin(request: Request) -> Response:
    target = request.url.path
    return RedirectResponse(f"/signin?next={target}", status_code=303)


async def audit(deps: Deps, *, actor: str, action: str, outcome: str, job_id: str | None = None,
                tenant: str | None = None, project: str | None = None,
                detail: str = "") -> None:
    """One audit event; the audit log's own failure never hides the page's answer, but is
    never silent either (it raises to the error page)."""
    await deps.audit.record(AuditEvent.now(actor=actor, action=action, outcome=outcome,
                                           job_id=job_id, tenant=tenant, project=project,
                                           detail=detail))


__all__ = ["Deps", "SignInRequired", "audit", "peer_host", "render", "set_session_cookie",
           "signed_in", "to_signin"]
