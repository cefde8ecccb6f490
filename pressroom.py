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
    """Run the main job end to end (placeholder until the workflow lands)."""
    err_console.print("[red]demo is not implemented yet[/red]")
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
