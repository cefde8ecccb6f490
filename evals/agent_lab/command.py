"""``pressroom eval agent``: run the questions, print a table (or ``--json``), gate.

Exit codes, as ``pressroom eval context``: 0 the release gate passes, 1 it fails (the
failing checks and their questions are printed), 2 the questions file is unusable (one line
naming the file and the field).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from evals.agent_lab.dataset import AgentDatasetError, load_questions
from evals.agent_lab.gate import AgentReleaseGate, release_gate
from evals.agent_lab.runner import QuestionResult, run_questions

EXIT_PASS, EXIT_GATE_FAILED, EXIT_UNUSABLE = 0, 1, 2


class AgentEvalReport(BaseModel):
    """What ``--json`` prints: every question's result (articles left out unless asked)
    and the gate."""

    model_config = ConfigDict(frozen=True)

    questions: list[QuestionResult]
    gate: AgentReleaseGate
    wall_s: float


def table(results: list[QuestionResult]) -> Table:
    out = Table(title="Offline agent eval")
    for name in ("question", "status", "key lines", "recall", "uninformative", "turns",
                 "tokens", "unread sources"):
        out.add_column(name, justify="left" if name in ("question", "status") else "right")
    for r in results:
        out.add_row(r.id, r.status, f"{r.key_lines_cited}/{r.key_lines}",
                    f"{r.key_line_recall:.2f}",
                    f"{len(r.uninformative_quotes)}/{r.findings}", str(r.turns),
                    str(r.tokens), ", ".join(r.unread_sources) or "-")
    return out


def run_command(*, questions: Path, as_json: bool, articles: bool, console: Console,
                err_console: Console) -> int:
    try:
        loaded = load_questions(questions)
    except AgentDatasetError as exc:
        err_console.print(f"[red]unusable input:[/red] {exc}", highlight=False, soft_wrap=True)
        return EXIT_UNUSABLE
    loop = asyncio.new_event_loop()
    try:
        started = loop.time()
        results = loop.run_until_complete(run_questions(loaded))
        wall = loop.time() - started
    finally:
        loop.close()
    if not articles:
        results = [r.model_copy(update={"article": ""}) for r in results]
    gate = release_gate(results)
    if as_json:
        report = AgentEvalReport(questions=results, gate=gate, wall_s=round(wall, 2))
        sys.stdout.write(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
    else:
        console.print(table(results))
        s = gate.summary
        console.print(f"mean key-line recall {s.mean_key_line_recall:.2f}; uninformative "
                      f"quotes {s.uninformative_share:.1%}; turns {s.total_turns}; tokens "
                      f"{s.total_tokens}; {wall:.1f} s", highlight=False)
        if articles:
            for r in results:
                console.print(f"\n--- {r.id}\n{r.article}", highlight=False, markup=False)
    out = err_console if as_json else console
    if gate.passed:
        out.print("[green]release gate: PASS[/green]")
        return EXIT_PASS
    out.print("[red]release gate: FAIL[/red]")
    for c in gate.checks:
        if not c.passed:
            out.print(f"  {c.name}: {', '.join(c.questions) or '(overall)'}", highlight=False,
                      soft_wrap=True)
    return EXIT_GATE_FAILED
