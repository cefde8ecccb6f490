"""The worker's health endpoint (``cli.health``, ``--health-port``).

On a real worker process (``python worker.py``, as the drain test starts it): ``/healthz``
and ``/readyz`` answer 200 once it polls; after SIGTERM, with an activity held by the
crash-test pause hook (``PRESSROOM_TEST_PAUSE_AT=run_tool``, never released, so the drain
period always runs out), ``/readyz`` answers 503 ``draining`` while ``/healthz`` still
answers 200, a malformed and an oversized request get a 4xx without taking the endpoint
down, and the process exits 0. Nothing sleeps for time: every wait is on an observable
condition with a deadline (``tests.waiting.wait_for``).

The request handling itself (methods, paths, limits, timeouts, the state's words) is
checked on the server alone, without Temporal.
"""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

import cli.health as health
from contracts.job_spec import JobSpec
from tests.waiting import wait_for
from tests.workflows.clusterkit import poller_identities
from tests.workflows.jobkit import start_job, start_worker_process

#: the drain period: the checks that the draining worker is still alive and answering 503
#: must all run inside it, so it is twice what they take on a CI machine twice as slow
DRAIN = 8.0
MARGIN = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def request(port: int, raw: bytes) -> tuple[int, bytes] | None:
    """Send ``raw`` to 127.0.0.1:``port``; ``(status, body)``, or ``None`` when nothing
    listens there (yet)."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return None
    try:
        if raw:
            writer.write(raw)
            await writer.drain()
        else:
            writer.write_eof()  # connect and hang up, like a TCP probe
        answer = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    if not answer:
        return 0, b""  # closed without an answer
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


async def get(port: int, path: str) -> tuple[int, bytes] | None:
    return await request(port, f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())


# --- the server alone ----------------------------------------------------------------------


@pytest.mark.asyncio(loop_scope="session")
async def test_requests_are_answered_with_status_words_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "READ_TIMEOUT_SECONDS", 0.5)
    state = health.HealthState()
    server = await health.start_health_server(state, "127.0.0.1", 0)
    port = server.port
    try:
        assert await get(port, "/healthz") == (200, b"ok\n")
        assert await get(port, "/readyz") == (503, b"starting\n")
        state.started = True
        assert await get(port, "/readyz?verbose=1") == (200, b"ready\n")
        head = await request(port, b"HEAD /readyz HTTP/1.1\r\n\r\n")
        assert head == (200, b"")
        state.draining = True
        assert await get(port, "/readyz") == (503, b"draining\n")
        state.draining, state.store_ok = False, False
        assert await get(port, "/readyz") == (503, b"not ready\n")

        assert await get(port, "/metrics") == (404, b"not found\n")
        assert await request(port, b"POST /readyz HTTP/1.1\r\n\r\n") == (
            405, b"method not allowed\n")
        assert await request(port, b"\xff\xfe garbage\r\n\r\n") == (400, b"bad request\n")
        assert await request(port, b"GET /healthz\r\n\r\n") == (400, b"bad request\n")
        oversized = b"GET /healthz HTTP/1.1\r\nX-Pad: " + b"a" * 10_000 + b"\r\n\r\n"
        assert await request(port, oversized) == (431, b"request too large\n")
        # a request that never ends is cut off, not waited for
        assert await request(port, b"GET /healthz HTTP/1.1\r\n") == (408, b"request timeout\n")
        # a bare TCP connect (a TCP probe) gets nothing and breaks nothing
        assert await request(port, b"") == (0, b"")
        # still answering after all that
        assert await get(port, "/healthz") == (200, b"ok\n")
    finally:
        await server.close()
    assert await get(port, "/healthz") is None


@pytest.mark.asyncio(loop_scope="session")
async def test_connections_beyond_the_cap_are_closed_unanswered_and_the_cap_frees_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``MAX_CONNECTIONS`` silent connections hold every slot: one more is closed without
    an answer (a flood cannot queue work on the worker's loop); once they hang up, requests
    are answered again."""
    monkeypatch.setattr(health, "READ_TIMEOUT_SECONDS", 30.0)  # the holders outlast the test
    server = await health.start_health_server(health.HealthState(), "127.0.0.1", 0)
    port = server.port
    holders: list[asyncio.StreamWriter] = []
    try:
        for _ in range(health.MAX_CONNECTIONS):
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /healthz HTTP/1.1\r\n")  # a head that never ends
            await writer.drain()
            holders.append(writer)
        await wait_for(lambda: server._open == health.MAX_CONNECTIONS, 10, "every slot held")
        try:  # over the cap: hung up on (a reset when the request was still unread)
            assert await get(port, "/healthz") == (0, b"")
        except ConnectionResetError:
            pass
        for writer in holders:
            writer.close()
        holders.clear()
        await wait_for(lambda: server._open == 0, 10, "the slots freed")
        assert await get(port, "/healthz") == (200, b"ok\n")
    finally:
        for writer in holders:
            writer.close()
        await server.close()


# --- a real worker process -----------------------------------------------------------------


@pytest.mark.temporal
@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="session")
async def test_readyz_turns_503_while_a_sigtermed_worker_drains(
        temporal_env: WorkflowEnvironment, store_url: str, task_queue: str, tmp_path: Path,
        make_spec: Callable[..., JobSpec]) -> None:
    client = temporal_env.client
    address = client.service_client.config.target_host
    markers = tmp_path / "markers"
    log = tmp_path / "worker.log"
    port = free_port()
    proc = start_worker_process({"PRESSROOM_TEST_PAUSE_AT": "run_tool",
                                 "PRESSROOM_TEST_PAUSE_DIR": str(markers),
                                 "PRESSROOM_WORKER_DRAIN_SECONDS": str(DRAIN)},
                                address, task_queue, store_url, log,
                                args=["--identity", "healthy",
                                      "--health-port", f"127.0.0.1:{port}"])
    handle = None
    try:
        await wait_for(lambda: _answers(port, "/healthz", 200), 45, "/healthz answering 200")
        await wait_for(lambda: _answers(port, "/readyz", 200), 45, "/readyz answering 200")
        # ready means its pollers started; the server lists a poller once its first poll
        # arrives
        await wait_for(lambda: _polls(client, task_queue), 15, "the server listing its poller")

        spec = make_spec()
        handle = await start_job(client, spec, task_queue)
        reached = markers / "run_tool.reached"
        await wait_for(reached.exists, 90, "the worker pausing in run_tool")
        assert await get(port, "/readyz") == (200, b"ready\n")  # busy is still ready

        proc.send_signal(signal.SIGTERM)
        await wait_for(lambda: _answers(port, "/readyz", 503), 5, "/readyz answering 503")
        # the drain period is still running: the process is alive and says why it is not ready
        assert proc.poll() is None, "the worker exited before its drain period ran out"
        assert await get(port, "/readyz") == (503, b"draining\n")
        assert await get(port, "/healthz") == (200, b"ok\n")
        assert await request(port, b"BREW /coffee\r\n\r\n") == (400, b"bad request\n")
        big = b"GET /readyz HTTP/1.1\r\nCookie: " + b"x" * 20_000 + b"\r\n\r\n"
        assert await request(port, big) == (431, b"request too large\n")
        assert await get(port, "/healthz") == (200, b"ok\n")
        assert proc.poll() is None

        code = await wait_for(lambda: proc.poll() is not None and (proc.returncode,),
                              DRAIN + MARGIN, "the drained worker exiting")
        assert code == (0,), log.read_text(errors="replace")
        text = log.read_text(encoding="utf-8", errors="replace")
        assert f"health endpoint on 127.0.0.1:{port}" in text
        assert "SIGTERM: draining" in text
        assert await get(port, "/healthz") is None  # gone with the process
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if handle is not None:
            await _terminate(client, handle.id)
        print(log.read_text(encoding="utf-8", errors="replace")[-4000:] if log.exists() else "")


@pytest.mark.temporal
@pytest.mark.slow
@pytest.mark.asyncio(loop_scope="session")
async def test_a_store_that_cannot_be_opened_at_start_keeps_readyz_at_503(
        temporal_env: WorkflowEnvironment, task_queue: str, tmp_path: Path) -> None:
    pytest.importorskip("asyncpg")
    address = temporal_env.client.service_client.config.target_host
    log = tmp_path / "worker.log"
    port = free_port()
    secret = "s3cret-password"
    store = f"postgresql+asyncpg://pressroom:{secret}@127.0.0.1:{free_port()}/pressroom"
    proc = start_worker_process({}, address, task_queue, store, log,
                                args=["--health-port", str(port)])  # bare port: loopback
    try:
        await wait_for(lambda: "store could not be opened" in log.read_text(errors="replace"),
                       45, "the worker's warning about the store")
        await wait_for(lambda: _answers(port, "/healthz", 200), 15, "/healthz answering 200")
        assert await get(port, "/readyz") == (503, b"not ready\n")
        proc.send_signal(signal.SIGTERM)
        code = await wait_for(lambda: proc.poll() is not None and (proc.returncode,),
                              MARGIN, "the worker exiting")
        assert code == (0,), log.read_text(errors="replace")
        text = log.read_text(encoding="utf-8", errors="replace")
        assert secret not in text and "127.0.0.1:" + str(port) in text
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


async def _answers(port: int, path: str, status: int) -> bool:
    got = await get(port, path)
    return got is not None and got[0] == status


async def _polls(client: Client, task_queue: str) -> bool:
    return "healthy" in await poller_identities(client, task_queue)


async def _terminate(client: Client, workflow_id: str) -> None:
    try:
        await client.get_workflow_handle(workflow_id).terminate("test over")
    except Exception:  # already closed: nothing to tidy
        pass
