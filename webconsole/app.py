"""``create_app``: the one place that knows every page, the middleware and the error pages.

Dependencies are built by the caller (``webconsole.server.serve`` for ``pressroom web``,
tests with a real dev server and store) and passed in; the app opens nothing itself.

Every response carries a strict Content-Security-Policy — scripts and styles only from the
console itself, no inline script, no frames, no form posts elsewhere — so even markup that
escaped the templates' escaping could not run. Errors are pages with one plain sentence:
``SignInRequired`` redirects to sign-in, ``NotVisible`` is a 404 (another tenant's job looks
like no job), a ``JobError`` (a refusal, a job that is not waiting) is a 409, Temporal or
the store being unreachable or every password-check slot taken a 503 — never a traceback.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from artifacts.errors import StoreError
from client.errors import TemporalUnavailable
from contracts.errors import JobError
from contracts.pricing import format_usd
from presentation.explain import plain_value
from presentation.turns import argument_line
from webconsole.accounts import ReviewerAccounts
from webconsole.audit import AuditLog
from webconsole.backend import ConsoleBackend, NotVisible
from webconsole.config import ConsoleConfig
from webconsole.pages import job, jobs, manifest, review, signin
from webconsole.pages.common import Deps, SignInRequired, render, signed_in, to_signin
from webconsole.sessions import Sessions
from webconsole.shown import marked, shown, verbatim
from webconsole.throttle import GuardBusy, PasswordGuard

HERE = Path(__file__).resolve().parent
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
_SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]

Handler = Callable[[Request, Deps], Awaitable[Response]]


class SecurityHeaders:
    """Adds the security headers to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


def templates() -> Jinja2Templates:
    env = Environment(loader=FileSystemLoader(HERE / "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True,
                      finalize=marked)  # every printed value: invisible characters marked
    env.filters["shown"] = shown
    env.filters["verbatim"] = verbatim  # a form value that must post back unchanged
    env.filters["argument_line"] = argument_line  # a tool call's arguments, one short line
    env.filters["usd"] = format_usd  # whole micro-dollars as $0.000000
    env.filters["plain"] = plain_value  # a manifest value as words and numbers, never a repr
    return Jinja2Templates(env=env)


def create_app(config: ConsoleConfig, backend: ConsoleBackend, accounts: ReviewerAccounts,
               audit: AuditLog, *, sessions: Sessions | None = None,
               guard: PasswordGuard | None = None) -> Starlette:
    deps = Deps(config=config, backend=backend,
                sessions=Sessions(config.secret) if sessions is None else sessions,
                accounts=accounts, audit=audit, templates=templates(),
                guard=PasswordGuard() if guard is None else guard)

    def page(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request, deps)
            except SignInRequired:
                return to_signin(request)
            except NotVisible as exc:
                return render(request, deps, "error.html", {"message": str(exc)},
                              status_code=404, session=_maybe_session(request, deps))
            except TemporalUnavailable as exc:
                return render(request, deps, "error.html", {"message": str(exc)},
                              status_code=503, session=_maybe_session(request, deps))
            except JobError as exc:
                return render(request, deps, "error.html", {"message": str(exc)},
                              status_code=409, session=_maybe_session(request, deps))
            except GuardBusy as exc:
                return render(request, deps, "error.html", {"message": str(exc)},
                              status_code=503, session=_maybe_session(request, deps))
            except StoreError as exc:
                return render(request, deps, "error.html",
                              {"message": f"the artifact store refused: {type(exc).__name__}"},
                              status_code=503, session=_maybe_session(request, deps))
        return endpoint

    async def health(_: Request) -> Response:
        return PlainTextResponse("ok")

    routes: list[Any] = [
        Route("/", page(jobs.jobs_page)),
        Route("/jobs/rows", page(jobs.jobs_rows)),
        Route("/jobs/{job_id}", page(job.job_page)),
        Route("/jobs/{job_id}/events", page(job.job_events)),
        Route("/jobs/{job_id}/review", page(review.review_page), methods=["GET"]),
        Route("/jobs/{job_id}/review", page(review.review_submit), methods=["POST"]),
        Route("/jobs/{job_id}/manifests/{manifest_id}", page(manifest.manifest_page)),
        Route("/jobs/{job_id}/file", page(review.file_page)),
        Route("/jobs/{job_id}/compare", page(manifest.compare_page)),
        Route("/jobs/{job_id}/published", page(review.published_page)),
        Route("/signin", page(signin.signin_page), methods=["GET"]),
        Route("/signin", page(signin.signin_submit), methods=["POST"]),
        Route("/signin/once", page(signin.signin_once), methods=["GET"]),
        Route("/signout", page(signin.signout), methods=["POST"]),
        Route("/healthz", health),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(SecurityHeaders)])


def _maybe_session(request: Request, deps: Deps) -> Any:
    try:
        return signed_in(request, deps)
    except SignInRequired:
        return None


__all__ = ["CSP", "create_app"]
