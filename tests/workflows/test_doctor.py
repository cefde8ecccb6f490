"""``pressroom doctor``, run as a user runs it (a separate process): against the session's
dev server with a real worker and store (every check ok, exit 0), a wrong namespace, a
closed Temporal port and a PostgreSQL port nothing listens on, a real PostgreSQL database
whose schema is not Pressroom's, a bad attestation key file, and a server that accepts the
connection but never answers (each check bounded, and the whole run by ``--deadline``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import artifacts
from activities.runtime import ActivityRuntime
from client.devserver import free_port
from tests.workflows.conftest import LOCAL
from tests.workflows.jobkit import REPO_ROOT, roots_for, running_worker

pytestmark = [pytest.mark.asyncio(loop_scope="session")]

CLI = [sys.executable, str(REPO_ROOT / "pressroom.py")]


def base_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PRESSROOM_", "TEMPORAL_"))}
    home.mkdir(parents=True, exist_ok=True)
    (home / "temporal.toml").write_text("", encoding="utf-8")  # no developer profile
    return {**env, "PRESSROOM_HOME": str(home), "COLUMNS": "250",
            "TEMPORAL_CONFIG_FILE": str(home / "temporal.toml"), **extra}


async def doctor(env: dict[str, str], *args: str) -> tuple[int, dict[str, tuple[str, str]],
                                                           str, float]:
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(*CLI, "doctor", *args, env=env, cwd=REPO_ROOT,
                                                stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    text = out.decode()
    lines = {ln[6:24].strip(): (ln[:4].strip(), ln[25:]) for ln in text.splitlines()
             if ln.strip()}
    assert list(lines) == ["temporal config", "temporal server", "namespace",
                           "search attributes", "worker", "artifact store", "store schema",
                           "attestation key"], text
    assert b"Traceback" not in err and "Traceback" not in text
    return proc.returncode, lines, err.decode(), time.monotonic() - started


def outcomes(lines: dict[str, tuple[str, str]]) -> dict[str, str]:
    return {name: outcome for name, (outcome, _detail) in lines.items()}


def write_key(path: Path) -> Path:
    path.write_text("k1:" + base64.b64encode(os.urandom(32)).decode() + "\n",
                    encoding="utf-8")
    path.chmod(0o600)
    return path


@pytest.mark.temporal
async def test_all_ok_against_a_working_setup(temporal_env: Any, tmp_path: Path,
                                              task_queue: str) -> None:
    address = temporal_env.client.service_client.config.target_host
    home = tmp_path / "home"
    url = f"sqlite+aiosqlite:///{home / 'pressroom.db'}"
    home.mkdir()
    store = await artifacts.open_store(url)  # created at the head schema, as on first use
    await store.close()
    env = base_env(home, PRESSROOM_TEMPORAL_ADDRESS=address,
                   PRESSROOM_ATTESTATION_KEYS=str(write_key(tmp_path / "att.keys")))
    runtime = ActivityRuntime(url, locations=LOCAL, roots=roots_for(tmp_path))
    async with running_worker(temporal_env.client, runtime, task_queue):
        rc, lines, err, _took = await doctor(env, "--task-queue", task_queue)
    assert rc == 0, (lines, err)
    assert set(outcomes(lines).values()) == {"ok"}, lines
    assert "address from PRESSROOM_TEMPORAL_ADDRESS" in lines["temporal config"][1]
    assert "TLS off" in lines["temporal config"][1]
    assert f"1 worker(s) poll task queue {task_queue!r}" in lines["worker"][1]
    assert "at the head schema" in lines["store schema"][1]
    assert "signing with 'k1'" in lines["attestation key"][1]
    assert not err.strip()

    # no worker on another queue, no attestation key: a failure and a warning
    env.pop("PRESSROOM_ATTESTATION_KEYS")
    rc, lines, err, _took = await doctor(env, "--task-queue", task_queue + "-idle")
    assert rc == 1
    assert outcomes(lines)["worker"] == "fail" and "no worker polls" in lines["worker"][1]
    assert outcomes(lines)["attestation key"] == "warn"
    assert err.strip().splitlines() == [
        "error: pressroom doctor: 1 check(s) failed: worker"]


@pytest.mark.temporal
async def test_a_wrong_namespace_fails_and_skips_what_needs_it(temporal_env: Any,
                                                               tmp_path: Path) -> None:
    address = temporal_env.client.service_client.config.target_host
    env = base_env(tmp_path / "home", TEMPORAL_ADDRESS=address,
                   TEMPORAL_NAMESPACE="no-such-namespace")
    rc, lines, err, _took = await doctor(env)
    assert rc == 1
    assert outcomes(lines) == {
        "temporal config": "ok", "temporal server": "ok", "namespace": "fail",
        "search attributes": "skip", "worker": "skip", "artifact store": "ok",
        "store schema": "ok", "attestation key": "warn"}, lines
    assert "namespace 'no-such-namespace' does not exist" in lines["namespace"][1]
    assert "namespace from TEMPORAL_NAMESPACE" in lines["temporal config"][1]
    assert "failed: namespace" in err
    assert not (tmp_path / "home" / "pressroom.db").exists()  # doctor creates nothing


async def test_unreachable_temporal_and_database_in_bounded_time(tmp_path: Path) -> None:
    temporal_port, pg_port = free_port(), free_port()  # nothing listens on either
    env = base_env(tmp_path / "home", PRESSROOM_TEMPORAL_ADDRESS=f"127.0.0.1:{temporal_port}",
                   PRESSROOM_DATABASE_URL="postgresql+asyncpg://pressroom:hunter2@127.0.0.1:"
                                          f"{pg_port}/pressroom",
                   PRESSROOM_ATTESTATION_KEYS=str(tmp_path / "missing.keys"))
    rc, lines, err, took = await doctor(env, "--timeout", "5")
    assert rc == 1
    assert outcomes(lines) == {
        "temporal config": "ok", "temporal server": "fail", "namespace": "skip",
        "search attributes": "skip", "worker": "skip", "artifact store": "fail",
        "store schema": "skip", "attestation key": "fail"}, lines
    assert "connection refused" in lines["temporal server"][1]
    assert f"cannot reach PostgreSQL at 127.0.0.1:{pg_port}" in lines["artifact store"][1]
    assert "hunter2" not in str(lines) and "hunter2" not in err
    assert "does not exist" in lines["attestation key"][1]
    assert err.strip().splitlines() == [
        "error: pressroom doctor: 3 check(s) failed: temporal server, artifact store, "
        "attestation key"]
    assert took < 30


async def test_a_database_without_pressrooms_schema(tmp_path: Path) -> None:
    """A fresh database on the real PostgreSQL (made for this test, dropped after it):
    reachable, never migrated, so the schema check fails and says what to run (doctor only
    reads the alembic version, it migrates nothing)."""
    import asyncpg

    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 5432)) != 0:
            pytest.skip("no PostgreSQL on 127.0.0.1:5432")
    try:
        admin = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres")
    except Exception as exc:
        pytest.skip(f"cannot log in to PostgreSQL as postgres: {exc}")
    name = f"pressroom_doctor_{uuid.uuid4().hex[:10]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        env = base_env(tmp_path / "home",
                       PRESSROOM_TEMPORAL_ADDRESS=f"127.0.0.1:{free_port()}",
                       PRESSROOM_DATABASE_URL=f"postgresql+asyncpg://postgres@127.0.0.1:5432/"
                                              f"{name}")
        rc, lines, _err, _took = await doctor(env)
        assert rc == 1
        assert outcomes(lines)["artifact store"] == "ok", lines
        assert lines["store schema"][0] == "fail", lines
        assert "schema empty" in lines["store schema"][1]
        assert "run `pressroom db upgrade`" in lines["store schema"][1]
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@contextlib.asynccontextmanager
async def silent_server() -> AsyncIterator[int]:
    """A TCP server that accepts connections and never says a word."""
    held: list[asyncio.StreamWriter] = []

    async def hold(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for writer in held:
            writer.close()


async def test_a_silent_server_is_bounded_by_the_check_and_the_deadline(
        tmp_path: Path) -> None:
    async with silent_server() as port:
        env = base_env(tmp_path / "home", PRESSROOM_TEMPORAL_ADDRESS=f"127.0.0.1:{port}")
        rc, lines, _err, took = await doctor(env, "--timeout", "1", "--deadline", "20")
        assert rc == 1 and outcomes(lines)["temporal server"] == "fail"
        assert "no answer" in lines["temporal server"][1], lines
        assert outcomes(lines)["artifact store"] == "ok"  # the others still ran
        started_alone = took

        # a total deadline shorter than one check: what is left is not run, and says so
        rc, lines, _err, took = await doctor(env, "--timeout", "10", "--deadline", "1.5")
        assert rc == 1
        assert outcomes(lines)["temporal server"] == "fail"
        assert "no answer within 1." in lines["temporal server"][1], lines
        for name in ("artifact store", "attestation key"):
            assert lines[name] == ("fail", "not checked: the 1.5 s deadline passed"), lines
        assert took < started_alone + 8  # never the 10 s a check was allowed
