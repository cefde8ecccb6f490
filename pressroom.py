"""The Pressroom command line: parses arguments, calls into the package, prints results.

It stays thin on purpose: every command delegates to workflows, activities, the context
engine or the artifact store, and turns their typed errors into one clear line.
"""

from __future__ import annotations

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


if __name__ == "__main__":
    app()
