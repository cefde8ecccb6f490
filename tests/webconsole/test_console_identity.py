"""Who the console believes a request comes from, against the real app, dev server, store
and reviewer accounts: the trusted reverse-proxy header, one-time sign-in links, sign-out,
forged cookies, the job's own principal, security headers and cookie flags, and where
sign-in may send you next.

httpx's ASGITransport presents the request as coming from ``client`` (default
``127.0.0.1``, one of the console's default trusted proxies); an untrusted peer is another
address passed the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from itsdangerous.encoding import base64_decode, base64_encode
from temporalio.client import Client

from activities.runtime import ActivityRuntime
from contracts.job_spec import JobSpec
from tests.webconsole.consolekit import (
    PASSWORD,
    Console,
    form_token,
    http,
    make_accounts,
    open_console,
    review_for,
    sign_in,
)
from tests.workflows.jobkit import published_files, running_worker, start_job, wait_status
from webconsole.sessions import SESSION_COOKIE, SIGNIN_COOKIE, Sessions
from workflows.research_job import ResearchJobWorkflow

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

BASE = "http://console.test"
_WHO = re.compile(r'<span class="who" id="signed-in-as">([^<]*)</span>')


def client_from(console: Console, host: str) -> httpx.AsyncClient:
    """A client whose requests reach the app from peer address ``host``."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=console.app, client=(host, 4567)),
                             base_url=BASE, follow_redirects=False)


def signed_in_as(html: str) -> str | None:
    m = _WHO.search(html)
    return m.group(1) if m else None


def to_signin(response: httpx.Response) -> bool:
    return response.status_code == 303 and response.headers["location"].startswith("/signin")


def set_cookies(response: httpx.Response) -> dict[str, str]:
    """Each Set-Cookie header of ``response`` by cookie name."""
    found = {}
    for header in response.headers.get_list("set-cookie"):
        found[header.split("=", 1)[0]] = header
    return found


def cookie_flags_ok(header: str) -> bool:
    parts = [p.strip().lower() for p in header.split(";")]
    return "httponly" in parts and "samesite=strict" in parts


async def test_trusted_proxy_header(client: Client, store_url: str, tmp_path: Path) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice")
    console = await open_console(client, store_url, accounts, proxy_header="X-Forwarded-User")
    try:
        async with client_from(console, "127.0.0.1") as trusted, \
                client_from(console, "203.0.113.9") as untrusted:
            page = await trusted.get("/", headers={"X-Forwarded-User": "alice"})
            assert page.status_code == 200, page.text
            assert signed_in_as(page.text) == "alice"
            started = set_cookies(page)
            assert SESSION_COOKIE in started and cookie_flags_ok(started[SESSION_COOKIE])
            # the same header from anyone but the proxy is not believed
            assert to_signin(await untrusted.get("/", headers={"X-Forwarded-User": "alice"}))
        # nor a name no account has, even from the proxy itself
        async with client_from(console, "127.0.0.1") as trusted:
            assert to_signin(await trusted.get("/", headers={"X-Forwarded-User": "mallory"}))
            assert to_signin(await trusted.get("/", headers={"X-Forwarded-User": ""}))
        # without proxy_header configured, the header means nothing at all
        plain = await open_console(client, store_url, accounts)
        try:
            async with client_from(plain, "127.0.0.1") as web:
                assert to_signin(await web.get("/", headers={"X-Forwarded-User": "alice"}))
        finally:
            await plain.close()
    finally:
        await console.close()


async def test_one_time_link_signs_in_once(client: Client, store_url: str,
                                           tmp_path: Path) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice")
    console = await open_console(client, store_url, accounts)
    try:
        token = accounts.one_time_token("alice")
        async with http(console) as web, http(console) as other:
            first = await web.get("/signin/once", params={"token": token})
            assert first.status_code == 303 and first.headers["location"] == "/"
            assert cookie_flags_ok(set_cookies(first)[SESSION_COOKIE])
            home = await web.get("/")
            assert home.status_code == 200 and signed_in_as(home.text) == "alice"
            again = await other.get("/signin/once", params={"token": token})
            assert again.status_code == 401
            assert SESSION_COOKIE not in set_cookies(again)
            assert to_signin(await other.get("/"))
            assert (await other.get("/signin/once", params={"token": "x" * 43})).status_code \
                == 401
    finally:
        await console.close()


async def test_sign_out_ends_the_session(client: Client, store_url: str,
                                         tmp_path: Path) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice")
    console = await open_console(client, store_url, accounts)
    try:
        async with http(console) as web:
            await sign_in(web, "alice")
            cookie = web.cookies[SESSION_COOKIE]
            home = await web.get("/")
            assert home.status_code == 200
            # without the form token: refused, and the session goes on
            refused = await web.post("/signout", data={})
            assert refused.status_code == 403
            refused = await web.post("/signout", data={"csrf_token": "not-the-token"})
            assert refused.status_code == 403
            assert (await web.get("/")).status_code == 200
            out = await web.post("/signout", data={"csrf_token": form_token(home.text)})
            assert out.status_code == 303 and out.headers["location"] == "/signin"
        # the old cookie, replayed, no longer signs anyone in
        async with http(console) as replay:
            replay.cookies.set(SESSION_COOKIE, cookie)
            assert to_signin(await replay.get("/"))
            assert to_signin(await replay.post("/signout",
                                               data={"csrf_token": form_token(home.text)}))
    finally:
        await console.close()


async def test_forged_or_altered_cookies_are_refused(client: Client, store_url: str,
                                                     tmp_path: Path) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice")
    console = await open_console(client, store_url, accounts)
    try:
        async with http(console) as web:
            await sign_in(web, "alice")
            good = web.cookies[SESSION_COOKIE]
        flipped = _altered_signature(good)
        payload, _, rest = good.partition(".")
        other_secret = Sessions(b"k" * 32).start("alice")[1]
        for forged in (flipped, "x" + good, payload + "." + rest[::-1], other_secret,
                       "alice", ""):
            async with http(console) as web:
                web.cookies.set(SESSION_COOKIE, forged)
                assert to_signin(await web.get("/")), forged
        async with http(console) as web:  # the genuine cookie still works
            web.cookies.set(SESSION_COOKIE, good)
            assert (await web.get("/")).status_code == 200
    finally:
        await console.close()


def _altered_signature(cookie: str) -> str:
    """``cookie`` with one byte of its decoded signature changed. Changing the last base64url
    character instead may change only padding bits, which decode to the same signature, so
    the "forged" cookie would be the genuine one."""
    signed, _, signature = cookie.rpartition(".")
    raw = bytearray(base64_decode(signature))
    raw[len(raw) // 2] ^= 0x01
    altered = f"{signed}.{base64_encode(bytes(raw)).decode('ascii')}"
    assert base64_decode(altered.rpartition(".")[2]) != base64_decode(signature)
    return altered


async def test_the_jobs_own_principal_cannot_decide(
        client: Client, runtime: ActivityRuntime, task_queue: str, store_url: str,
        tmp_path: Path, make_spec: Callable[..., JobSpec]) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice", "agent-writer")
    operator = {"name": "agent-writer", "public_key": accounts.public_key("agent-writer")}
    spec = make_spec(review={**review_for(accounts, "alice"), "operators": [operator]})
    assert spec.principal.principal_id == "agent-writer"
    console = await open_console(client, store_url, accounts)
    try:
        async with running_worker(client, runtime, task_queue), http(console) as web:
            handle = await start_job(client, spec, task_queue)
            status = await wait_status(handle, {"awaiting_review"})
            assert status.pending_draft is not None
            await sign_in(web, "agent-writer")
            url = f"/jobs/{spec.job_id}/review"
            page = await web.get(url)
            assert page.status_code == 200, page.text  # listed: it may read the draft
            assert 'id="cannot-decide"' in page.text
            assert 'id="decision-form"' not in page.text and 'id="approve"' not in page.text
            posted = await web.post(url, data={
                "csrf_token": form_token(page.text), "decision": "approve",
                "draft_revision": str(status.pending_draft.revision),
                "draft_hash": status.pending_draft.content_hash,
                "destination": spec.destination, "password": PASSWORD["agent-writer"]})
            assert posted.status_code == 403, posted.text
            assert "you are not a reviewer of job" in posted.text
            assert (await handle.query(ResearchJobWorkflow.status)).status == "awaiting_review"
            assert published_files(spec) == []
            events = await console.audit_events(spec)
            assert ("agent-writer", "decision_refused") in [(e.actor, e.action) for e in events]
            await handle.terminate("test over")
    finally:
        await console.close()


async def test_security_headers_and_cookie_flags(client: Client, store_url: str,
                                                 tmp_path: Path) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice")
    console = await open_console(client, store_url, accounts)
    try:
        async with http(console) as web:
            form = await web.get("/signin")
            assert cookie_flags_ok(set_cookies(form)[SIGNIN_COOKIE])
            done = await web.post("/signin", data={"name": "alice", "password": PASSWORD["alice"],
                                                   "signin_token": form_token(form.text)})
            assert done.status_code == 303
            assert cookie_flags_ok(set_cookies(done)[SESSION_COOKIE])
            responses: list[httpx.Response] = [form, done]
            for path in ("/", "/jobs/rows", "/?status=blocked", "/jobs/no-such-job",
                         "/jobs/no-such-job/review", "/jobs/no-such-job/manifests/m",
                         "/static/console.css", "/static/console.js", "/healthz",
                         "/nowhere"):
                responses.append(await web.get(path))
            responses.append(await web.post("/signout", data={}))  # 403
            async with http(console) as anonymous:
                responses.append(await anonymous.get("/"))  # redirect
                responses.append(await anonymous.post("/signin", data={}))  # 400
        for response in responses:
            where = f"{response.request.method} {response.request.url.path} " \
                    f"{response.status_code}"
            csp = response.headers.get("content-security-policy", "")
            assert csp, where
            assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, where
            assert "frame-ancestors 'none'" in csp, where
            assert response.headers.get("x-frame-options") == "DENY", where
            assert response.headers.get("x-content-type-options") == "nosniff", where
    finally:
        await console.close()


@pytest.mark.parametrize("target", ["//evil.example", "https://evil.example",
                                    "https://evil.example/", "//evil.example/jobs",
                                    "/\\evil.example", "\\\\evil.example",
                                    "/\t/evil.example", "http:evil.example",
                                    "javascript:alert(1)", "evil.example"])
async def test_next_after_sign_in_stays_on_the_console(
        target: str, client: Client, store_url: str, tmp_path: Path) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice")
    console = await open_console(client, store_url, accounts)
    try:
        async with http(console) as web:
            form = await web.get("/signin", params={"next": target})
            shown = re.search(r'name="next" value="([^"]*)"', form.text)
            assert shown is not None and shown.group(1) == "/", shown
            done = await web.post("/signin", data={"name": "alice",
                                                   "password": PASSWORD["alice"],
                                                   "signin_token": form_token(form.text),
                                                   "next": target})
            assert done.status_code == 303, done.text
            location = done.headers["location"]
            assert _on_console(location), (target, location)
    finally:
        await console.close()


def _on_console(location: str) -> bool:
    """Whether a browser following ``location`` from the console stays on it: a path that
    no browser reads as another host (browsers treat ``\\`` like ``/`` and drop tabs and
    newlines)."""
    normalized = re.sub(r"[\t\n\r]", "", location).replace("\\", "/")
    return (normalized.startswith("/") and not normalized.startswith("//")
            and httpx.URL(BASE).join(normalized).host == "console.test")

