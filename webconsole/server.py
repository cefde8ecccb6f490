"""``pressroom web``: build the console's dependencies from ``Settings`` and serve it.

Everything is built here, once, and passed in (the app opens nothing): the Temporal client,
the artifact store, the reviewer accounts, the audit log and the cookie secret
(``$PRESSROOM_HOME/console/secret``, created 0600 on first run). uvicorn serves it on
``127.0.0.1`` unless the operator chooses otherwise.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

import artifacts
from settings import Settings
from webconsole.accounts import ReviewerAccounts
from webconsole.app import create_app
from webconsole.audit import AuditLog
from webconsole.backend import ConsoleBackend
from webconsole.config import ConsoleConfig, load_secret
from workflows.commands import connect


def console_config(settings: Settings, *, host: str = "127.0.0.1", port: int | None = None,
                   proxy_header: str | None = None, secure_cookies: bool = False,
                   trusted_proxies: tuple[str, ...] = ("127.0.0.1", "::1")) -> ConsoleConfig:
    from webconsole.config import DEFAULT_PORT

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


async def serve(settings: Settings, config: ConsoleConfig) -> None:
    server = uvicorn.Server(uvicorn.Config(LiveConsole(settings, config), host=config.host,
                                           port=config.port, log_level="warning",
                                           access_log=False, server_header=False,
                                           lifespan="on"))
    await server.serve()


__all__ = ["LiveConsole", "console_app", "console_config", "serve"]
