"""Sign in (local account, or a one-time link from ``make demo``) and sign out.

A sign-in is one attempt per form (its token is spent by the attempt), throttled per
account and per address before the password is checked, and checked off the event loop
(``webconsole.throttle``; SECURITY.md section 8, "Guessing")."""

from __future__ import annotations

import math
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from contracts.signing import normalize_name
from webconsole.audit import ANONYMOUS
from webconsole.pages.common import (
    Deps,
    audit,
    peer_host,
    render,
    set_session_cookie,
    signed_in,
)
from webconsole.sessions import SESSION_COOKIE, SIGNIN_COOKIE, csrf_ok
from webconsole.throttle import GuardBusy, Throttled

_MAX_FIELD = 1000


def _next(target: str | None) -> str:
    """Only a path on this console is followed after sign-in (never another site).
    Browsers read ``\\`` as ``/`` and drop tabs and newlines, so ``/\\evil.example`` is
    another site to them: a backslash or control character is refused too."""
    if not target:
        return "/"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//") \
            or "\\" in target or any(ord(c) < 0x20 or ord(c) == 0x7f for c in target):
        return "/"
    return target


def _form(request: Request, deps: Deps, *, error: str | None = None,
          status_code: int = 200, retry_after: float | None = None) -> Response:
    token, cookie = deps.sessions.signin_token()
    response = render(request, deps, "signin.html",
                      {"signin_token": token, "error": error,
                       "next": _next(request.query_params.get("next"))},
                      status_code=status_code)
    response.set_cookie(SIGNIN_COOKIE, cookie, httponly=True, samesite="strict",
                        secure=deps.config.secure_cookies, path="/signin")
    if retry_after is not None:
        response.headers["retry-after"] = str(math.ceil(retry_after))
    return response


async def signin_page(request: Request, deps: Deps) -> Response:
    return _form(request, deps)


async def signin_submit(request: Request, deps: Deps) -> Response:
    form = await request.form()
    name = str(form.get("name", ""))[:_MAX_FIELD]
    password = str(form.get("password", ""))[:_MAX_FIELD]
    token = deps.sessions.valid_signin_token(request.cookies.get(SIGNIN_COOKIE),
                                             str(form.get("signin_token", "")))
    if token is None:
        return _form(request, deps, error="The sign-in form expired, was used already or "
                                          "was not ours; try again.", status_code=400)
    actor = normalize_name(name) if name else ANONYMOUS
    try:  # counted before the check (webconsole.throttle): parallel guesses count too
        attempt = deps.guard.begin(normalize_name(name), peer_host(request))
    except Throttled as exc:
        if exc.first:  # one event per lock: a flood of refusals cannot grow the log
            await audit(deps, actor=actor, action="sign_in_throttled", outcome="refused",
                        detail="too many failed sign-ins for this account or address")
        return _form(request, deps, error=f"Too many failed sign-ins; try again in "
                     f"{math.ceil(exc.retry_after)} s.", status_code=429,
                     retry_after=exc.retry_after)
    if not deps.sessions.spend_signin_token(token):
        attempt.cancel()
        return _form(request, deps, error="The console is busy; try again shortly.",
                     status_code=503)
    reviewer = None
    if name and password:
        try:
            reviewer = await deps.guard.check(deps.accounts.authenticate, name, password)
        except GuardBusy as exc:
            attempt.cancel()
            return _form(request, deps, error=f"{str(exc).capitalize()}.", status_code=503)
    if reviewer is None:
        attempt.failed()
        await audit(deps, actor=actor, action="sign_in_failed", outcome="refused")
        return _form(request, deps, error="Unknown reviewer or wrong password.",
                     status_code=401)
    attempt.succeeded()
    _, cookie = deps.sessions.start(reviewer)
    await audit(deps, actor=reviewer, action="sign_in", outcome="ok")
    response = RedirectResponse(_next(str(form.get("next", "/"))), status_code=303)
    set_session_cookie(response, deps, cookie)
    response.delete_cookie(SIGNIN_COOKIE, path="/signin")
    return response


async def signin_once(request: Request, deps: Deps) -> Response:
    """A one-time sign-in link (``make demo``): the token is spent on first use."""
    token = request.query_params.get("token", "")[:_MAX_FIELD]
    reviewer = deps.accounts.redeem_token(token) if token else None
    if reviewer is None:
        await audit(deps, actor="anonymous", action="sign_in_failed", outcome="refused",
                    detail="one-time link unknown, used or expired")
        return _form(request, deps, error="That sign-in link was already used or has "
                                          "expired.", status_code=401)
    _, cookie = deps.sessions.start(reviewer)
    await audit(deps, actor=reviewer, action="sign_in", outcome="ok", detail="one-time link")
    response = RedirectResponse("/", status_code=303)
    set_session_cookie(response, deps, cookie)
    return response


async def signout(request: Request, deps: Deps) -> Response:
    session = signed_in(request, deps)
    form = await request.form()
    if not csrf_ok(session, str(form.get("csrf_token", ""))):
        return render(request, deps, "error.html", {"message": "Missing or wrong form token."},
                      status_code=403, session=session)
    deps.sessions.end(session)
    await audit(deps, actor=session.reviewer, action="sign_out", outcome="ok")
    response = RedirectResponse("/signin", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


__all__ = ["signin_once", "signin_page", "signin_submit", "signout"]
