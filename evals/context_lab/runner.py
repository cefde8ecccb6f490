"""Run every strategy over every case, grade every packet, compute metrics and the gate.

The three baselines (``dump-all``, ``gated-dump``, ``top-k``) and the candidate
(``pressroom``) all run on every case; the candidate is compared with each baseline
(``comparisons``) and the release gate judges it against the strongest one, or the one
named with ``gate_baseline=`` (``--baseline``).

Everything here is deterministic: the engine is pure, the baselines are pure, ``as_of``
comes from the case, and reports carry no wall-clock time, so two runs over the same
files and policy produce byte-identical reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from context.errors import ContextError
from context.policy import ContextPolicy, load_policy
from evals.context_lab import baseline, baseline_gated, baseline_topk, strategy
from evals.context_lab.baseline import run_dump_all
from evals.context_lab.baseline_gated import run_gated_dump
from evals.context_lab.baseline_topk import DEFAULT_K, run_top_k
from evals.context_lab.dataset import LabCase, LabSource, load_cases, load_sources
from evals.context_lab.errors import DatasetError
from evals.context_lab.gate import (
    CaseRun,
    Comparison,
    GateResult,
    StrategyMetrics,
    compare,
    metrics,
    release_gate,
    strongest,
)
from evals.context_lab.graders import grade_packet
from evals.context_lab.strategy import run_pressroom

BUNDLED = Path(__file__).resolve().parent.parent / "context"
BUNDLED_CASES = BUNDLED / "cases.jsonl"
BUNDLED_SOURCES = BUNDLED / "sources.jsonl"
BASELINE: str = baseline.STRATEGY  # the original, weakest baseline
BASELINES: tuple[str, ...] = (baseline.STRATEGY, baseline_gated.STRATEGY, baseline_topk.STRATEGY)
CANDIDATE: str = strategy.STRATEGY
STRATEGIES = (*BASELINES, CANDIDATE)
STRONGEST = "strongest"


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
    comparisons: dict[str, Comparison]  # the candidate against each baseline
    top_k: int = DEFAULT_K


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
                     budget: int | None = None, top_k: int = DEFAULT_K,
                     gate_baseline: str = STRONGEST) -> EvalResult:
    """Load, run, grade and gate. Unusable input raises ``DatasetError`` before any run.

    ``gate_baseline`` is the baseline the gate compares against: ``strongest`` (default)
    or a name in ``BASELINES``; ``top_k`` is the ``top-k`` baseline's k.
    """
    if budget is not None and budget < 1:
        raise DatasetError("--budget", f"must be at least 1, got {budget}")
    if top_k < 1:
        raise DatasetError("--top-k", f"must be at least 1, got {top_k}")
    if gate_baseline != STRONGEST and gate_baseline not in BASELINES:
        raise DatasetError("--baseline", f"must be {STRONGEST!r} or one of "
                                         f"{list(BASELINES)}, got {gate_baseline!r}")
    sources = load_sources(sources_path)
    cases = load_cases(cases_path, sources)
    base_policy = resolve_policy(policy)
    runs: dict[str, list[CaseRun]] = {name: [] for name in STRATEGIES}
    for case in cases:
        limit = _budget(case, budget)
        packets = {
            BASELINE: run_dump_all(case, sources, budget=limit, policy=base_policy),
            baseline_gated.STRATEGY: run_gated_dump(case, sources, budget=limit,
                                                    policy=base_policy,
                                                    cases_path=str(cases_path)),
            baseline_topk.STRATEGY: run_top_k(case, sources, budget=limit, policy=base_policy,
                                              k=top_k),
            CANDIDATE: run_pressroom(case, sources, budget=limit, policy=base_policy,
                                     cases_path=str(cases_path)),
        }
        for name, packet in packets.items():
            runs[name].append(CaseRun(case=case, strategy=name, packet=packet,
                                      grades=tuple(grade_packet(case, sources, packet))))
    m = {name: metrics(name, runs[name], sources) for name in STRATEGIES}
    comparisons = {name: compare(runs[name], runs[CANDIDATE], m[name], m[CANDIDATE])
                   for name in BASELINES}
    chosen = gate_baseline != STRONGEST
    against = gate_baseline if chosen else strongest([m[n] for n in BASELINES]).strategy
    gate = release_gate(runs[against], runs[CANDIDATE], m[against], m[CANDIDATE],
                        selection="chosen" if chosen else "strongest")
    return EvalResult(
        policy={"id": base_policy.id, "revision": base_policy.revision,
                "digest": base_policy.digest},
        budget_override=budget, cases_path=str(cases_path), sources_path=str(sources_path),
        sources=sources, runs=runs, metrics=m, gate=gate, comparisons=comparisons,
        top_k=top_k,
    )
