"""Building the review console against real components for a test: reviewer accounts on
disk, the real store, a real Temporal client, and an HTTP client that signs in through the
sign-in form like a browser (cookies, the form's token); or ``pressroom web`` itself as a
process (``pressroom_web``), for what only the real server shows (how uvicorn reads the
peer address, whether the event loop keeps answering)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client

import artifacts
from client.devserver import free_port
from tests.waiting import wait_for
from webconsole.accounts import ReviewerAccounts
from webconsole.app import create_app
from webconsole.audit import AuditLog
from webconsole.backend import ConsoleBackend
from webconsole.config import ConsoleConfig
from webconsole.sessions import Sessions
from webconsole.throttle import PasswordGuard

REPO = Path(__file__).resolve().parents[2]

PASSWORD = {"alice": "alice-correct-horse", "bob": "bob-battery-staple",
            "agent-writer": "writer-password-1"}
_TOKEN = re.compile(r'name="(?:signin_token|csrf_token)" value="([^"]+)"')


def make_accounts(folder: Path, *names: str) -> ReviewerAccounts:
    accounts = ReviewerAccounts(folder)
    for name in names:
        accounts.add(name, PASSWORD[name])
    return accounts


def review_for(accounts: ReviewerAccounts, *names: str) -> dict[str, Any]:
    """A spec's ``review`` listing ``names`` pinned to their console keys."""
    return {"reviewers": [{"name": n, "public_key": accounts.public_key(n)} for n in names],
            "timeout": "10m", "max_revisions": 2}


class Console:
    """The app with its live dependencies; ``close`` closes the store it opened."""

    def __init__(self, app: Any, store: Any, accounts: ReviewerAccounts) -> None:
        self.app, self.store, self.accounts = app, store, accounts

    async def close(self) -> None:
        await self.store.close()

    async def audit_events(self, spec: Any) -> list[Any]:
        """The audit log of ``spec``'s job, read back from the store."""
        events: list[Any] = await AuditLog(self.store).events(
            spec.job_id, spec.scope.tenant, spec.scope.project)
        return events


async def open_console(client: Client, store_url: str, accounts: ReviewerAccounts,
                       *, sessions: Sessions | None = None, guard: PasswordGuard | None = None,
                       **config: Any) -> Console:
    """The app over a store opened here; ``sessions`` and ``guard`` when the test looks
    inside them (``config.secret`` is then ``sessions``' own)."""
    store = await artifacts.open_store(store_url)
    secret = config.pop("secret", None) or secrets.token_bytes(32)
    cfg = ConsoleConfig(secret=secret, refresh_seconds=1, **config)
    app = create_app(cfg, ConsoleBackend(client, store, worker_grace=10.0), accounts,
                     AuditLog(store), sessions=sessions, guard=guard)
    return Console(app, store, accounts)


def http(console: Console) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=console.app),
                             base_url="http://console.test", follow_redirects=False)


def form_token(html: str) -> str:
    m = _TOKEN.search(html)
    assert m is not None, "no form token on the page"
    return m.group(1)


async def sign_in(web: httpx.AsyncClient, name: str, password: str | None = None) -> None:
    page = await web.get("/signin")
    assert page.status_code == 200
    done = await web.post("/signin", data={"name": name, "password": password or PASSWORD[name],
                                           "signin_token": form_token(page.text), "next": "/"})
    assert done.status_code == 303, done.text


@contextlib.asynccontextmanager
async def pressroom_web(home: Path, address: str, *flags: str,
                        startup_deadline: float = 60.0) -> AsyncIterator[WebProcess]:
    """``pressroom web`` started as an operator starts it (a real process, its own uvicorn,
    on a free loopback port, with ``flags``), yielded once ``/healthz`` answers; stopped
    with SIGTERM (then SIGKILL) on exit. Its output goes to ``home/web.log``."""
    port = free_port()
    env = {**os.environ, "PRESSROOM_HOME": str(home), "PRESSROOM_TEMPORAL_ADDRESS": address,
           "COLUMNS": "200"}
    env.pop("PRESSROOM_DEBUG", None)
    home.mkdir(parents=True, exist_ok=True)
    log = (home / "web.log").open("wb")
    proc = subprocess.Popen([sys.executable, str(REPO / "pressroom.py"), "web", "--port",
                             str(port), *flags], env=env, cwd=REPO, stdout=log,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=url, timeout=5) as probe:
            async def up() -> bool:
                if proc.poll() is not None:
                    raise AssertionError(f"pressroom web exited {proc.returncode}: "
                                         f"{(home / 'web.log').read_text()}")
                return (await probe.get("/healthz")).status_code == 200

            await wait_for(up, startup_deadline, f"pressroom web on {url}")
        yield WebProcess(url=url, pid=proc.pid)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.to_thread(proc.wait, 15)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait, 15)
        log.close()


@dataclass(frozen=True)
class WebProcess:
    """A running ``pressroom web``: its base URL and process id."""

    url: str
    pid: int
