"""The four report files of a context eval, written deterministically.

``context-comparison.json``  per-strategy metrics (every baseline side by side with the
                             candidate), the candidate against each baseline (case
                             improvements and regressions, a better / same / worse verdict
                             per metric), the baseline the gate compared against and why,
                             improvements, regressions, gate checks (each naming its
                             failing cases) and a per-case table with a column per strategy.
``context-comparison.md``    the same for people, saying where the candidate does not beat a
                             baseline.
``context-failures.md``      every failing case per strategy: failed graders with their
                             detail, the excluded sources with their reason, gate and
                             detail, and every candidate's acquisition outcome.
``context-packets.jsonl``    one line per case per strategy per topic mode
                             (``Packet.report_line`` and ``topics_mode``).

Every topic mode run (``--topics``) is reported: the first mode's metrics and per-case
table as above, both modes side by side in a ``topics`` block / "Topic modes" section,
failing cases per mode (``topic_report``).

No timestamps: two runs over the same inputs write byte-identical files. Files are
written to a temporary name and renamed, so a crash never leaves half a report.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from evals.context_lab.gate import METRIC_DIRECTION, CaseRun
from evals.context_lab.runner import BASELINES, CANDIDATE, STRATEGIES, EvalResult
from evals.context_lab.topic_report import (
    failure_sections,
    packet_runs,
    topics_block,
    topics_markdown,
)

SCHEMA = "pressroom-context-eval/v1"
REPORT_FILES = ("context-comparison.json", "context-comparison.md", "context-failures.md",
                "context-packets.jsonl")


def _change(base: CaseRun, cand: CaseRun) -> str:
    if cand.passed and not base.passed:
        return "improved"
    if base.passed and not cand.passed:
        return "regressed"
    return "same"


def _per_case(result: EvalResult) -> list[dict[str, Any]]:
    rows = []
    by_name = {name: {r.case.id: r for r in runs} for name, runs in result.runs.items()}
    for run in result.runs[CANDIDATE]:
        cid = run.case.id
        row: dict[str, Any] = {"case_id": cid}
        for name in STRATEGIES:
            r = by_name[name][cid]
            row[name] = {"passed": r.passed, "failed_graders": [g.name for g in r.failed],
                         "tokens": r.packet.budget_used, "status": r.packet.status}
        row["change"] = _change(by_name[result.gate.baseline][cid], run)  # vs the gate's
        rows.append(row)
    return rows


def comparison(result: EvalResult) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "policy": result.policy,
        "budget_override": result.budget_override,
        "cases_file": result.cases_path,
        "sources_file": result.sources_path,
        "strategies": {name: m.model_dump() for name, m in result.metrics.items()},
        "baselines": list(BASELINES),
        "top_k": result.top_k,
        "comparisons": {name: c.model_dump(exclude={"baseline"})
                        for name, c in result.comparisons.items()},
        "improvements": result.gate.improvements,
        "regressions": result.gate.regressions,
        "gate": {
            "baseline": result.gate.baseline,
            "baseline_selection": result.gate.selection,
            "passed": result.gate.passed,
            "checks": {k: c.model_dump() for k, c in result.gate.checks.items()},
        },
        "cases": _per_case(result),
        "topics": topics_block(result),
    }


def _md_comparison(result: EvalResult, data: dict[str, Any]) -> str:
    lines = [f"# Context assembly eval: {', '.join(BASELINES)} vs {CANDIDATE}", ""]
    p = result.policy
    lines.append(f"Policy `{p['id']}` revision {p['revision']} (`{p['digest']}`)"
                 + (f", budget override {result.budget_override}" if result.budget_override
                    else "") + ".")
    how = ("the strongest baseline: most cases passed, then most grader checks passed, "
           "then required-topic coverage, then fewest forbidden exposures"
           if result.gate.selection == "strongest" else "chosen with --baseline")
    lines += ["", f"**Release gate: {'PASS' if result.gate.passed else 'FAIL'}** against "
              f"`{result.gate.baseline}` ({how}). `top-k` k = {result.top_k}.", "",
              "| metric | " + " | ".join(STRATEGIES) + " |",
              "|---|" + "---|" * len(STRATEGIES)]
    for key in next(iter(data["strategies"].values())):
        if key == "strategy":
            continue
        lines.append(f"| {key} | " + " | ".join(str(data["strategies"][s][key])
                                                for s in STRATEGIES) + " |")
    lines += ["", f"## {CANDIDATE} against each baseline", "",
              f"Verdict for {CANDIDATE} per metric (`mean_tokens`: fewer is better).", "",
              "| metric | " + " | ".join(BASELINES) + " |", "|---|" + "---|" * len(BASELINES)]
    for key in METRIC_DIRECTION:
        lines.append(f"| {key} | " + " | ".join(
            result.comparisons[b].metrics[key] if result.comparisons[b].metrics[key] != "worse"
            else "WORSE" for b in BASELINES) + " |")
    lines.append("")
    for b in BASELINES:
        c = result.comparisons[b]
        lines.append(f"- vs `{b}`: {len(c.improvements)} improvement(s), "
                     f"{len(c.regressions)} regression(s); {CANDIDATE} does not beat it on "
                     f"{', '.join(c.where('same')) or 'no metric'} (level) and is WORSE on "
                     f"{', '.join(c.where('worse')) or 'no metric'}")
    lines += ["", "## Gate checks", "", f"Against `{result.gate.baseline}`.", "",
              "| check | result | cases |", "|---|---|---|"]
    for name, check in result.gate.checks.items():
        lines.append(f"| {name} | {'pass' if check.passed else 'FAIL'} | "
                     f"{', '.join(check.cases) or '-'} |")
    lines += ["", f"Improvements: {', '.join(result.gate.improvements) or 'none'}",
              f"Regressions: {', '.join(result.gate.regressions) or 'none'}", "",
              "## Cases", "", f"`change`: {CANDIDATE} against `{result.gate.baseline}`.", "",
              "| case | " + " | ".join(STRATEGIES) + " | change |",
              "|---|" + "---|" * (len(STRATEGIES) + 1)]
    for row in data["cases"]:
        cells = []
        for s in STRATEGIES:
            r = row[s]
            cells.append("pass" if r["passed"] else "FAIL: " + ", ".join(r["failed_graders"]))
        lines.append(f"| {row['case_id']} | " + " | ".join(cells) + f" | {row['change']} |")
    lines += topics_markdown(result)
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _exclusion_lines(run: CaseRun) -> list[str]:
    """Every exclusion with its reason, gate and detail; every candidate's acquisition."""
    lines = []
    if run.packet.excluded:
        lines.append("- excluded:")
        lines += [f"  - `{e.id}`: {e.reason}"
                  + (f" at gate `{e.gate}`" if e.gate else " (no hard gate)")
                  + (f" — {_one_line(e.detail)}" if e.detail else "")
                  for e in run.packet.excluded]
    if run.packet.acquisitions:
        lines.append("- acquisitions: " + ", ".join(
            f"`{a.id}` {a.outcome}" for a in run.packet.acquisitions))
    return lines


def _md_failures(result: EvalResult) -> str:
    lines = ["# Context eval failures", ""]
    for title, runs in failure_sections(result):
        failing = [r for r in runs if not r.passed]
        lines += [f"## {title}: {len(failing)} failing case(s)", ""]
        for run in failing:
            lines.append(f"### {run.case.id} ({run.packet.status})")
            lines.append(f"Question: {run.case.question}")
            lines += [f"- **{g.name}**: {g.detail}" for g in run.failed]
            lines += _exclusion_lines(run)
            if run.packet.manifest and run.packet.manifest.blocked_reason:
                lines.append(f"- blocked: {run.packet.manifest.blocked_reason}")
            lines.append("")
    return "\n".join(lines) + "\n"


def _packets(result: EvalResult) -> str:
    out = []
    for mode, runs in packet_runs(result):
        for run in runs:
            line = run.packet.report_line()
            line["topics_mode"] = mode
            line["passed"] = run.passed
            line["grades"] = [{"name": g.name, "passed": g.passed, "detail": g.detail}
                              for g in run.grades]
            out.append(json.dumps(line, ensure_ascii=False, sort_keys=False))
    return "\n".join(out) + "\n"


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_reports(result: EvalResult, output: Path | str) -> list[Path]:
    """Write the four reports into ``output`` (created if needed); returns their paths."""
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    data = comparison(result)
    texts = {
        "context-comparison.json": json.dumps(data, indent=2, ensure_ascii=False) + "\n",
        "context-comparison.md": _md_comparison(result, data),
        "context-failures.md": _md_failures(result),
        "context-packets.jsonl": _packets(result),
    }
    paths = []
    for name in REPORT_FILES:
        _write(out / name, texts[name])
        paths.append(out / name)
    return paths
