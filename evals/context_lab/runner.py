"""Run both strategies over every case, grade every packet, compute metrics and the gate.

Everything here is deterministic: the engine is pure, the baseline is pure, ``as_of``
comes from the case, and reports carry no wall-clock time, so two runs over the same
files and policy produce byte-identical reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from context.errors import ContextError
from context.policy import ContextPolicy, load_policy
from evals.context_lab import baseline, strategy
from evals.context_lab.baseline import run_dump_all
from evals.context_lab.dataset import LabCase, LabSource, load_cases, load_sources
from evals.context_lab.errors import DatasetError
from evals.context_lab.gate import CaseRun, GateResult, StrategyMetrics, metrics, release_gate
from evals.context_lab.graders import grade_packet
from evals.context_lab.strategy import run_pressroom

BUNDLED = Path(__file__).resolve().parent.parent / "context"
BUNDLED_CASES = BUNDLED / "cases.jsonl"
BUNDLED_SOURCES = BUNDLED / "sources.jsonl"
BASELINE: str = baseline.STRATEGY
CANDIDATE: str = strategy.STRATEGY
STRATEGIES = (BASELINE, CANDIDATE)


class EvalResult(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    policy: dict[str, Any]
    budget_override: int | None
    cases_path: str
    sources_path: str
    sources: dict[str, LabSource]
    runs: dict[str, list[CaseRun]]
    metrics: dict[str, StrategyMetrics]
    gate: GateResult


def resolve_policy(policy: str | Path) -> ContextPolicy:
    try:
        return load_policy(policy)
    except ContextError as exc:
        raise DatasetError("--policy", str(exc)) from None


def _budget(case: LabCase, override: int | None) -> int:
    return case.budget if override is None else override


def run_context_eval(cases_path: Path | str = BUNDLED_CASES,
                     sources_path: Path | str = BUNDLED_SOURCES, *,
                     policy: str | Path = "default",
                     budget: int | None = None) -> EvalResult:
    """Load, run, grade and gate. Unusable input raises ``DatasetError`` before any run."""
    if budget is not None and budget < 1:
        raise DatasetError("--budget", f"must be at least 1, got {budget}")
    sources = load_sources(sources_path)
    cases = load_cases(cases_path, sources)
    base_policy = resolve_policy(policy)
    runs: dict[str, list[CaseRun]] = {name: [] for name in STRATEGIES}
    for case in cases:
        limit = _budget(case, budget)
        packets = {
            BASELINE: run_dump_all(case, sources, budget=limit, policy=base_policy),
            CANDIDATE: run_pressroom(case, sources, budget=limit, policy=base_policy,
                                     cases_path=str(cases_path)),
        }
        for name, packet in packets.items():
            runs[name].append(CaseRun(case=case, strategy=name, packet=packet,
                                      grades=tuple(grade_packet(case, sources, packet))))
    m = {name: metrics(name, runs[name], sources) for name in STRATEGIES}
    gate = release_gate(runs[BASELINE], runs[CANDIDATE], m[BASELINE], m[CANDIDATE])
    return EvalResult(
        policy={"id": base_policy.id, "revision": base_policy.revision,
                "digest": base_policy.digest},
        budget_override=budget, cases_path=str(cases_path), sources_path=str(sources_path),
        sources=sources, runs=runs, metrics=m, gate=gate,
    )
