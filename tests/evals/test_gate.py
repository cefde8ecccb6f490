"""The release gate: each check fails on the situation it exists for, naming the cases."""

from __future__ import annotations

from evals.context_lab.dataset import LabCase, LabSource
from evals.context_lab.gate import CaseRun, ContextReleaseGate, metrics, release_gate
from evals.context_lab.graders import GRADER_NAMES, Grade
from evals.context_lab.packet import Packet, SelectedEntry
from tests.evals.conftest import BASE_CASE, BASE_SOURCE

SOURCES = {"policy-current": LabSource.model_validate(BASE_SOURCE)}


def _run(case_id: str, strategy: str, failing: tuple[str, ...] = ()) -> CaseRun:
    case = LabCase.model_validate(dict(BASE_CASE, id=case_id))
    chosen = SelectedEntry(id="policy-current", tokens=10, item_id="policy-current",
                           locator="l", updated_at="2026-11-10", content_hash="sha256:x")
    selected = () if "required_evidence" in failing else (chosen,)
    packet = Packet(case_id=case_id, strategy=strategy, selected=selected, excluded=(),
                    missing_topics=(), budget_used=0, budget_limit=500, acquisitions=(),
                    rendered_context="", fingerprint="sha256:x")
    grades = tuple(Grade(name=n, passed=n not in failing, detail="") for n in GRADER_NAMES)
    return CaseRun(case=case, strategy=strategy, packet=packet, grades=grades)


def _gate(base: list[CaseRun], cand: list[CaseRun]) -> ContextReleaseGate:
    return release_gate(base, cand, metrics("dump-all", base, SOURCES),
                        metrics("pressroom", cand, SOURCES))


def test_gate_passes_with_an_improvement_and_nothing_broken() -> None:
    gate = _gate([_run("a", "dump-all", ("relevance",)), _run("b", "dump-all")],
                 [_run("a", "pressroom"), _run("b", "pressroom")])
    assert gate.passed and gate.improvements == ["a"] and gate.regressions == []


def test_gate_needs_a_measured_improvement() -> None:
    gate = _gate([_run("a", "dump-all")], [_run("a", "pressroom")])
    assert not gate.passed and set(gate.failing) == {"at_least_one_measured_improvement"}


def test_gate_names_regressions_and_each_broken_check() -> None:
    base = [_run("a", "dump-all", ("relevance",)), _run("b", "dump-all")]
    cand = [_run("a", "pressroom"),
            _run("b", "pressroom", ("required_evidence", "forbidden_sources", "relevance",
                                    "budget", "missing_evidence", "manifest_complete"))]
    failing = _gate(base, cand).failing
    assert failing["no_case_regressions"].cases == ["b"]
    for check in ("all_available_required_evidence_retained", "zero_forbidden_exposures",
                  "zero_irrelevant_exposures", "every_packet_within_budget",
                  "missing_evidence_explicit", "every_manifest_complete"):
        assert failing[check].cases == ["b"], check


def test_untrusted_text_outside_data_blocks_counts_as_a_forbidden_exposure() -> None:
    base = [_run("a", "dump-all", ("relevance",)), _run("b", "dump-all", ("trust_zone",))]
    cand = [_run("a", "pressroom"), _run("b", "pressroom", ("trust_zone",))]
    gate = _gate(base, cand)
    assert gate.failing["zero_forbidden_exposures"].cases == ["b"]


def test_candidate_worse_overall_names_its_failing_cases() -> None:
    base = [_run("a", "dump-all"), _run("b", "dump-all"), _run("c", "dump-all", ("budget",))]
    cand = [_run("a", "pressroom", ("tool_pairing",)), _run("b", "pressroom", ("tool_pairing",)),
            _run("c", "pressroom")]
    gate = _gate(base, cand)
    assert gate.failing["candidate_not_worse_overall"].cases == ["a", "b"]
