"""The topic modes in the reports: both modes side by side, the cases that pass
only on labels, and the topics that need a label (``topics``).

``reports`` keeps showing the first mode's metrics and per-case table as before (the
``labels`` mode when it ran) and adds what this module writes: a ``topics`` block in
``context-comparison.json``, a "Topic modes" section in ``context-comparison.md``, one
failures section per strategy per mode in ``context-failures.md`` (the ``content`` mode's
titled ``<strategy> (content topics)``) and one packet line per case, strategy and mode in
``context-packets.jsonl`` (field ``topics_mode``). Deterministic like every report.
"""

from __future__ import annotations

from typing import Any

from evals.context_lab.gate import CaseRun
from evals.context_lab.runner import CANDIDATE, STRATEGIES, EvalResult
from evals.context_lab.topics import CONTENT, CONTENT_PREFIX, LABEL_ONLY_CHECK, LABELS

GATE_RULE = (
    "The release gate holds every mode run: each mode's checks (the content mode's prefixed "
    f"`{CONTENT_PREFIX}`), and with both modes `{CONTENT_PREFIX}{LABEL_ONLY_CHECK}`: no case "
    f"{CANDIDATE} passes only on labels. A topic a case marks `needs_label` is expected "
    "to be reported missing in the content mode (the case still has to pass).")


def _modes(result: EvalResult) -> dict[str, dict[str, list[CaseRun]]]:
    if result.modes:
        return {mode: r.runs for mode, r in result.modes.items()}
    return {LABELS: result.runs}


def suffix(mode: str) -> str:
    """How a section of a mode other than ``labels`` is titled."""
    return "" if mode == LABELS else f" ({mode} topics)"


def failure_sections(result: EvalResult) -> list[tuple[str, list[CaseRun]]]:
    """``(title, runs)`` per mode and strategy, for ``context-failures.md``."""
    return [(f"{name}{suffix(mode)}", runs[name])
            for mode, runs in _modes(result).items() for name in STRATEGIES]


def packet_runs(result: EvalResult) -> list[tuple[str, list[CaseRun]]]:
    """``(topics_mode, runs)`` per mode and strategy, for ``context-packets.jsonl``."""
    return [(mode, runs[name]) for mode, runs in _modes(result).items() for name in STRATEGIES]


def _content_outcome(result: EvalResult, case_id: str) -> dict[str, Any] | None:
    mode = result.modes.get(CONTENT)
    if mode is None:
        return None
    run = next(r for r in mode.runs[CANDIDATE] if r.case.id == case_id)
    return {"passed": run.passed, "missing_topics": list(run.packet.missing_topics)}


def topics_block(result: EvalResult) -> dict[str, Any]:
    """The ``topics`` block of ``context-comparison.json``."""
    per_mode: dict[str, Any] = {}
    for mode, r in result.modes.items():
        per_mode[mode] = {
            "strategies": {name: m.model_dump() for name, m in r.metrics.items()},
            "gate": {"baseline": r.gate.baseline, "passed": r.gate.passed,
                     "failing_checks": {k: c.cases for k, c in r.gate.failing.items()}},
            "improvements": r.gate.improvements,
            "regressions": r.gate.regressions,
            "cases": {run.case.id: {name: {"passed": by[run.case.id].passed,
                                           "failed_graders": [g.name for g in
                                                              by[run.case.id].failed],
                                           "missing_topics": list(
                                               by[run.case.id].packet.missing_topics)}
                                    for name, by in ((n, {x.case.id: x for x in r.runs[n]})
                                                     for n in STRATEGIES)}
                      for run in r.runs[CANDIDATE]},
        }
    return {
        "option": result.topics,
        "modes": list(result.modes),
        "gate_rule": GATE_RULE,
        "label_only": result.label_only,
        "needs_label": [dict(need.model_dump(), content_mode=_content_outcome(result,
                                                                              need.case_id))
                        for need in result.label_needs],
        "per_mode": per_mode,
    }


def topics_markdown(result: EvalResult) -> list[str]:
    """The "Topic modes" section of ``context-comparison.md``."""
    modes = list(result.modes)
    if not modes:
        return []
    lines = ["", f"## Topic modes (`--topics {result.topics}`)", "",
             "`labels`: a source's declared topics count as coverage. `content`: declared "
             "topics are dropped before any strategy sees the sources, so coverage has to come "
             "from the content (the engine's term matching with each case's topic terms; the "
             "graders still judge against the labels). The tables above are the "
             f"`{modes[0]}` mode. {GATE_RULE}", "",
             "| strategy | " + " | ".join(f"{m}: cases passed" for m in modes) + " |",
             "|---|" + "---|" * len(modes)]
    for name in STRATEGIES:
        lines.append(f"| {name} | " + " | ".join(
            f"{result.modes[m].metrics[name].passed_cases}/{result.modes[m].metrics[name].cases}"
            for m in modes) + " |")
    lines += ["", "| mode | gate | against | failing checks |", "|---|---|---|---|"]
    for m in modes:
        gate = result.modes[m].gate
        failing = "; ".join(f"{k}: {', '.join(c.cases) or '-'}" for k, c in gate.failing.items())
        lines.append(f"| {m} | {'pass' if gate.passed else 'FAIL'} | {gate.baseline} | "
                     f"{failing or '-'} |")
    if len(modes) > 1:
        lines += ["", "### Cases that pass only on labels", "",
                  "Passed in the `labels` mode, failed in the `content` mode.", ""]
        lines += [f"- {name}: {', '.join(result.label_only.get(name, [])) or 'none'}"
                  for name in STRATEGIES]
    lines += ["", "### Topics that need a label", ""]
    if result.label_needs:
        lines += ["| case | topic | why | content mode (" + CANDIDATE + ") |",
                  "|---|---|---|---|"]
        for need in result.label_needs:
            outcome = _content_outcome(result, need.case_id)
            shown = ("not run" if outcome is None else
                     ("pass" if outcome["passed"] else "FAIL")
                     + f", missing {outcome['missing_topics']}")
            lines.append(f"| {need.case_id} | {need.topic} | {need.why} | {shown} |")
    else:
        lines.append("None.")
    if CONTENT in result.modes and modes[0] != CONTENT:
        lines += _differing_cases(result, modes[0])
    return lines


def _differing_cases(result: EvalResult, first: str) -> list[str]:
    rows = []
    for run in result.modes[CONTENT].runs[CANDIDATE]:
        cid = run.case.id
        cells, differs = [], False
        for name in STRATEGIES:
            a = next(r for r in result.modes[first].runs[name] if r.case.id == cid)
            b = next(r for r in result.modes[CONTENT].runs[name] if r.case.id == cid)
            differs |= a.passed != b.passed
            cells.append(("pass" if a.passed else "FAIL") + " → "
                         + ("pass" if b.passed else "FAIL: " + ", ".join(
                             g.name for g in b.failed)))
        if differs:
            rows.append(f"| {cid} | " + " | ".join(cells) + " |")
    lines = ["", "### Cases whose outcome changes in the content mode", "",
             f"`{first}` → `content`; every other case has the same outcome in both modes.",
             ""]
    if not rows:
        return [*lines, "None."]
    return [*lines, "| case | " + " | ".join(STRATEGIES) + " |",
            "|---|" + "---|" * len(STRATEGIES), *rows]
