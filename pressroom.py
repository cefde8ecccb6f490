"""The Pressroom command line: parses arguments, calls into the package, prints results.

It stays thin on purpose: every command delegates to workflows, activities, the context
engine or the artifact store, and turns their typed errors into one clear line.
"""

from __future__ import annotations

import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

T = TypeVar("T")

app = typer.Typer(help="Pressroom: durable research jobs with auditable context assembly.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
console = Console()
err_console = Console(stderr=True)


@app.command()
def demo() -> None:
    """Run the example job end to end: server + worker, draft, approval, publish, receipt."""
    from workflows.embedded import run_demo

    raise typer.Exit(_job_cmd(run_demo(console)) or 0)


# --- durable jobs: dev, worker, run, status, list, approve/request-changes/reject, resolve,
# --- explain, cancel (job-runtime helper; bodies live in workflows.commands) ---

_ADDR_HELP = "Temporal frontend HOST:PORT (default $PRESSROOM_TEMPORAL_ADDRESS or localhost:7233)"
_QUEUE_HELP = "Task queue (default $PRESSROOM_TASK_QUEUE or 'pressroom')"


def _job_cmd(coro: Coroutine[Any, Any, T]) -> T:
    """Run a job command; its expected errors become one line on stderr and exit code 1."""
    import asyncio

    from temporalio.service import RPCError

    from artifacts import StoreError
    from context.errors import ContextError
    from contracts.errors import JobError

    try:
        return asyncio.run(coro)
    except (JobError, StoreError, ContextError, RPCError) as exc:
        err_console.print(f"[red]error:[/red] {exc}", soft_wrap=True, highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err_console.print("interrupted")
        raise typer.Exit(130) from None
    except Exception as exc:  # a bug, not bad input: still one line unless debugging
        import os

        if os.environ.get("PRESSROOM_DEBUG"):
            raise
        err_console.print(f"[red]error:[/red] {type(exc).__name__}: {exc} "
                          "(PRESSROOM_DEBUG=1 shows the traceback)", soft_wrap=True,
                          highlight=False)
        raise typer.Exit(1) from None


def _queue(task_queue: str | None) -> str:
    from workflows.temporal_config import task_queue_from_env

    return task_queue or task_queue_from_env()


@app.command()
def dev(
    port: int = typer.Option(7233, help="gRPC port of the dev server (Web UI on port + 1000)."),
    headless: bool = typer.Option(False, help="Run without the Web UI."),
    task_queue: str | None = typer.Option(None, help=_QUEUE_HELP),
) -> None:
    """Start the embedded Temporal server ($PRESSROOM_HOME/temporal.db) and a worker."""
    from workflows.embedded import run_dev

    _job_cmd(run_dev(console, port=port, headless=headless, task_queue=_queue(task_queue)))


@app.command()
def worker(
    address: str | None = typer.Option(None, help=_ADDR_HELP),
    namespace: str | None = typer.Option(None, help="Temporal namespace (default 'default')."),
    task_queue: str | None = typer.Option(None, help=_QUEUE_HELP),
    tls_cert: str | None = typer.Option(None, help="Client certificate (PEM) for mTLS."),
    tls_key: str | None = typer.Option(None, help="Client private key (PEM) for mTLS."),
    tls_ca: str | None = typer.Option(None, help="Server root CA (PEM)."),
    store_url: str | None = typer.Option(None, help="Artifact store URL (default SQLite)."),
    helper_processes: int | None = typer.Option(
        None, min=0, help="Processes running context assembly (default: "
                          "$PRESSROOM_HELPER_PROCESSES, else 1 on a multi-core machine)."),
) -> None:
    """Join an existing Temporal cluster as a Pressroom worker (runs until Ctrl-C)."""
    from worker import run_worker
    from workflows.temporal_config import address_from_env

    console.print(f"pressroom worker → {address or address_from_env()}, "
                  f"queue {_queue(task_queue)!r}")
    _job_cmd(run_worker(address, namespace, task_queue=_queue(task_queue), store_url=store_url,
                        tls_cert=tls_cert, tls_key=tls_key, tls_ca=tls_ca,
                        helper_processes=helper_processes))


@app.command()
def run(
    job_file: Annotated[Path, typer.Argument(help="The job spec (YAML).")],
    wait: bool = typer.Option(False, "--wait", help="Follow the stages until review/blocked/end."),
    address: str | None = typer.Option(None, help=_ADDR_HELP),
    task_queue: str | None = typer.Option(None, help=_QUEUE_HELP),
) -> None:
    """Validate JOB_FILE and start the job (workflow id = job id; an existing id is refused)."""
    from workflows import commands

    _job_cmd(commands.run(console, job_file, wait=wait, task_queue=_queue(task_queue),
                          address=address))


@app.command()
def status(job: str, address: str | None = typer.Option(None, help=_ADDR_HELP)) -> None:
    """Show a job's status, stage, pending draft, manifests and receipt."""
    from workflows import commands

    _job_cmd(commands.show_status(console, job, address))


@app.command("list")
def list_jobs(address: str | None = typer.Option(None, help=_ADDR_HELP)) -> None:
    """List the jobs on the cluster."""
    from workflows import commands

    _job_cmd(commands.list_all(console, address))


def _reviewer(reviewer: str | None) -> str:
    import getpass
    import os

    return reviewer or os.environ.get("PRESSROOM_REVIEWER") or getpass.getuser()


_REVIEWER_HELP = "Reviewer principal (default $PRESSROOM_REVIEWER or your user name)."


@app.command()
def approve(job: str, reviewer: str | None = typer.Option(None, "--as", help=_REVIEWER_HELP),
            yes: bool = typer.Option(False, "--yes", help="Do not ask; for scripts."),
            address: str | None = typer.Option(None, help=_ADDR_HELP)) -> None:
    """Show the pending draft and approve it for publication."""
    from workflows import commands

    _job_cmd(commands.review(console, job, "approve", reviewer=_reviewer(reviewer), comments=[],
                             yes=yes, address=address))


@app.command("request-changes")
def request_changes(
    job: str,
    message: Annotated[list[str], typer.Option("-m", "--message", help="A requested change.")],
    reviewer: str | None = typer.Option(None, "--as", help=_REVIEWER_HELP),
    yes: bool = typer.Option(False, "--yes", help="Do not ask; for scripts."),
    address: str | None = typer.Option(None, help=_ADDR_HELP),
) -> None:
    """Send the pending draft back with comments (they become the next draft's task input)."""
    from workflows import commands

    _job_cmd(commands.review(console, job, "request_changes", reviewer=_reviewer(reviewer),
                             comments=message, yes=yes, address=address))


@app.command()
def reject(job: str, reviewer: str | None = typer.Option(None, "--as", help=_REVIEWER_HELP),
           yes: bool = typer.Option(False, "--yes", help="Do not ask; for scripts."),
           address: str | None = typer.Option(None, help=_ADDR_HELP)) -> None:
    """Reject the pending draft; the job ends 'rejected' and nothing is published."""
    from workflows import commands

    _job_cmd(commands.review(console, job, "reject", reviewer=_reviewer(reviewer), comments=[],
                             yes=yes, address=address))


@app.command()
def resolve(
    job: str,
    add_source: str | None = typer.Option(
        None, help="A source to add, as YAML/JSON (e.g. '{kind: document, name: n, path: p}')."),
    refresh: str | None = typer.Option(None, help="Name of a source to re-acquire."),
    budget: int | None = typer.Option(None, help="New evidence budget (tokens)."),
    context_limit: int | None = typer.Option(None, help="New model context budget (tokens)."),
    accept: str | None = typer.Option(None, help="Accept a revision: CANONICAL_KEY=REVISION."),
    note: str = typer.Option("", help="Why (recorded with the resolution)."),
    address: str | None = typer.Option(None, help=_ADDR_HELP),
) -> None:
    """Unblock a blocked job (add/refresh a source, raise the budget, accept a revision)."""
    from workflows import commands

    _job_cmd(commands.resolve(console, job, dict(
        add_source=add_source, refresh=refresh, budget=budget, context_limit=context_limit,
        accept=accept, note=note), address))


@app.command()
def explain(job: str, step: str | None = typer.Option(None, help="Only this step or stage."),
            address: str | None = typer.Option(None, help=_ADDR_HELP)) -> None:
    """Show the job's context manifests: included, excluded, partitions, transforms, cache."""
    from workflows import commands

    _job_cmd(commands.explain(console, job, step, address))


@app.command()
def cancel(job: str, address: str | None = typer.Option(None, help=_ADDR_HELP)) -> None:
    """Cancel a running job (nothing is published)."""
    from workflows import commands

    _job_cmd(commands.cancel(console, job, address))


# --- artifact store: `pressroom selfcheck`, `pressroom db upgrade|downgrade` (store helper) ---

db_app = typer.Typer(help="Manage the artifact store's database schema (Alembic migrations).",
                     no_args_is_help=True)
app.add_typer(db_app, name="db")

_URL_HELP = ("Database URL (sqlite+aiosqlite:///path or postgresql+asyncpg://user@host/db); "
             "default: $PRESSROOM_DATABASE_URL or $PRESSROOM_HOME/pressroom.db")


def _migrate(direction: str, revision: str, url: str | None) -> None:
    import asyncio

    from artifacts import StoreError
    from artifacts.engine import connect, default_url, redact
    from artifacts.migrate import current_revision, downgrade, upgrade

    async def run() -> tuple[str | None, str | None]:
        db = await connect(url)
        try:
            before = await current_revision(db)
            step = upgrade if direction == "upgrade" else downgrade
            return before, await step(db, revision)
        finally:
            await db.dispose()

    try:
        before, after = asyncio.run(run())
    except StoreError as exc:
        err_console.print(f"[red]{type(exc).__name__}:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(1) from None
    except Exception as exc:  # alembic reports unknown revisions with its own errors
        err_console.print(f"[red]{direction} to {revision!r} failed:[/red] {exc}")
        raise typer.Exit(1) from None
    console.print(f"{redact(url or default_url())}: schema {before or 'empty'} → "
                  f"{after or 'empty'}", soft_wrap=True)


@db_app.command("upgrade")
def db_upgrade(
    revision: str = typer.Argument("head", help="Target revision (default: head)."),
    url: str | None = typer.Option(None, "--url", help=_URL_HELP),
) -> None:
    """Migrate the store's schema up (servers run this; SQLite also migrates on first use)."""
    _migrate("upgrade", revision, url)


@db_app.command("downgrade")
def db_downgrade(
    revision: str = typer.Argument(..., help="Target revision; 'base' drops every table."),
    url: str | None = typer.Option(None, "--url", help=_URL_HELP),
) -> None:
    """Migrate the store's schema down to REVISION."""
    _migrate("downgrade", revision, url)


@app.command()
def selfcheck(
    url: str | None = typer.Option(None, "--url", help=_URL_HELP),
) -> None:
    """Check the artifact store: put/get, conflicts, races, scoping, tamper detection."""
    import asyncio

    from rich.table import Table

    from artifacts.selfcheck import run_selfcheck

    results = asyncio.run(run_selfcheck(url))
    table = Table(title="Pressroom artifact store self-check")
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail", overflow="fold")
    table.add_column("seconds", justify="right")
    for r in results:
        table.add_row(r.name, "[green]ok[/green]" if r.ok else "[red]FAILED[/red]", r.detail,
                      f"{r.seconds:.3f}")
    console.print(table)
    if not all(r.ok for r in results):
        raise typer.Exit(1)


@app.command()
def version() -> None:
    """Print Pressroom's version."""
    from importlib.metadata import version as _v

    console.print(_v("pressroom"))


eval_app = typer.Typer(help="Measure Pressroom's machinery against fixed datasets.",
                       no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@eval_app.command("context")
def eval_context(
    cases: str | None = typer.Option(None, help="Cases JSONL (default: the bundled dataset)."),
    sources: str | None = typer.Option(None, help="Sources JSONL (default: bundled dataset)."),
    policy: str = typer.Option("default", help="Context policy: default, strict or a YAML path."),
    budget: int | None = typer.Option(None, help="Replace every case's evidence budget."),
    output: str = typer.Option("reports/context", help="Directory for the reports."),
) -> None:
    """Compare dump-all with the context engine; exit 0 gate pass, 1 gate fail, 2 bad input."""
    from evals.context_lab.command import run_command
    from evals.context_lab.runner import BUNDLED_CASES, BUNDLED_SOURCES

    code = run_command(cases=Path(cases) if cases else BUNDLED_CASES,
                       sources=Path(sources) if sources else BUNDLED_SOURCES,
                       policy=policy, budget=budget, output=Path(output), console=console,
                       err_console=err_console)
    raise typer.Exit(code)


def main() -> None:
    """The console script: ``app()``, then an exit that skips interpreter teardown once a
    Temporal client was used.

    The SDK's Rust core keeps threads that may still release Python objects while a
    short-lived process finalizes, which aborts it ("PyGILState_Release: thread state
    must be current", temporalio/sdk-python#300) — seen here on ``pressroom status`` of
    an unknown job under load. Every command has finished its work, closed its stores and
    printed by then, so the streams are flushed and the process leaves with its code.
    """
    import os

    try:
        app()
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # sys.exit("message"): Python prints it and exits 1
            print(exc.code, file=sys.stderr)
            code = 1
    if "temporalio.bridge.client" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
