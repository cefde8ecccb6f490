"""``pressroom web``: build the console's dependencies from ``Settings`` and serve it.

Everything is built here, once, and passed in (the app opens nothing): the Temporal client,
the artifact store, the reviewer accounts, the audit log and the cookie secret
(``$PRESSROOM_HOME/console/secret``, created 0600 on first run). uvicorn serves it on
``127.0.0.1`` unless the operator chooses otherwise, and never rewrites the peer address
from forwarding headers (``uvicorn_config``).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import uvicorn
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

import artifacts
from client.connection import connect
from client.devserver import free_port, port_free
from settings import Settings
from webconsole.accounts import ReviewerAccounts
from webconsole.app import create_app
from webconsole.audit import AuditLog
from webconsole.backend import ConsoleBackend
from webconsole.config import DEFAULT_PORT, ConsoleConfig, load_secret


def console_config(settings: Settings, *, host: str = "127.0.0.1", port: int | None = None,
                   proxy_header: str | None = None, secure_cookies: bool = False,
                   trusted_proxies: tuple[str, ...] = ("127.0.0.1", "::1")) -> ConsoleConfig:
    return ConsoleConfig(host=host, port=DEFAULT_PORT if port is None else port,
                         secret=load_secret(settings.home / "console" / "secret"),
                         proxy_header=proxy_header, secure_cookies=secure_cookies,
                         trusted_proxies=trusted_proxies)


@asynccontextmanager
async def console_app(settings: Settings, config: ConsoleConfig) -> AsyncIterator[Starlette]:
    """The console app with live dependencies; closes the store on exit."""
    client = await connect(settings)
    store = await artifacts.open_store(settings.store_url)
    try:
        backend = ConsoleBackend(client, store, worker_grace=settings.worker_grace_seconds)
        accounts = ReviewerAccounts(settings.console_accounts_dir)
        yield create_app(config, backend, accounts, AuditLog(store))
    finally:
        await store.close()


class LiveConsole:
    """An ASGI app that builds the console's dependencies in the server's own event loop at
    startup (the ASGI lifespan) and closes them at shutdown: a Temporal client and a store
    belong to the loop that opened them, so they are opened where requests will run."""

    def __init__(self, settings: Settings, config: ConsoleConfig) -> None:
        self.settings, self.config = settings, config
        self._app: Starlette | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if self._app is None:  # a server without lifespan support: refuse, do not guess
            raise RuntimeError("the console was not started (ASGI lifespan)")
        await self._app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        running = console_app(self.settings, self.config)
        try:
            self._app = await running.__aenter__()
        except Exception as exc:  # Temporal or the store unreachable: one line, no trace
            await send({"type": "lifespan.startup.failed",
                        "message": f"{type(exc).__name__}: {exc}"})
            return
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        self._app = None
        await running.__aexit__(None, None, None)
        await send({"type": "lifespan.shutdown.complete"})


@dataclass(frozen=True)
class DemoConsole:
    """What ``make demo`` prints on a terminal: where the console is, a one-time sign-in
    link for the demo reviewer, and the password that unlocks their key for a decision."""

    url: str
    signin_url: str
    password: str


@asynccontextmanager
async def demo_console(settings: Settings, *, reviewer: str,
                       key: Ed25519PrivateKey) -> AsyncIterator[DemoConsole]:
    """The console served on loopback for the demo's one reviewer: their account is made
    (again, each run) around the demo's registered signing ``key`` with a fresh random
    password, so the console's decisions verify against the key the job pinned."""
    accounts = ReviewerAccounts(settings.console_accounts_dir)
    password = secrets.token_urlsafe(12)
    accounts.add(reviewer, password, replace=True, key=key)
    port = DEFAULT_PORT if port_free(DEFAULT_PORT) else free_port()
    config = console_config(settings, port=port)
    server = uvicorn.Server(uvicorn_config(LiveConsole(settings, config), config.host, port))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # the console could not start: raise why
            raise RuntimeError("the review console stopped while starting")
        await asyncio.sleep(0.05)
    url = f"http://{config.host}:{port}"
    try:
        yield DemoConsole(url=url, password=password,
                          signin_url=f"{url}/signin/once?token="
                                     f"{accounts.one_time_token(reviewer, ttl_s=3600)}")
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 10)


#: how long ``pressroom web`` waits for open requests (a live page's stream) on SIGTERM
SHUTDOWN_GRACE_SECONDS = 3


def uvicorn_config(app: LiveConsole, host: str, port: int) -> uvicorn.Config:
    """How uvicorn serves the console. ``proxy_headers=False``: uvicorn's default believes
    ``X-Forwarded-For`` from loopback and rewrites the client address with it, so any local
    process could claim to be the ``--trusted-proxy`` (SECURITY.md section 8, "Identity");
    the address the console checks is the socket's peer, never a header.
    ``timeout_graceful_shutdown``: a live job page's event stream (``/jobs/{id}/events``)
    stays open for minutes; on SIGTERM the server waits this long for requests, then ends
    them, so a reviewer's open tab never holds a shutdown."""
    return uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                          server_header=False, lifespan="on", proxy_headers=False,
                          timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS)


async def serve(settings: Settings, config: ConsoleConfig) -> None:
    await uvicorn.Server(uvicorn_config(LiveConsole(settings, config), config.host,
                                        config.port)).serve()


__all__ = ["DemoConsole", "LiveConsole", "console_app", "console_config", "demo_console",
           "serve", "uvicorn_config"]
