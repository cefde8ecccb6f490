"""``pressroom eval context``: run, write reports, print a summary, return the exit code.

Exit codes: 0 the release gate passes, 1 it fails (the failing checks and their cases are
printed), 2 the input is unusable (the message names the file, line and field). The CLI
front door (``pressroom.py``) only parses options and calls :func:`run_command`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from evals.context_lab.baseline_topk import DEFAULT_K
from evals.context_lab.errors import LabError
from evals.context_lab.gate import StrategyMetrics
from evals.context_lab.reports import write_reports
from evals.context_lab.runner import CANDIDATE, STRATEGIES, STRONGEST, EvalResult, run_context_eval
from evals.context_lab.topics import BOTH

EXIT_PASS, EXIT_GATE_FAILED, EXIT_UNUSABLE = 0, 1, 2


def summary_table(result: EvalResult) -> Table:
    table = Table(title="Context assembly eval")
    table.add_column("metric")
    for name in STRATEGIES:
        table.add_column(name, justify="right")
    rows: list[tuple[str, Callable[[StrategyMetrics], str]]] = [
        ("cases passed", lambda m: f"{m.passed_cases}/{m.cases}"),
        ("case pass rate", lambda m: f"{m.case_pass_rate:.2%}"),
        ("required-topic coverage", lambda m: f"{m.required_topic_coverage:.2%}"),
        ("forbidden exposures", lambda m: str(m.forbidden_exposures)),
        ("irrelevant exposures", lambda m: str(m.irrelevant_exposures)),
        ("budget compliance", lambda m: f"{m.budget_compliance:.2%}"),
        ("missing-evidence accuracy", lambda m: f"{m.missing_evidence_accuracy:.2%}"),
        ("complete manifests", lambda m: f"{m.complete_manifests}/{m.cases}"),
        ("grader checks passed", lambda m: str(m.passed_grades)),
        ("mean evidence tokens", lambda m: f"{m.mean_tokens:.1f}"),
    ]
    for label, fmt in rows:
        table.add_row(label, *(fmt(result.metrics[name]) for name in STRATEGIES))
    return table


def topic_summary(result: EvalResult) -> list[str]:
    """The topic modes in a few lines (the table above is the first mode's)."""
    modes = list(result.modes)
    if not modes:
        return []
    lines = [f"topic modes: {', '.join(modes)} (table: {modes[0]}); cases passed per mode: "
             + "; ".join(f"{name} " + " / ".join(
                 f"{result.modes[m].metrics[name].passed_cases}" for m in modes)
                 for name in STRATEGIES)]
    if len(modes) > 1:
        lines.append(f"passes only on labels ({CANDIDATE}): "
                     + (", ".join(result.label_only.get(CANDIDATE, [])) or "none"))
    lines.append("topics that need a label: " + (", ".join(
        f"{n.case_id}/{n.topic}" for n in result.label_needs) or "none"))
    return lines


def run_command(*, cases: Path, sources: Path, policy: str, budget: int | None,
                output: Path, console: Console, err_console: Console,
                baseline: str = STRONGEST, top_k: int = DEFAULT_K, topics: str = BOTH) -> int:
    try:
        result = run_context_eval(cases, sources, policy=policy, budget=budget, top_k=top_k,
                                  gate_baseline=baseline, topics=topics)
    except LabError as exc:
        err_console.print(f"[red]unusable input:[/red] {exc}", highlight=False, soft_wrap=True)
        return EXIT_UNUSABLE
    paths = write_reports(result, output)
    console.print(summary_table(result))
    for line in topic_summary(result):
        console.print(line, highlight=False, soft_wrap=True)
    gate = result.gate
    console.print(f"gate baseline: {gate.baseline} ("
                  + ("strongest" if gate.selection == "strongest" else "chosen") + ")",
                  highlight=False)
    console.print(f"improvements: {', '.join(gate.improvements) or 'none'}", highlight=False)
    console.print(f"regressions: {', '.join(gate.regressions) or 'none'}", highlight=False)
    console.print(f"reports: {', '.join(str(p) for p in paths)}", highlight=False)
    if gate.passed:
        console.print("[green]release gate: PASS[/green]")
        return EXIT_PASS
    console.print("[red]release gate: FAIL[/red]")
    for name, check in gate.failing.items():
        console.print(f"  {name}: {', '.join(check.cases) or '(no case)'}", highlight=False,
                      soft_wrap=True)
    return EXIT_GATE_FAILED
