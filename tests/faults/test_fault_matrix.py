"""Fault-injection matrix: break a real job on purpose, finish it, and
check nothing was lost, doubled or left hanging without a reason.

Cells (``tests/faults/matrix.py`` lists them and what each count means):

* SIGKILL — for every activity in ``activities.registry``, before and after its write
  (and between the writes of ``record_turn`` and ``publish``): a real worker
  process paused there by the crash-test hook (``activities.runtime.pause_point``) is
  SIGKILLed and a fresh one started; the job is driven to publication. An activity only a
  forked job runs (``fork_state``) is reached by forking a parent researched to its
  review; the fork is the job driven and checked.
* ``server_restart`` — the Temporal dev server (persistent database) stopped while an
  activity's result is on its way and started again on the same file and port.
* ``postgres_restart`` — a PostgreSQL server of the cell's own, stopped while the draft's
  revision insert waits inside it (the test holds a lock on the table) and started again:
  the write is rolled back and retried, never stored twice or in part.
* ``store_read_only``, ``publish_folder_read_only``, ``store_disk_full`` — faults an
  operator must fix: the store's folder read-only (for the worker started after it: an
  open file keeps its write access), the destination read-only, the store's tmpfs full.
  The job must show ``needs_operator: <reason>`` (or ``blocked: <reason>``) while the
  fault lasts, then finish after the fix and a signed ``retry``.

The default run (CI) takes the cells in ``DEFAULT_KILL_CELLS`` and
``DEFAULT_OTHER_CELLS``; ``PRESSROOM_FAULTS=full`` runs every cell. Each run prints the
matrix and writes it to ``reports/faults.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.runtime import PAUSE_DIR_ENV, PAUSE_ENV
from client.devserver import DevServer, free_port
from contracts.job_spec import JobSpec, parse_job_spec
from contracts.workflow_messages import JobResult
from tests.faults.matrix import (
    DEFAULT_OTHER_CELLS,
    END_DEADLINE,
    FULL,
    NEEDS_OPERATOR,
    NEEDS_OPERATOR_XFAIL,
    REASON_WINDOW,
    Cell,
    Driver,
    Row,
    inspect_job,
    retried,
    selected_kill_cells,
    stuck,
    visible_reason,
)
from tests.faults.services import (
    OwnPostgres,
    bind_read_only,
    fill,
    mount_tmpfs,
    mounted,
    unmount,
)
from tests.waiting import wait_for
from tests.workflows.jobkit import alive, job_dict, review, start_job, start_worker_process

pytestmark = [pytest.mark.temporal, pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]

RowMaker = Callable[[Cell], Row]
needs_operator = pytest.mark.xfail(not NEEDS_OPERATOR, strict=True, reason=NEEDS_OPERATOR_XFAIL)


def _in_this_run(name: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not FULL and name not in DEFAULT_OTHER_CELLS,
                              reason="PRESSROOM_FAULTS=full runs this cell")


def _spec(tmp_path: Path, docs: Path, **overrides: Any) -> JobSpec:
    extra: dict[str, Any] = {"review": {"reviewers": ["alice", "bob"], "operators": ["ops"],
                                        "timeout": "10m", "max_revisions": 2}}
    return parse_job_spec(job_dict(tmp_path, docs, **{**extra, **overrides}))


class Workers:
    """The cell's worker processes (``python worker.py``), all logging to one file."""

    def __init__(self, address: str, task_queue: str, store_url: str, log: Path) -> None:
        self.address, self.task_queue, self.store_url, self.log = (
            address, task_queue, store_url, log)
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        proc = start_worker_process(env or {}, self.address, self.task_queue, self.store_url,
                                    self.log)
        self.procs.append(proc)
        return proc

    def paused(self, point: str, markers: Path) -> subprocess.Popen[bytes]:
        return self.start({PAUSE_ENV: point, PAUSE_DIR_ENV: str(markers)})

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        # shown by pytest only when the test fails: what the worker processes said
        if self.log.exists():
            print(self.log.read_text(encoding="utf-8", errors="replace")[-4000:])


async def _reach(driver: Driver, marker: Path, what: str) -> None:
    if not await driver.until(lambda d: marker.exists() or d.execution != "RUNNING", 120):
        raise AssertionError(f"{what}: {marker.name} not within 120 s ({driver.live})")
    assert marker.exists(), f"{what}: the job ended ({driver.execution}) before {marker.name}"


async def _kill(proc: subprocess.Popen[bytes], marker: Path) -> None:
    """SIGKILL a worker paused at ``marker``'s point; its paused helper dies with it."""
    paused = int(marker.read_text(encoding="utf-8"))
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(10) == -signal.SIGKILL
    await wait_for(lambda: not alive(paused), 10,
                   f"the paused process {paused} gone with its killed worker")


def _finish(row: Row, driver: Driver, result: JobResult | None) -> None:
    row.finished = result is not None and result.status == "published"
    row.stuck_without_reason = max(row.stuck_without_reason, stuck(driver))
    if result is None and driver.reasons:
        row.note = (row.note + "; " if row.note else "") + f"ended on: {driver.reasons[-1]}"


# ------------------------------------------------------------------------- SIGKILL
@pytest.mark.parametrize("cell", selected_kill_cells(), ids=lambda c: c.name)
async def test_sigkill(cell: Cell, temporal_env: WorkflowEnvironment, tmp_path: Path,
                       docs: Path, task_queue: str, store_url: str,
                       fault_row: RowMaker) -> None:
    row = fault_row(cell)
    client = temporal_env.client
    spec = _spec(tmp_path, docs)
    assert cell.point is not None
    markers, marker = tmp_path / "markers", tmp_path / "markers" / f"{cell.point}.reached"
    workers = Workers(client.service_client.config.target_host, task_queue, store_url,
                      tmp_path / "worker.log")
    if cell.fork:
        await _sigkill_fork(cell, row, client, spec, workers, markers, marker, store_url)
        return
    driver = Driver(client, spec)
    try:
        first = workers.paused(cell.point, markers)
        await start_job(client, spec, task_queue)
        await _reach(driver, marker, cell.name)
        await _kill(first, marker)
        workers.start()
        result = await driver.to_end()
        _finish(row, driver, result)
        await inspect_job(row, store_url, spec, result, driver.handle)
        if not retried(await driver.handle.fetch_history()):
            row.problems.append("no activity attempt was retried after the kill")
    finally:
        await driver.close()
        workers.stop_all()
    row.check()


async def _sigkill_fork(cell: Cell, row: Row, client: Client, parent: JobSpec,
                        workers: Workers, markers: Path, marker: Path, store_url: str) -> None:
    """A kill cell of an activity only a fork runs: the parent researched to its review
    by a plain worker (stopped then), a signed fork of its turn 1 started through the
    CLI's client code (``start_fork``) while only the paused worker polls, that worker
    SIGKILLed at the pause point and a fresh one started; the fork is driven to
    publication and its store records checked, and the parent is rejected."""
    from cli.fork_command import EditFlags, start_fork
    from client import jobs
    from tests.workflows.jobkit import reviewer_key, wait_status

    assert cell.point is not None
    fork_id = f"{parent.job_id}-fork"
    driver = Driver(client, parent.model_copy(update={"job_id": fork_id}))
    try:
        plain = workers.start()
        await start_job(client, parent, workers.task_queue)
        status = await wait_status(client.get_workflow_handle(parent.job_id),
                                   {"awaiting_review", "blocked", "failed"}, timeout=180)
        assert status.status == "awaiting_review", status
        plain.terminate()
        assert plain.wait(30) is not None
        first = workers.paused(cell.point, markers)
        await start_fork(
            client, store_url, parent.job_id, turn=1, new_id=fork_id,
            flags=EditFlags(add_sources=[], refresh_sources=[], drop_sources=[],
                            drop_notes=[], question="How does a download resume?"),
            signer="alice", key=reviewer_key("alice"), task_queue=workers.task_queue)
        await _reach(driver, marker, cell.name)
        await _kill(first, marker)
        workers.start()
        spec = await jobs.job_spec_of(client, fork_id)
        driver.spec = spec
        result = await driver.to_end()
        _finish(row, driver, result)
        await inspect_job(row, store_url, spec, result, driver.handle)
        if not retried(await driver.handle.fetch_history()):
            row.problems.append("no activity attempt was retried after the kill")
        await review(client, parent.job_id, "reject", reviewer="bob")
    finally:
        await driver.close()
        workers.stop_all()
    row.check()


# ------------------------------------------------------------------ server restart
@_in_this_run("server_restart")
async def test_server_restart(tmp_path: Path, docs: Path, task_queue: str, store_url: str,
                              fault_row: RowMaker) -> None:
    point = "run_tool_after_write"
    row = fault_row(Cell("server_restart", "Temporal dev server (persistent database) stopped "
                         "while a tool call's result was on its way, then restarted", point))
    markers = tmp_path / "markers"
    server = DevServer(tmp_path / "temporal.db", port=free_port(), headless=True,
                       log_path=tmp_path / "server.log")
    server.start()
    workers = Workers(server.address, task_queue, store_url, tmp_path / "worker.log")
    driver: Driver | None = None
    try:
        client = await server.wait_ready()
        spec = _spec(tmp_path, docs)
        workers.paused(point, markers)
        await start_job(client, spec, task_queue)
        driver = Driver(client, spec)
        await _reach(driver, markers / f"{point}.reached", row.cell)
        server.stop()
        (markers / f"{point}.release").write_text("", encoding="utf-8")
        # the activity returns its result while no server listens
        await wait_for(lambda: (markers / f"{point}.passed").exists(), 30,
                       "the released tool call returning")
        server.start()
        driver.set_client(await server.wait_ready())
        result = await driver.to_end()
        _finish(row, driver, result)
        await inspect_job(row, store_url, spec, result, driver.handle)
    finally:
        if driver is not None:
            await driver.close()
        workers.stop_all()
        server.stop()
        if (tmp_path / "server.log").exists():
            print((tmp_path / "server.log").read_text(errors="replace")[-3000:])
    row.check()


# --------------------------------------------------------------- PostgreSQL restart
async def _pending_failure(driver: Driver, activity: str) -> str | None:
    desc = await driver.handle.describe()
    for pending in desc.raw_description.pending_activities:
        if pending.activity_type.name == activity and pending.HasField("last_failure"):
            return pending.last_failure.message or "failed"
    return None


@_in_this_run("postgres_restart")
async def test_postgres_restart(temporal_env: WorkflowEnvironment, tmp_path: Path,
                                docs: Path, task_queue: str, fault_row: RowMaker) -> None:
    import asyncpg

    import artifacts

    point = "draft_before_write"
    row = fault_row(Cell("postgres_restart", "PostgreSQL (the cell's own server) stopped "
                         "while the draft's revision insert waited inside it, then restarted",
                         point))
    pg = OwnPostgres()
    why = pg.unavailable()
    if why is not None:
        row.note = f"skipped: {why}"
        pytest.skip(why)
    client: Client = temporal_env.client
    markers = tmp_path / "markers"
    workers: Workers | None = None
    driver: Driver | None = None
    holder: Any = None
    try:
        pg.init()
        pg.start()
        await pg.wait_ready()
        store = await artifacts.open_store(pg.url, migrate=True)
        await store.close()
        spec = _spec(tmp_path, docs)
        workers = Workers(client.service_client.config.target_host, task_queue, pg.url,
                          tmp_path / "worker.log")
        workers.paused(point, markers)
        await start_job(client, spec, task_queue)
        driver = Driver(client, spec)
        await _reach(driver, markers / f"{point}.reached", row.cell)
        # hold the table: the draft's insert will wait inside the server, mid-transaction
        holder = await asyncpg.connect(host="127.0.0.1", port=pg.port, user="postgres",
                                       database="postgres")
        await holder.execute("BEGIN; LOCK TABLE artifacts IN SHARE MODE")
        (markers / f"{point}.release").write_text("", encoding="utf-8")

        async def insert_waits() -> bool:
            # the insert waits as soon as it is parsed (the table lock is taken then), so
            # pg_stat_activity may still show the previous statement: ask pg_locks
            return bool(await holder.fetchval(
                "SELECT count(*) FROM pg_locks WHERE NOT granted "
                "AND relation = 'artifacts'::regclass"))

        await wait_for(insert_waits, 60, "the draft's revision insert waiting in PostgreSQL")
        pg.stop("fast")  # every open transaction is rolled back, the holder's too
        failure = await wait_for(lambda: _pending_failure(driver, "draft"), 60,
                                 "the in-flight write's attempt failing")
        row.note = f"in-flight attempt failed: {failure[:200]}"
        pg.start()
        await pg.wait_ready()
        result = await _to_end_with_operator(driver, row)
        _finish(row, driver, result)
        await inspect_job(row, pg.url, spec, result, driver.handle)
        await _one_draft_revision(row, pg.url, spec)
    finally:
        if holder is not None:
            with contextlib.suppress(Exception):
                await holder.close(timeout=5)
        if driver is not None:
            await driver.close()
        if workers is not None:
            workers.stop_all()
        print(pg.log())
        pg.remove()
    row.check()


async def _to_end_with_operator(driver: Driver, row: Row) -> JobResult | None:
    """To the end; if an activity's bound ran out meanwhile, a signed retry (noted)."""
    while True:
        ended = await driver.until(
            lambda d: d.execution != "RUNNING"
            or (d.live is not None and d.live.status == "needs_operator"), END_DEADLINE)
        if not ended or driver.execution != "RUNNING":
            return await driver.to_end(deadline=5)
        row.note += f"; {visible_reason(driver.live)}, then a signed retry"
        await driver.retry_as_operator()


async def _one_draft_revision(row: Row, store_url: str, spec: JobSpec) -> None:
    import artifacts
    from activities.runtime import principal_of

    store = await artifacts.open_store(store_url, migrate=False)
    try:
        history = await store.history("article_draft", f"{spec.job_id}.draft",
                                      principal=principal_of(spec))
    finally:
        await store.close()
    if len(history) != 1:
        row.duplicate_revisions += max(0, len(history) - 1)
        row.problems.append(f"draft revisions after the restart: {len(history)}")


# ------------------------------------------------------- faults an operator must fix
async def _operator_fault(row: Row, driver: Driver, fix: Callable[[], None]) -> JobResult | None:
    """The fault is in place: wait for a visible reason (within ``REASON_WINDOW``), fix,
    send a signed retry if the job needs an operator, and drive it to its end."""
    shown = await driver.until(
        lambda d: visible_reason(d.live) is not None or d.execution != "RUNNING", REASON_WINDOW)
    if shown and driver.execution == "RUNNING":
        row.note = f"showed {visible_reason(driver.live)!r}"[:300]
    else:
        row.stuck_without_reason = 1
        row.note = (f"no visible reason within {REASON_WINDOW:.0f} s "
                    f"(status {driver.live.status if driver.live else driver.execution})")
    fix()
    if await driver.retry_as_operator():
        row.note += "; fixed, signed retry"
    return await driver.to_end()


def _mount_or_skip(row: Row, why: str | None) -> None:
    if why is not None:
        row.note = f"skipped: {why}"
        pytest.skip(f"cannot mount here: {why}")


def _integrity(row: Row, db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        verdict = conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()
    if verdict != "ok":
        row.problems.append(f"SQLite integrity_check: {verdict}")


@_in_this_run("store_read_only")
@needs_operator
async def test_store_read_only(temporal_env: WorkflowEnvironment, tmp_path: Path, docs: Path,
                               task_queue: str, fault_row: RowMaker) -> None:
    point = "draft_before_write"
    row = fault_row(Cell("store_read_only", "the SQLite store's folder made read-only mid-job "
                         "(a worker restarted after it; a read-only mount: root ignores file "
                         "modes)", point))
    folder = tmp_path / "store"
    folder.mkdir()
    _mount_or_skip(row, bind_read_only(folder))  # probe: this container may mount?
    unmount(folder)
    store_url = f"sqlite+aiosqlite:///{folder / 'store.db'}"
    client: Client = temporal_env.client
    markers = tmp_path / "markers"
    workers = Workers(client.service_client.config.target_host, task_queue, store_url,
                      tmp_path / "worker.log")
    spec = _spec(tmp_path, docs)
    driver = Driver(client, spec)
    try:
        first = workers.paused(point, markers)
        await start_job(client, spec, task_queue)
        await _reach(driver, markers / f"{point}.reached", row.cell)
        await _kill(first, markers / f"{point}.reached")
        _mount_or_skip(row, bind_read_only(folder))
        workers.start()
        result = await _operator_fault(row, driver, lambda: unmount(folder))
        _finish(row, driver, result)
        await inspect_job(row, store_url, spec, result, driver.handle)
        _integrity(row, folder / "store.db")
    finally:
        await driver.close()
        workers.stop_all()
        if mounted(folder):
            unmount(folder)
    row.check()


@_in_this_run("publish_folder_read_only")
@needs_operator
async def test_publish_folder_read_only(temporal_env: WorkflowEnvironment, tmp_path: Path,
                                        docs: Path, task_queue: str, store_url: str,
                                        fault_row: RowMaker) -> None:
    row = fault_row(Cell("publish_folder_read_only", "the destination folder made read-only "
                         "before publishing (a read-only mount)"))
    client: Client = temporal_env.client
    spec = _spec(tmp_path, docs)
    destination = Path(spec.destination)
    destination.mkdir(parents=True)
    workers = Workers(client.service_client.config.target_host, task_queue, store_url,
                      tmp_path / "worker.log")
    driver = Driver(client, spec)
    try:
        workers.start()
        await start_job(client, spec, task_queue)
        if not await driver.until(lambda d: d.live is not None
                                  and d.live.status == "awaiting_review", 120, approve=False):
            raise AssertionError(f"never awaiting review: {driver.live}")
        _mount_or_skip(row, bind_read_only(destination))
        result = await _operator_fault(row, driver, lambda: unmount(destination))
        _finish(row, driver, result)
        await inspect_job(row, store_url, spec, result, driver.handle)
    finally:
        await driver.close()
        workers.stop_all()
        if mounted(destination):
            unmount(destination)
    row.check()


@_in_this_run("store_disk_full")
@needs_operator
async def test_store_disk_full(temporal_env: WorkflowEnvironment, tmp_path: Path, docs: Path,
                               task_queue: str, fault_row: RowMaker) -> None:
    point = "draft_before_write"
    row = fault_row(Cell("store_disk_full", "the store's file system (a 16 MiB tmpfs) full "
                         "when the draft is written", point))
    folder = tmp_path / "storefs"
    _mount_or_skip(row, mount_tmpfs(folder, "16m"))
    store_url = f"sqlite+aiosqlite:///{folder / 'store.db'}"
    client: Client = temporal_env.client
    markers = tmp_path / "markers"
    workers = Workers(client.service_client.config.target_host, task_queue, store_url,
                      tmp_path / "worker.log")
    spec = _spec(tmp_path, docs)
    driver = Driver(client, spec)
    try:
        workers.paused(point, markers)
        await start_job(client, spec, task_queue)
        await _reach(driver, markers / f"{point}.reached", row.cell)
        filler = fill(folder)
        (markers / f"{point}.release").write_text("", encoding="utf-8")
        result = await _operator_fault(row, driver, filler.unlink)
        _finish(row, driver, result)
        await inspect_job(row, store_url, spec, result, driver.handle)
        _integrity(row, folder / "store.db")
    finally:
        await driver.close()
        workers.stop_all()
        await asyncio.to_thread(unmount, folder)
    row.check()
