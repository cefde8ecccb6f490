"""Per-strategy metrics and the release gate (docs/context-engine.md#release-gate).

The gate compares the candidate (``pressroom``) against one baseline: the *strongest* of
them (:func:`strongest`: most cases passed; ties go to the most grader checks passed over
all cases, then the higher required-topic coverage, then the fewer forbidden exposures,
then the earlier listed — ``dump-all``, ``gated-dump``, ``top-k``), or the one named with
``--baseline``. It passes only when all of these hold — each check names the cases that
break it:

* candidate not worse than baseline overall (case pass rate);
* at least one measured improvement (a case the baseline fails and the candidate passes);
* no case regressions (a case the baseline passes and the candidate fails);
* all available required evidence retained (required-topic coverage 1.0);
* zero forbidden exposures (forbidden or lab-untrusted sources selected, forbidden text
  visible, or untrusted text outside a data block — ``forbidden_sources`` and
  ``trust_zone``) and zero irrelevant exposures (``relevance``);
* every packet within budget;
* missing evidence explicit (``missing_evidence``);
* every manifest complete (``manifest_complete``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from evals.context_lab.dataset import LabCase, LabSource
from evals.context_lab.graders import Grade
from evals.context_lab.packet import Packet


class CaseRun(BaseModel):
    """One strategy on one case: the packet and its grades."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    case: LabCase
    strategy: str
    packet: Packet
    grades: tuple[Grade, ...]

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.grades)

    def grade(self, name: str) -> Grade:
        return next(g for g in self.grades if g.name == name)

    @property
    def failed(self) -> list[Grade]:
        return [g for g in self.grades if not g.passed]


class StrategyMetrics(BaseModel):
    model_config = ConfigDict(frozen=True)

    strategy: str
    cases: int
    passed_cases: int
    case_pass_rate: float
    available_required_topics: int
    covered_required_topics: int
    required_topic_coverage: float
    forbidden_exposures: int
    irrelevant_exposures: int
    budget_compliance: float
    missing_evidence_accuracy: float
    complete_manifests: int
    mean_tokens: float
    passed_grades: int = 0  # grader checks passed over all cases (the strength tie-break)


class GateCheck(BaseModel):
    model_config = ConfigDict(frozen=True)

    passed: bool
    cases: list[str]


class ContextReleaseGate(BaseModel):
    model_config = ConfigDict(frozen=True)

    passed: bool
    checks: dict[str, GateCheck]
    improvements: list[str]
    regressions: list[str]
    baseline: str = ""  # the baseline the gate compared against
    selection: str = "strongest"  # how it was picked: "strongest" or "chosen" (--baseline)

    @property
    def failing(self) -> dict[str, GateCheck]:
        return {name: c for name, c in self.checks.items() if not c.passed}


def _rate(n: int, d: int) -> float:
    return round(n / d, 4) if d else 1.0


def _forbidden(run: CaseRun) -> bool:
    return not (run.grade("forbidden_sources").passed and run.grade("trust_zone").passed)


def metrics(strategy: str, runs: list[CaseRun], sources: dict[str, LabSource]) -> StrategyMetrics:
    available = covered = 0
    for run in runs:
        want = [t for t in run.case.required_topics if t not in run.case.expected_missing_topics]
        have = {t for s in run.packet.selected if s.id in sources for t in sources[s.id].topics}
        available += len(want)
        covered += sum(t in have for t in want)
    n = len(runs)
    return StrategyMetrics(
        strategy=strategy,
        cases=n,
        passed_cases=sum(r.passed for r in runs),
        case_pass_rate=_rate(sum(r.passed for r in runs), n),
        available_required_topics=available,
        covered_required_topics=covered,
        required_topic_coverage=_rate(covered, available),
        forbidden_exposures=sum(_forbidden(r) for r in runs),
        irrelevant_exposures=sum(not r.grade("relevance").passed for r in runs),
        budget_compliance=_rate(sum(r.grade("budget").passed for r in runs), n),
        missing_evidence_accuracy=_rate(sum(r.grade("missing_evidence").passed for r in runs), n),
        complete_manifests=sum(r.grade("manifest_complete").passed for r in runs),
        mean_tokens=round(sum(r.packet.budget_used for r in runs) / n, 2) if n else 0.0,
        passed_grades=sum(g.passed for r in runs for g in r.grades),
    )


#: How a metric is read when the candidate is set against a baseline: 1 higher is better,
#: -1 lower is better (``mean_tokens``: fewer evidence tokens is cheaper).
METRIC_DIRECTION: dict[str, int] = {
    "passed_cases": 1, "required_topic_coverage": 1, "forbidden_exposures": -1,
    "irrelevant_exposures": -1, "budget_compliance": 1, "missing_evidence_accuracy": 1,
    "complete_manifests": 1, "passed_grades": 1, "mean_tokens": -1,
}


def _strength(m: StrategyMetrics) -> tuple[int, int, float, int]:
    return (m.passed_cases, m.passed_grades, m.required_topic_coverage, -m.forbidden_exposures)


def strongest(baselines: list[StrategyMetrics]) -> StrategyMetrics:
    """The strongest baseline (see the module docstring); the earlier listed wins a tie."""
    best = baselines[0]
    for m in baselines[1:]:
        if _strength(m) > _strength(best):
            best = m
    return best


class Comparison(BaseModel):
    """The candidate against one baseline: case changes and a verdict per metric."""

    model_config = ConfigDict(frozen=True)

    baseline: str
    improvements: list[str]
    regressions: list[str]
    metrics: dict[str, str]  # metric -> "better" | "same" | "worse" (for the candidate)

    def where(self, verdict: str) -> list[str]:
        return [k for k, v in self.metrics.items() if v == verdict]


def case_changes(baseline: list[CaseRun], candidate: list[CaseRun]) -> tuple[list[str],
                                                                             list[str]]:
    """(improvements, regressions): cases only the candidate passes, only the baseline."""
    base = {r.case.id: r.passed for r in baseline}
    improvements = [r.case.id for r in candidate if r.passed and not base[r.case.id]]
    regressions = [r.case.id for r in candidate if not r.passed and base[r.case.id]]
    return improvements, regressions


def compare(baseline: list[CaseRun], candidate: list[CaseRun], base_m: StrategyMetrics,
            cand_m: StrategyMetrics) -> Comparison:
    verdicts = {}
    for key, sign in METRIC_DIRECTION.items():
        delta = (getattr(cand_m, key) - getattr(base_m, key)) * sign
        verdicts[key] = "better" if delta > 0 else "worse" if delta < 0 else "same"
    improvements, regressions = case_changes(baseline, candidate)
    return Comparison(baseline=base_m.strategy, improvements=improvements,
                      regressions=regressions, metrics=verdicts)


def release_gate(baseline: list[CaseRun], candidate: list[CaseRun],
                 base_m: StrategyMetrics, cand_m: StrategyMetrics, *,
                 selection: str = "strongest") -> ContextReleaseGate:
    improvements, regressions = case_changes(baseline, candidate)

    def failing(grader: str) -> list[str]:
        return [r.case.id for r in candidate if not r.grade(grader).passed]

    not_worse = cand_m.case_pass_rate >= base_m.case_pass_rate
    failed_cases = [r.case.id for r in candidate if not r.passed]
    checks = {
        "candidate_not_worse_overall": GateCheck(
            passed=not_worse, cases=[] if not_worse else failed_cases),
        "at_least_one_measured_improvement": GateCheck(passed=bool(improvements), cases=[]),
        "no_case_regressions": GateCheck(passed=not regressions, cases=regressions),
        "all_available_required_evidence_retained": GateCheck(
            passed=cand_m.required_topic_coverage == 1.0, cases=failing("required_evidence")),
        "zero_forbidden_exposures": GateCheck(
            passed=cand_m.forbidden_exposures == 0,
            cases=[r.case.id for r in candidate if _forbidden(r)]),
        "zero_irrelevant_exposures": GateCheck(
            passed=cand_m.irrelevant_exposures == 0, cases=failing("relevance")),
        "every_packet_within_budget": GateCheck(
            passed=cand_m.budget_compliance == 1.0, cases=failing("budget")),
        "missing_evidence_explicit": GateCheck(
            passed=cand_m.missing_evidence_accuracy == 1.0, cases=failing("missing_evidence")),
        "every_manifest_complete": GateCheck(
            passed=cand_m.complete_manifests == cand_m.cases, cases=failing("manifest_complete")),
    }
    return ContextReleaseGate(passed=all(c.passed for c in checks.values()), checks=checks,
                      improvements=improvements, regressions=regressions,
                      baseline=base_m.strategy, selection=selection)
