"""Password guessing and token abuse against the console's HTTP interface, through the real
app, dev server, store, worker and reviewer accounts (argon2 included): the sign-in and the
decision form are throttled per account and per address (the right password refused too
while locked), a sign-in form is good for one attempt, a non-ASCII token is a refusal and
not an error, and a trusted proxy's assertions share one session per reviewer
(SECURITY.md section 8, "Guessing" and "Sessions and forms").

httpx's ASGITransport presents each request as coming from ``client`` (an address per
test, so the address limits of one test are not another's).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from argon2 import PasswordHasher
from temporalio.client import Client

from activities.runtime import ActivityRuntime
from contracts.job_spec import JobSpec
from tests.webconsole.consolekit import (
    PASSWORD,
    Console,
    form_token,
    make_accounts,
    open_console,
    review_for,
    sign_in,
)
from tests.workflows.jobkit import published_files, running_worker, start_job, wait_status
from webconsole.accounts import ReviewerAccounts
from webconsole.audit import AuditLog
from webconsole.sessions import SESSION_COOKIE, SIGNIN_COOKIE, Sessions
from webconsole.throttle import PasswordGuard, Throttle
from workflows.research_job import ResearchJobWorkflow

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

#: argon2 cheap enough for tests that make many attempts (the costs live in each hash)
CHEAP = PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1)


def _slow_locks() -> PasswordGuard:
    """The console's limits with a first lock of a minute (the default's two seconds could
    run out between a loaded machine's requests: the test asks whether a lock holds, not
    how long)."""
    return PasswordGuard(accounts=Throttle(free=5, base=60), addresses=Throttle(free=20,
                                                                                 base=60))


def client_from(console: Console, host: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=console.app, client=(host, 4567)),
                             base_url="http://console.test", follow_redirects=False)


async def attempt(web: httpx.AsyncClient, name: str, password: str) -> httpx.Response:
    """One sign-in through a fresh form, as a browser makes it."""
    form = await web.get("/signin")
    assert form.status_code == 200
    return await web.post("/signin", data={"name": name, "password": password,
                                           "signin_token": form_token(form.text)})


async def console_events(console: Console) -> list[tuple[str, str, str]]:
    return [(e.actor, e.action, e.outcome)
            for e in await AuditLog(console.store).events(None, None, None)]


async def test_wrong_passwords_lock_the_account_even_for_the_right_one(
        client: Client, store_url: str, tmp_path: Path) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice", "bob")
    console = await open_console(client, store_url, accounts, guard=_slow_locks())
    try:
        # eight wrong passwords at once, each from its own browser: counted as they arrive,
        # not as their answers come back, so they cannot all slip in before the first failure
        browsers = [client_from(console, "198.51.100.1") for _ in range(8)]
        try:
            answers = await asyncio.gather(*(attempt(b, "alice", f"wrong-password-{i:04d}")
                                             for i, b in enumerate(browsers)))
        finally:
            for b in browsers:
                await b.aclose()
        codes = sorted(a.status_code for a in answers)
        assert codes == [401] * 5 + [429] * 3, codes
        throttled = next(a for a in answers if a.status_code == 429)
        assert int(throttled.headers["retry-after"]) >= 1
        assert "Too many failed sign-ins" in throttled.text
        assert SESSION_COOKIE not in throttled.cookies
        async with client_from(console, "198.51.100.1") as web:
            # the right password, while the lock lasts, is refused without being checked
            right = await attempt(web, "alice", PASSWORD["alice"])
            assert right.status_code == 429, right.text
            assert SESSION_COOKIE not in right.cookies
            assert (await web.get("/")).status_code == 303
            # the lock is alice's: bob signs in from the same address
            await sign_in(web, "bob")
            assert (await web.get("/")).status_code == 200
        events = await console_events(console)
        assert events.count(("alice", "sign_in_failed", "refused")) == 5
        # the lock is audited once however many requests it refused
        assert events.count(("alice", "sign_in_throttled", "refused")) == 1
        assert ("bob", "sign_in", "ok") in events
        assert ("alice", "sign_in", "ok") not in events
    finally:
        await console.close()


async def test_one_address_guessing_many_names_is_throttled(
        client: Client, store_url: str, tmp_path: Path) -> None:
    accounts = ReviewerAccounts(tmp_path / "accounts", hasher=CHEAP)
    accounts.add("alice", PASSWORD["alice"])
    guard = PasswordGuard(accounts=Throttle(free=5, base=60),
                          addresses=Throttle(free=6, base=60))
    console = await open_console(client, store_url, accounts, guard=guard)
    try:
        async with client_from(console, "198.51.100.2") as sprayer, \
                client_from(console, "198.51.100.3") as elsewhere:
            # one guess per name, never five at one account: the address limit stops it
            codes = [(await attempt(sprayer, f"user-{i}", "password-guess-1")).status_code
                     for i in range(8)]
            assert codes == [401] * 6 + [429] * 2, codes
            assert (await attempt(sprayer, "alice", PASSWORD["alice"])).status_code == 429
            # the address is locked, not the accounts
            assert (await attempt(elsewhere, "alice", PASSWORD["alice"])).status_code == 303
        # each name was counted too, but as its sha256: no typed name is kept in memory
        assert len(guard.accounts) == 6
    finally:
        await console.close()


async def test_a_sign_in_form_is_good_for_one_attempt(client: Client, store_url: str,
                                                      tmp_path: Path) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice")
    console = await open_console(client, store_url, accounts)
    try:
        async with client_from(console, "198.51.100.4") as web:
            form = await web.get("/signin")
            data = {"name": "alice", "password": "a-wrong-password", "next": "/",
                    "signin_token": form_token(form.text)}
            first = await web.post("/signin", data=data)
            assert first.status_code == 401
        async with client_from(console, "198.51.100.4") as web:
            # the same form (its token and its cookie) again: refused before any check
            web.cookies.set(SIGNIN_COOKIE, form.cookies[SIGNIN_COOKIE], path="/signin")
            again = await web.post("/signin", data={**data, "password": PASSWORD["alice"]})
            assert again.status_code == 400, again.text
            assert "was used already" in again.text
            assert SESSION_COOKIE not in again.cookies
            # a fresh form signs in; replaying that successful form does not sign in again
            form = await web.get("/signin")
            good = {**data, "password": PASSWORD["alice"], "signin_token": form_token(form.text)}
            assert (await web.post("/signin", data=good)).status_code == 303
        async with client_from(console, "198.51.100.4") as replay:
            replay.cookies.set(SIGNIN_COOKIE, form.cookies[SIGNIN_COOKIE], path="/signin")
            replayed = await replay.post("/signin", data=good)
            assert replayed.status_code == 400
            assert SESSION_COOKIE not in replayed.cookies
    finally:
        await console.close()


@pytest.mark.parametrize("token", ["é" * 32, "токен", "\u202e" + "a" * 31, "😀"])
async def test_a_non_ascii_token_is_refused_not_an_error(
        token: str, client: Client, store_url: str, tmp_path: Path) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice")
    console = await open_console(client, store_url, accounts)
    try:
        async with client_from(console, "198.51.100.5") as web:
            form = await web.get("/signin")
            bad_form = await web.post("/signin", data={
                "name": "alice", "password": PASSWORD["alice"], "signin_token": token})
            assert bad_form.status_code == 400, bad_form.text
            assert SESSION_COOKIE not in bad_form.cookies
            await sign_in(web, "alice")
            refused = await web.post("/signout", data={"csrf_token": token})
            assert refused.status_code == 403, refused.text
            assert (await web.get("/")).status_code == 200  # still signed in
        assert form.status_code == 200
    finally:
        await console.close()


async def test_a_stolen_session_gets_no_free_guesses_at_the_decision_password(
        client: Client, runtime: ActivityRuntime, task_queue: str, store_url: str,
        tmp_path: Path, make_spec: Callable[..., JobSpec]) -> None:
    """The session's holder knows everything on the form but the password: five wrong ones
    lock it, the right one is then refused too, the job goes on waiting, and the same lock
    holds at sign-in (one count per account)."""
    accounts = make_accounts(tmp_path / "accounts", "alice")
    spec = make_spec(review=review_for(accounts, "alice"))
    console = await open_console(client, store_url, accounts, guard=_slow_locks())
    try:
        async with running_worker(client, runtime, task_queue), \
                client_from(console, "198.51.100.6") as thief:
            handle = await start_job(client, spec, task_queue)
            status = await wait_status(handle, {"awaiting_review"})
            assert status.pending_draft is not None
            await sign_in(thief, "alice")
            url = f"/jobs/{spec.job_id}/review"
            page = await thief.get(url)
            assert page.status_code == 200, page.text
            fields = {"csrf_token": form_token(page.text), "decision": "approve",
                      "draft_revision": str(status.pending_draft.revision),
                      "draft_hash": status.pending_draft.content_hash,
                      "destination": spec.destination}
            non_ascii = await thief.post(url, data={**fields, "csrf_token": "ключ" * 8,
                                                    "password": PASSWORD["alice"]})
            assert non_ascii.status_code == 403, non_ascii.text
            for i in range(5):
                wrong = await thief.post(url, data={**fields, "password": f"guess-{i:08d}"})
                assert wrong.status_code == 403, wrong.text
            locked = await thief.post(url, data={**fields, "password": f"guess-{5:08d}"})
            assert locked.status_code == 429, locked.text
            assert "too many wrong passwords" in locked.text
            right = await thief.post(url, data={**fields, "password": PASSWORD["alice"]})
            assert right.status_code == 429, right.text
            assert (await handle.query(ResearchJobWorkflow.status)).status == "awaiting_review"
            assert published_files(spec) == []
        async with client_from(console, "198.51.100.7") as owner:
            assert (await attempt(owner, "alice", PASSWORD["alice"])).status_code == 429
        details = [e.detail for e in await console.audit_events(spec)
                   if (e.actor, e.action) == ("alice", "decision_refused")]
        assert sum("wrong password: the decision" in d for d in details) == 5
        assert sum("too many wrong passwords" in d for d in details) == 2
        assert sum("CSRF" in d for d in details) == 1
        await handle.terminate("test over")
    finally:
        await console.close()


async def test_proxied_requests_without_a_cookie_share_one_session(
        client: Client, store_url: str, tmp_path: Path) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice", "bob")
    sessions = Sessions(b"s" * 32)
    console = await open_console(client, store_url, accounts, sessions=sessions,
                                 secret=b"s" * 32, proxy_header="X-Forwarded-User")
    try:
        cookies = set()
        for _ in range(10):  # a client that keeps no cookies: each request is new to us
            async with client_from(console, "127.0.0.1") as proxied:
                page = await proxied.get("/", headers={"X-Forwarded-User": "alice"})
                assert page.status_code == 200, page.text
                found = sessions.find(page.cookies[SESSION_COOKIE])
                assert found is not None and found.reviewer == "alice"
                cookies.add(found.session_id)
        assert len(cookies) == 1
        assert len(sessions) == 1
        async with client_from(console, "127.0.0.1") as proxied:
            assert (await proxied.get("/", headers={"X-Forwarded-User": "bob"})).status_code \
                == 200
            assert len(sessions) == 2
        # a request that signs nobody in makes no session
        for host, name in (("127.0.0.1", "mallory"), ("127.0.0.1", ""),
                           ("203.0.113.9", "alice")):
            async with client_from(console, host) as nobody:
                answer = await nobody.get("/", headers={"X-Forwarded-User": name})
                assert answer.status_code == 303, (host, name)
                assert SESSION_COOKIE not in answer.cookies
        assert len(sessions) == 2
    finally:
        await console.close()
