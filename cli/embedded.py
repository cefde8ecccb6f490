"""``pressroom dev`` and ``pressroom demo``: the embedded server plus an in-process worker.

``dev`` keeps the Temporal dev server (database ``$PRESSROOM_HOME/temporal.db``, Web UI on
the default port) and a worker running until Ctrl-C. ``demo`` builds the example's fixture
repositories, starts its own server and worker, runs ``examples/job.yaml`` under a fresh
job id, shows the draft, asks for approval on a TTY (approves as ``demo-reviewer``
otherwise, signing with the demo reviewer's key, made and registered under
``$PRESSROOM_HOME`` on first use), publishes, prints the receipt and the article's path, and
shuts down. On a terminal it also serves the review console (the entry point passes its
runner in: this layer does not import the console) and prints its address, a one-time
sign-in link and the password for the demo reviewer; the draft may then be decided in the
browser or at the prompt, whichever comes first.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import sys
from collections.abc import Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from rich.console import Console

from cli import mcp_demo
from cli.commands import follow, show_draft
from cli.reviewer_keys import keygen, pin_reviewers, signing_key
from client import jobs
from client.devserver import DevServer, free_port, port_free
from contracts.errors import JobError
from contracts.job_spec import JobSpec, load_job_spec
from contracts.signing import key_file_name
from settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES_DIR = REPO_ROOT / "examples"
EXAMPLE_JOB = EXAMPLES_DIR / "job.yaml"
MCP_EXAMPLE_JOB = EXAMPLES_DIR / "mcp_job.yaml"
DEMO_REVIEWER = "demo-reviewer"


class ConsoleRunner(Protocol):
    """``webconsole.server.demo_console``'s shape: serves the console for ``reviewer``,
    yielding something with ``url``, ``signin_url`` and ``password``."""

    def __call__(self, settings: Settings, *, reviewer: str,
                 key: Ed25519PrivateKey) -> contextlib.AbstractAsyncContextManager[Any]: ...


class WorkerRunner(Protocol):
    """``worker.run_worker``'s shape. The entry point (``pressroom.py``) passes it in: the
    worker is an entry point of its own, which no package imports."""

    def __call__(self, settings: Settings, *, address: str | None = ...,
                 task_queue: str | None = ..., ready: asyncio.Event | None = ...,
                 stop: asyncio.Event | None = ...,
                 helper_processes: int | None = ...) -> Coroutine[Any, Any, None]: ...


async def _serve(run_worker: WorkerRunner, server: DevServer, settings: Settings,
                 task_queue: str, stop: asyncio.Event, ready: asyncio.Event,
                 helper_processes: int | None) -> None:
    # the embedded server is local and plain: a Temporal Cloud API key, TLS files or namespace
    # exported for other work (TEMPORAL_*) must not reach it
    await run_worker(settings.model_copy(update={"temporal_env": {}}), address=server.address,
                     task_queue=task_queue, ready=ready,
                     stop=stop, helper_processes=helper_processes)


@contextlib.asynccontextmanager
async def embedded(console: Console, settings: Settings, run_worker: WorkerRunner, *,
                   db: Path, port: int, headless: bool, task_queue: str,
                   helper_processes: int | None = None) -> Any:
    server = DevServer(db, port=port, headless=headless)
    server.start()
    stop, ready = asyncio.Event(), asyncio.Event()
    worker_task: asyncio.Task[None] | None = None
    try:
        client = await server.wait_ready()
        worker_task = asyncio.create_task(_serve(run_worker, server, settings, task_queue,
                                                 stop, ready, helper_processes))
        await asyncio.wait({worker_task, asyncio.create_task(ready.wait())},
                           return_when=asyncio.FIRST_COMPLETED)
        if worker_task.done():
            worker_task.result()  # raises the worker's startup error
        console.print(f"Temporal dev server {server.address} (db {db})"
                      + (f", Web UI {server.ui_url}" if server.ui_url else ""))
        yield server, client
    finally:
        stop.set()
        if worker_task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker_task, 15)
        server.stop()


def with_examples(settings: Settings, *job_folders: Path) -> Settings:
    """``settings`` whose source and publish roots also hold the bundled ``examples/``
    folder (and ``job_folders``): what ``pressroom dev`` and ``demo`` run, so the example
    job — its workspace and destination relative to ``examples/`` — works as written. A
    worker joining a cluster (``pressroom worker``) gets only the roots it is given."""
    extra = (EXAMPLES_DIR, *job_folders)
    return settings.model_copy(update={
        "source_roots": (*settings.source_roots, *extra),
        "publish_roots": (*settings.publish_roots, *extra)})


async def run_dev(console: Console, settings: Settings, run_worker: WorkerRunner, *,
                  port: int, headless: bool, task_queue: str) -> None:
    settings = with_examples(settings)
    settings.home.mkdir(parents=True, exist_ok=True)
    db = settings.home / "temporal.db"
    async with embedded(console, settings, run_worker, db=db, port=port, headless=headless,
                        task_queue=task_queue):
        console.print(f"worker on task queue {task_queue!r}; Ctrl-C stops server and worker")
        forever = asyncio.Event()
        loop = asyncio.get_running_loop()
        import signal

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, forever.set)
        await forever.wait()
    console.print("stopped")


def _build_fixtures(console: Console, settings: Settings) -> None:
    """Build the example's fixtures under ``settings.fixtures_dir`` — where the in-process
    worker, given the same settings, resolves ``${PRESSROOM_FIXTURES}``."""
    path = REPO_ROOT / "examples" / "build_fixtures.py"
    spec = importlib.util.spec_from_file_location("pressroom_example_fixtures", path)
    if spec is None or spec.loader is None:
        raise JobError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    target = settings.fixtures_dir
    module.build_fixtures(target)
    console.print(f"fixture repositories built under {target}")


def example_job(name: str, fixtures: Path) -> Path:
    """The job file of example ``name``: ``retry`` (``examples/job.yaml``), ``asyncio``
    (rendered by the fixture build beside the standard-library corpus, whose commit it
    pins) or ``mcp`` (``examples/mcp_job.yaml``: an MCP server and a live page,
    ``cli.mcp_demo``)."""
    if name == "retry":
        return EXAMPLE_JOB
    if name == "asyncio":
        return fixtures / "asyncio_job.yaml"
    if name == "mcp":
        return MCP_EXAMPLE_JOB
    raise JobError(f"unknown example {name!r}; the examples are 'retry', 'asyncio' and "
                   "'mcp'")


def demo_reviewer_key(console: Console, settings: Settings) -> Ed25519PrivateKey:
    """The demo reviewer's signing key, made and registered on first use.

    The demo plays the reviewer, so it holds the key; a real deployment's reviewers make
    their own (``pressroom reviewer keygen``) and the operator registers their public keys.
    """
    path = settings.keys_dir / f"{key_file_name(DEMO_REVIEWER)}.key"
    if not path.exists():
        made = keygen(settings, DEMO_REVIEWER, register=True)
        console.print(f"made the demo reviewer's key {made.private_key} "
                      f"({made.public_key[:20]}…)", highlight=False)
    return signing_key(settings, DEMO_REVIEWER, path)


def demo_spec(home: Path, job_file: Path = EXAMPLE_JOB) -> JobSpec:
    base = load_job_spec(job_file)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return base.model_copy(update={"job_id": f"{base.job_id}-{stamp}",
                                   "destination": str(home / "published")})


async def _typed_line(prompt: str, default: str) -> str:
    """A line typed on the terminal, read without blocking the event loop (the worker and
    the console run on it while the reviewer thinks)."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()
    print(f"{prompt} [{default}]: ", end="", flush=True)

    def ready() -> None:
        if not answer.done():
            answer.set_result(sys.stdin.readline())

    loop.add_reader(sys.stdin.fileno(), ready)
    try:
        return (await answer).strip() or default
    finally:
        loop.remove_reader(sys.stdin.fileno())


async def _decided_elsewhere(client: Any, job_id: str, revision: int, grace: float) -> None:
    """Returns once the draft ``revision`` is no longer the one awaiting review (a reviewer
    decided in the console)."""
    while True:
        view = await jobs.view_job(client, job_id, worker_grace=grace)
        live = view.live
        if (live is None or live.status != "awaiting_review" or live.pending_draft is None
                or live.pending_draft.revision != revision):
            return
        await asyncio.sleep(1.0)


async def _prompt_or_console(client: Any, job_id: str, revision: int, grace: float,
                             with_console: bool) -> str | None:
    """The decision typed at the prompt, or ``None`` when the console decided first."""
    typed = asyncio.create_task(_typed_line("approve / changes / reject", "approve"))
    if not with_console:
        return await typed
    elsewhere = asyncio.create_task(_decided_elsewhere(client, job_id, revision, grace))
    done, _ = await asyncio.wait({typed, elsewhere}, return_when=asyncio.FIRST_COMPLETED)
    for task in (typed, elsewhere):
        if task not in done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return typed.result() if typed in done else None


async def run_demo(console: Console, settings: Settings, run_worker: WorkerRunner, *,
                   interactive: bool | None = None, example: str = "retry",
                   console_runner: ConsoleRunner | None = None) -> int:
    home = settings.home
    home.mkdir(parents=True, exist_ok=True)
    job_file = example_job(example, settings.fixtures_dir)
    settings = with_examples(settings, job_file.parent)
    _build_fixtures(console, settings)
    key = demo_reviewer_key(console, settings)
    spec, _pinned = pin_reviewers(demo_spec(home, job_file), settings)
    port = 7233 if port_free(7233) and port_free(8233) else free_port()
    task_queue = f"pressroom-demo-{spec.job_id}"
    tty = sys.stdin.isatty() if interactive is None else interactive
    # One job: a context-assembly helper process would only add its start-up (≈ 1.3 s of
    # imports before the first step) and run nothing concurrently.
    async with contextlib.AsyncExitStack() as stack:
        if example == "mcp":  # the operator's part: a server file, a page, loopback rules
            page = stack.enter_context(mcp_demo.serving(
                mcp_demo.page_path(spec), settings.fixtures_dir / mcp_demo.DEMO_PAGE))
            spec = mcp_demo.demo_job(spec, page.port)
            made = mcp_demo.setup(home, settings.fixtures_dir)
            settings = mcp_demo.demo_settings(settings, made.servers_file)
            console.print(f"MCP server 'git' (mcp-server-git over {made.repo}) defined in "
                          f"{made.servers_file}; live page {mcp_demo.page_url(spec)} served "
                          "on loopback, which only this demo's worker may fetch",
                          highlight=False, soft_wrap=True)
        _server, client = await stack.enter_async_context(embedded(
            console, settings, run_worker, db=home / "demo-temporal.db", port=port,
            headless=port != 7233, task_queue=task_queue, helper_processes=0))
        await jobs.start_job(client, spec, task_queue=task_queue)
        console.print(f"job [bold]{spec.job_id}[/bold]: {spec.question}")
        grace = settings.worker_grace_seconds
        web = None
        if tty and console_runner is not None:
            web = await stack.enter_async_context(console_runner(
                settings.model_copy(update={"temporal_address": _server.address,
                                            "temporal_env": {}}),
                reviewer=DEMO_REVIEWER, key=key))
            console.print(f"review console [bold]{web.url}[/bold]\n  one-time sign-in "
                          f"{web.signin_url}\n  {DEMO_REVIEWER}'s password (signs a "
                          f"decision) {web.password}", highlight=False, soft_wrap=True)
        view = await follow(console, client, spec.job_id, worker_grace=grace)
        while view.live is not None and view.live.status == "awaiting_review":
            live, shown_hash = await show_draft(console, client, spec.job_id, settings)
            assert live.pending_draft is not None
            decision: jobs.Decision = "approve"
            comments: list[str] = []
            reviewer = DEMO_REVIEWER
            if tty:
                answer = await _prompt_or_console(client, spec.job_id,
                                                  live.pending_draft.revision, grace,
                                                  web is not None)
                if answer is None:
                    console.print("decided in the review console")
                    view = await follow(console, client, spec.job_id, worker_grace=grace)
                    continue
                if answer.startswith("c"):
                    decision = "request_changes"
                    comments = [await _typed_line("what should change", "be more specific")]
                elif answer.startswith("r"):
                    decision = "reject"
            else:
                console.print(f"not a TTY: approving as {DEMO_REVIEWER}")
            await jobs.review_job(client, spec.job_id, decision, reviewer=reviewer, key=key,
                                  comments=comments, draft_revision=live.pending_draft.revision,
                                  draft_hash=shown_hash, destination=live.destination,
                                  worker_grace=grace)
            view = await follow(console, client, spec.job_id, worker_grace=grace)
        if view.live is not None:  # blocked: show why and stop the demo
            console.print(f"[red]job is {view.summary}[/red]; see `pressroom explain`")
            return 1
        result = view.result
        if result is None or result.receipt is None:
            console.print(f"job ended {view.summary}; nothing published")
            return 0 if result is not None and result.status == "rejected" else 1
        receipt = result.receipt
        console.print("[green]published[/green]")
        console.print(f"  receipt {receipt.receipt_key}\n  content {receipt.content_hash}\n"
                      f"  review  {receipt.review_decision_id}\n  at      {receipt.published_at}",
                      highlight=False, soft_wrap=True)
        console.print(f"  article {receipt.location}", highlight=False, soft_wrap=True)
    return 0
