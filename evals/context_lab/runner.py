"""Run every strategy over every case, grade every packet, compute metrics and the gate.

The three baselines (``dump-all``, ``gated-dump``, ``top-k``) and the candidate
(``pressroom``) all run on every case; the candidate is compared with each baseline
(``comparisons``) and the release gate judges it against the strongest one, or the one
named with ``gate_baseline=`` (``--baseline``).

Each case runs in every topic mode ``--topics`` asks for (``topics``: ``labels``, where
the sources' declared topics count as coverage, and ``content``, where they are dropped
and coverage must come from the content); the gate of each mode is judged and the release
gate holds them all (``topics.combined_gate``). ``runs``, ``metrics`` and ``comparisons``
are the first mode's (``labels`` when it ran); ``modes`` holds every mode.

Everything here is deterministic: the engine is pure, the baselines are pure, ``as_of``
comes from the case, and reports carry no wall-clock time, so two runs over the same
files and policy produce byte-identical reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from context import ContextError, ContextPolicy, load_policy
from evals.context_lab import baseline, baseline_gated, baseline_topk, strategy
from evals.context_lab.baseline import run_dump_all
from evals.context_lab.baseline_gated import run_gated_dump
from evals.context_lab.baseline_topk import DEFAULT_K, run_top_k
from evals.context_lab.dataset import LabCase, LabSource, load_cases, load_sources
from evals.context_lab.errors import DatasetError
from evals.context_lab.gate import (
    CaseRun,
    Comparison,
    ContextReleaseGate,
    StrategyMetrics,
    compare,
    metrics,
    release_gate,
    strongest,
)
from evals.context_lab.graders import grade_packet
from evals.context_lab.strategy import run_pressroom
from evals.context_lab.topics import (
    BOTH,
    LABELS,
    LabelNeed,
    baseline_sources,
    combined_gate,
    engine_sources,
    graded_case,
    label_needs,
    label_only,
    modes_of,
)

BUNDLED = Path(__file__).resolve().parent.parent / "context"
BUNDLED_CASES = BUNDLED / "cases.jsonl"
BUNDLED_SOURCES = BUNDLED / "sources.jsonl"
BASELINE: str = baseline.STRATEGY  # the original, weakest baseline
BASELINES: tuple[str, ...] = (baseline.STRATEGY, baseline_gated.STRATEGY, baseline_topk.STRATEGY)
CANDIDATE: str = strategy.STRATEGY
STRATEGIES = (*BASELINES, CANDIDATE)
STRONGEST = "strongest"


class ModeResult(BaseModel):
    """Every strategy on every case in one topic mode, with that mode's gate."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    mode: str
    runs: dict[str, list[CaseRun]]
    metrics: dict[str, StrategyMetrics]
    gate: ContextReleaseGate
    comparisons: dict[str, Comparison]


class EvalResult(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    policy: dict[str, Any]
    budget_override: int | None
    cases_path: str
    sources_path: str
    sources: dict[str, LabSource]
    runs: dict[str, list[CaseRun]]
    metrics: dict[str, StrategyMetrics]
    gate: ContextReleaseGate
    comparisons: dict[str, Comparison]  # the candidate against each baseline
    top_k: int = DEFAULT_K
    topics: str = LABELS  # the --topics option
    modes: dict[str, ModeResult] = {}  # every topic mode run, in report order
    label_needs: list[LabelNeed] = []  # topics the cases mark as needing a label
    label_only: dict[str, list[str]] = {}  # per strategy: passed on labels, failed on content


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
                     gate_baseline: str = STRONGEST, topics: str = BOTH) -> EvalResult:
    """Load, run, grade and gate. Unusable input raises ``DatasetError`` before any run.

    ``gate_baseline`` is the baseline the gate compares against: ``strongest`` (default)
    or a name in ``BASELINES``; ``top_k`` is the ``top-k`` baseline's k; ``topics`` is
    ``labels``, ``content`` or ``both`` (default).
    """
    modes = modes_of(topics)
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
    results = {mode: _run_mode(mode, cases, sources, policy=base_policy, budget=budget,
                               top_k=top_k, gate_baseline=gate_baseline,
                               cases_path=str(cases_path)) for mode in modes}
    first = results[modes[0]]
    only: dict[str, list[str]] = {}
    if len(modes) > 1:
        only = {name: label_only({r.case.id: r.passed for r in results[modes[0]].runs[name]},
                                 {r.case.id: r.passed for r in results[modes[1]].runs[name]})
                for name in STRATEGIES}
    return EvalResult(
        policy={"id": base_policy.id, "revision": base_policy.revision,
                "digest": base_policy.digest},
        budget_override=budget, cases_path=str(cases_path), sources_path=str(sources_path),
        sources=sources, runs=first.runs, metrics=first.metrics,
        gate=combined_gate({mode: r.gate for mode, r in results.items()},
                           only.get(CANDIDATE) if only else None),
        comparisons=first.comparisons, top_k=top_k, topics=topics, modes=results,
        label_needs=label_needs(cases), label_only=only,
    )


def _run_mode(mode: str, cases: list[LabCase], sources: dict[str, LabSource], *,
              policy: ContextPolicy, budget: int | None, top_k: int, gate_baseline: str,
              cases_path: str) -> ModeResult:
    """Every strategy on every case in topic ``mode``: the engine and the baselines get the
    sources as the mode shows them; the graders judge against the labels, with the case as
    the mode grades it (``topics``)."""
    engine_view = engine_sources(sources, mode)
    runs: dict[str, list[CaseRun]] = {name: [] for name in STRATEGIES}
    for case in cases:
        limit = _budget(case, budget)
        shown = baseline_sources(case, sources, mode)
        packets = {
            BASELINE: run_dump_all(case, shown, budget=limit, policy=policy),
            baseline_gated.STRATEGY: run_gated_dump(case, shown, budget=limit,
                                                    policy=policy, cases_path=cases_path),
            baseline_topk.STRATEGY: run_top_k(case, shown, budget=limit, policy=policy,
                                              k=top_k),
            CANDIDATE: run_pressroom(case, engine_view, budget=limit, policy=policy,
                                     cases_path=cases_path),
        }
        graded = graded_case(case, mode)
        for name, packet in packets.items():
            runs[name].append(CaseRun(case=graded, strategy=name, packet=packet,
                                      grades=tuple(grade_packet(graded, sources, packet))))
    m = {name: metrics(name, runs[name], sources) for name in STRATEGIES}
    comparisons = {name: compare(runs[name], runs[CANDIDATE], m[name], m[CANDIDATE])
                   for name in BASELINES}
    chosen = gate_baseline != STRONGEST
    against = gate_baseline if chosen else strongest([m[n] for n in BASELINES]).strategy
    gate = release_gate(runs[against], runs[CANDIDATE], m[against], m[CANDIDATE],
                        selection="chosen" if chosen else "strongest")
    return ModeResult(mode=mode, runs=runs, metrics=m, gate=gate, comparisons=comparisons)
