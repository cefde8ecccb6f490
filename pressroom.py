"""The Pressroom command line: parses arguments, calls into the package, prints results.

It stays thin on purpose: every command delegates to workflows, activities, the context
engine or the artifact store, and turns their typed errors into one clear line.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

app = typer.Typer(help="Pressroom: durable research jobs with auditable context assembly.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
console = Console()
err_console = Console(stderr=True)


@app.command()
def demo() -> None:
    """Run the main job end to end (until the workflow lands: the store's self-check)."""
    selfcheck(url=None)


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


if __name__ == "__main__":
    app()
