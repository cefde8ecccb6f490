"""The stronger baselines: ``gated-dump`` and ``top-k`` on hand-built cases, and
the release gate judging the candidate against the strongest baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from context.policy import load_policy
from context.seal.render import data_block
from context.tokens import count_tokens
from evals.context_lab.baseline_gated import run_gated_dump
from evals.context_lab.baseline_topk import DEFAULT_K, query_terms, ranking, run_top_k
from evals.context_lab.dataset import LabCase, LabSource
from evals.context_lab.errors import DatasetError
from evals.context_lab.gate import CaseRun, compare, metrics, release_gate, strongest
from evals.context_lab.graders import GRADER_NAMES, Grade, grade_packet
from evals.context_lab.mapping import source_to_item
from evals.context_lab.packet import Packet, SelectedEntry
from evals.context_lab.reports import write_reports
from evals.context_lab.runner import BASELINES, run_context_eval
from tests.evals.conftest import BASE_CASE, BASE_SOURCE, MakeDataset

POLICY = load_policy("default")


def _source(sid: str, **over: Any) -> LabSource:
    return LabSource.model_validate(dict(BASE_SOURCE, id=sid, **over))


def _case(ids: list[str], **over: Any) -> LabCase:
    return LabCase.model_validate(dict(BASE_CASE, candidate_source_ids=ids, **over))


def _tokens(source: LabSource) -> int:
    return count_tokens(data_block(source_to_item(source, POLICY)))


# --- gated-dump --------------------------------------------------------------------------


def _gated_sources() -> dict[str, LabSource]:
    return {
        "expired": _source("expired", valid_until="2026-11-01"),
        "weather": _source("weather", title="Weather", content="Tomorrow it will rain.",
                           topics=["weather"]),
        "restricted": _source("restricted", sensitivity=3),
        "current": _source("current"),
    }


def test_gated_dump_excludes_what_a_gate_rejects_but_dumps_the_irrelevant() -> None:
    sources = _gated_sources()
    case = _case(["expired", "weather", "restricted", "current"])
    packet = run_gated_dump(case, sources, budget=10_000, policy=POLICY)
    assert packet.strategy == "gated-dump"
    assert packet.selected_ids == ["weather", "current"]  # candidate order, no ranking
    assert [(e.id, e.reason, e.gate) for e in packet.excluded] == [
        ("expired", "expired", "freshness"),
        ("restricted", "permission_denied", "permission")]
    grades = {g.name: g for g in grade_packet(case, sources, packet)}
    assert not grades["relevance"].passed and "weather" in grades["relevance"].detail
    assert grades["forbidden_sources"].passed and grades["manifest_complete"].passed


def test_gated_dump_packs_passers_until_the_first_overflow() -> None:
    sources = {"big": _source("big", content="Back off exponentially. " * 40),
               "expired": _source("expired", valid_until="2026-11-01"),
               "small": _source("small")}
    small = _tokens(sources["small"])
    assert _tokens(sources["big"]) > small
    # a rejected candidate costs nothing: the passer after it still fits
    fits = run_gated_dump(_case(["expired", "small"]), sources, budget=small, policy=POLICY)
    assert fits.selected_ids == ["small"] and fits.budget_used == small
    # the first passer that overflows stops the dump, like dump-all
    stops = run_gated_dump(_case(["big", "expired", "small"]), sources, budget=small,
                           policy=POLICY)
    assert stops.selected == ()
    assert [(e.id, e.reason) for e in stops.excluded] == [
        ("big", "budget_evicted"), ("expired", "expired"), ("small", "budget_evicted")]
    assert stops.missing_topics == ("rate-limit",)


def test_gated_dump_packs_the_security_gates_redacted_copy() -> None:
    secret = 'api_key = "sk-live-4f9a7c2e1b8d6f3a9c0e"'
    sources = {"runbook": _source("runbook", content=f"Retry with jitter.\n{secret}\n")}
    packet = run_gated_dump(_case(["runbook"]), sources, budget=10_000, policy=POLICY)
    assert packet.selected_ids == ["runbook"]
    assert "sk-live-4f9a7c2e1b8d6f3a9c0e" not in packet.visible_text()
    assert packet.selected[0].content_hash != source_to_item(sources["runbook"],
                                                             POLICY).content_hash


# --- top-k -------------------------------------------------------------------------------


def _topk_sources() -> dict[str, LabSource]:
    return {
        "none": _source("none", title="Note", content="Weather is fine today."),
        "low": _source("low", title="Note", content="The crawler runs nightly."),
        "tie": _source("tie", title="Note", content="A crawler should wait."),
        "high": _source("high", title="Note",
                        content="Retry the crawler when the rate limit answers 429."),
        "mid": _source("mid", title="Note", content="Retry the crawler later."),
    }


def test_top_k_ranks_by_term_overlap_with_candidate_order_breaking_ties() -> None:
    sources = _topk_sources()
    case = _case(["none", "low", "tie", "high", "mid"])
    assert {"crawler", "retry", "should", "rate", "limit"} <= query_terms(case)
    assert ranking(case, sources) == [("high", 4), ("tie", 2), ("mid", 2), ("low", 1),
                                      ("none", 0)]
    packet = run_top_k(case, sources, budget=10_000, policy=POLICY, k=2)
    assert packet.strategy == "top-k" and packet.selected_ids == ["high", "tie"]
    assert [(e.id, e.reason) for e in packet.excluded] == [
        ("mid", "ranking_lost"), ("low", "ranking_lost"), ("none", "ranking_lost")]
    assert len(run_top_k(case, sources, budget=10_000, policy=POLICY).selected) == DEFAULT_K


def test_top_k_skips_what_does_not_fit_and_stops_at_the_budget() -> None:
    sources = _topk_sources()
    sources["tie"] = _source("tie", title="Note", content="A crawler should wait. " * 40)
    case = _case(["none", "low", "tie", "high", "mid"])
    budget = _tokens(sources["high"]) + _tokens(sources["mid"])
    packet = run_top_k(case, sources, budget=budget, policy=POLICY, k=2)
    assert packet.selected_ids == ["high", "mid"] and packet.budget_used == budget
    assert ("tie", "budget_evicted") in [(e.id, e.reason) for e in packet.excluded]
    tight = run_top_k(case, sources, budget=_tokens(sources["high"]), policy=POLICY, k=3)
    assert tight.selected_ids == ["high"] and tight.budget_used <= _tokens(sources["high"])


def test_top_k_applies_no_gate() -> None:
    sources = {"expired": _source("expired", valid_until="2026-11-01",
                                  content="Retry the crawler when the rate limit answers."),
               "current": _source("current", content="Retry later.")}
    packet = run_top_k(_case(["current", "expired"]), sources, budget=10_000, policy=POLICY)
    assert packet.selected_ids == ["expired", "current"]


# --- the gate against the strongest baseline ----------------------------------------------

SOURCES = {"policy-current": LabSource.model_validate(BASE_SOURCE)}


def _run(case_id: str, strategy: str, failing: tuple[str, ...] = ()) -> CaseRun:
    case = LabCase.model_validate(dict(BASE_CASE, id=case_id))
    chosen = SelectedEntry(id="policy-current", tokens=10, item_id="policy-current",
                           locator="l", updated_at="2026-11-10", content_hash="sha256:x")
    packet = Packet(case_id=case_id, strategy=strategy, selected=(chosen,), excluded=(),
                    missing_topics=(), budget_used=0, budget_limit=500, acquisitions=(),
                    rendered_context="", fingerprint="sha256:x")
    grades = tuple(Grade(name=n, passed=n not in failing, detail="") for n in GRADER_NAMES)
    return CaseRun(case=case, strategy=strategy, packet=packet, grades=grades)


def _runs(strategy: str, failing: dict[str, tuple[str, ...]]) -> list[CaseRun]:
    return [_run(cid, strategy, failing.get(cid, ())) for cid in ("a", "b", "c")]


def test_strongest_is_most_cases_passed_then_most_grader_checks() -> None:
    weak = metrics("dump-all", _runs("dump-all", {"a": ("relevance",), "b": ("budget",)}),
                   SOURCES)
    close = metrics("gated-dump", _runs("gated-dump", {"a": ("relevance", "budget")}), SOURCES)
    closer = metrics("top-k", _runs("top-k", {"a": ("relevance",)}), SOURCES)
    assert strongest([weak, close, closer]).strategy == "top-k"  # 2 cases, more checks
    assert strongest([weak, close]).strategy == "gated-dump"
    assert strongest([closer, closer.model_copy(update={"strategy": "x"})]).strategy == "top-k"


def test_gate_fails_when_the_candidate_is_worse_than_the_strongest_baseline() -> None:
    weak = _runs("dump-all", {"a": ("relevance",), "b": ("relevance",), "c": ("relevance",)})
    strong = _runs("gated-dump", {})
    cand = _runs("pressroom", {"a": ("tool_pairing",)})
    m = {r[0].strategy: metrics(r[0].strategy, r, SOURCES) for r in (weak, strong, cand)}
    against_weak = release_gate(weak, cand, m["dump-all"], m["pressroom"])
    assert against_weak.passed and against_weak.improvements == ["b", "c"]  # the strawman
    best = strongest([m["dump-all"], m["gated-dump"]])
    gate = release_gate(strong, cand, best, m["pressroom"])
    assert gate.baseline == "gated-dump" and not gate.passed
    assert gate.failing["candidate_not_worse_overall"].cases == ["a"]
    assert gate.failing["no_case_regressions"].cases == ["a"]
    assert "at_least_one_measured_improvement" in gate.failing
    verdicts = compare(strong, cand, m["gated-dump"], m["pressroom"])
    assert verdicts.metrics["passed_cases"] == "worse" and verdicts.regressions == ["a"]


# --- through the runner and the reports ---------------------------------------------------


def _expired_dataset(dataset: MakeDataset) -> tuple[Path, Path]:
    return dataset(
        sources=[dict(BASE_SOURCE, id="old", valid_until="2026-11-01"), dict(BASE_SOURCE)],
        cases=[dict(BASE_CASE, candidate_source_ids=["old", "policy-current"],
                    forbidden_source_ids=["old"])])


def test_runner_runs_every_baseline_and_gates_against_the_strongest(
        dataset: MakeDataset, tmp_path: Path) -> None:
    cases, sources = _expired_dataset(dataset)
    result = run_context_eval(cases, sources)
    assert list(result.runs) == [*BASELINES, "pressroom"]
    assert set(result.comparisons) == set(BASELINES)
    assert result.metrics["gated-dump"].passed_cases == 1  # the freshness gate drops "old"
    assert result.gate.baseline == "gated-dump" and result.gate.selection == "strongest"
    assert not result.gate.passed  # nothing to improve on against gated-dump
    assert "at_least_one_measured_improvement" in result.gate.failing
    chosen = run_context_eval(cases, sources, gate_baseline="dump-all")
    assert chosen.gate.baseline == "dump-all" and chosen.gate.selection == "chosen"
    assert chosen.gate.passed and chosen.gate.improvements == ["case-1"]
    first, again = tmp_path / "one", tmp_path / "two"
    write_reports(result, first)
    write_reports(run_context_eval(cases, sources), again)
    for path in sorted(first.iterdir()):
        assert path.read_bytes() == (again / path.name).read_bytes(), path.name
    md = (first / "context-comparison.md").read_text()
    assert "against `gated-dump` (the strongest baseline" in md
    assert "| case | dump-all | gated-dump | top-k | pressroom | change |" in md


@pytest.mark.parametrize(("option", "value"), [("top_k", 0), ("gate_baseline", "random")])
def test_bad_baseline_options_are_unusable_input(
        dataset: MakeDataset, option: str, value: object) -> None:
    cases, sources = _expired_dataset(dataset)
    with pytest.raises(DatasetError) as err:
        run_context_eval(cases, sources, **{option: value})  # type: ignore[arg-type]
    assert ("--top-k" if option == "top_k" else "--baseline") in str(err.value)
