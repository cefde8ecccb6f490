"""Topic modes: ``labels`` vs ``content``, ``topic_terms``, ``needs_label``,
``--topics`` and the release gate over both modes.

Everything runs through the real engine and the real CLI. The base source's text says
"429" and "back off" but never "rate limit": its label ``rate-limit`` is the only thing
that covers the topic unless a case names ``429`` as a topic term.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from context import assemble
from context.policy import load_policy
from evals.context_lab.dataset import LabCase, LabSource
from evals.context_lab.errors import DatasetError
from evals.context_lab.runner import STRATEGIES, run_context_eval
from evals.context_lab.strategy import build_request
from evals.context_lab.topics import (
    baseline_sources,
    content_topics,
    engine_sources,
    graded_case,
    modes_of,
    topic_spec,
)
from pressroom import app
from tests.evals.conftest import BASE_CASE, BASE_SOURCE, MakeDataset

runner = CliRunner()
LABEL_ONLY = {k: v for k, v in BASE_CASE.items() if k != "topic_terms"}
WHY = "the text never names the topic"
#: a second case the baselines fail (they pass the changelog on) and the engine passes in
#: both modes, so that the gate has its measured improvement and only ``case-1`` decides
CHANGELOG = dict(BASE_SOURCE, id="changelog", topics=["ui"],
                 content="Version 4.2 moves the theme switcher to the profile menu.")
NOISE = dict(BASE_CASE, id="case-noise", candidate_source_ids=["changelog", "policy-current"])


def _case(**over: Any) -> dict[str, Any]:
    return dict(LABEL_ONLY, **over)


def _run(dataset: MakeDataset, tmp_path: Path, case: dict[str, Any],
         *extra: str) -> tuple[Result, Path]:
    cases, sources = dataset(sources=[dict(BASE_SOURCE), CHANGELOG], cases=[case, NOISE])
    out = tmp_path / "r"
    result = runner.invoke(app, ["eval", "context", "--cases", str(cases), "--sources",
                                 str(sources), "--output", str(out), *extra])
    return result, out


def _packets(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "context-packets.jsonl").read_text().splitlines()]


def _mine(out: Path, mode: str) -> dict[str, Any]:
    return next(p for p in _packets(out) if p["strategy"] == "pressroom"
                and p["topics_mode"] == mode and p["case_id"] == "case-1")


def test_content_mode_drops_declared_topics_before_the_engine() -> None:
    source = LabSource.model_validate(BASE_SOURCE)
    case = LabCase.model_validate(LABEL_ONLY)
    shown = engine_sources({source.id: source}, "content")
    assert shown[source.id].topics == [] and source.topics == ["rate-limit"]
    assert engine_sources({source.id: source}, "labels")[source.id] is source
    request = build_request(case, shown, budget=500, policy=load_policy("default"))
    manifest = assemble(request).manifest
    assert all(c.topics == [] for c in manifest.candidate_items
               if c.item_id == source.id)  # the sealed record: no label reached the engine


def test_a_case_passing_on_labels_fails_on_content_when_the_text_lacks_the_term(
        dataset: MakeDataset, tmp_path: Path) -> None:
    result, out = _run(dataset, tmp_path, _case())
    assert result.exit_code == 1, result.output
    assert "content:no_case_passes_only_on_labels: case-1" in result.output
    assert "passes only on labels (pressroom): case-1" in result.output
    labels, content = _mine(out, "labels"), _mine(out, "content")
    assert [s["id"] for s in labels["selected"]] == ["policy-current"]
    assert labels["missing_topics"] == [] and labels["passed"]
    assert content["selected"] == [] and content["missing_topics"] == ["rate-limit"]
    assert [(e["id"], e["reason"]) for e in content["excluded"]] == [
        ("policy-current", "not_required")]
    assert not content["passed"]
    data = json.loads((out / "context-comparison.json").read_text())
    assert data["topics"]["label_only"]["pressroom"] == ["case-1"]
    assert data["gate"]["checks"]["content:no_case_passes_only_on_labels"] == {
        "passed": False, "cases": ["case-1"]}
    assert data["gate"]["checks"]["all_available_required_evidence_retained"]["passed"]
    assert not data["gate"]["checks"]["content:all_available_required_evidence_retained"][
        "passed"]
    md = (out / "context-comparison.md").read_text()
    assert "- pressroom: case-1" in md
    failures = (out / "context-failures.md").read_text()
    assert "## pressroom: 0 failing case(s)" in failures
    assert "## pressroom (content topics): 1 failing case(s)" in failures


def test_a_topic_term_found_in_the_content_covers_the_topic(
        dataset: MakeDataset, tmp_path: Path) -> None:
    result, out = _run(dataset, tmp_path, _case(topic_terms={"rate-limit": ["429"]}))
    assert result.exit_code == 0, result.output
    content = _mine(out, "content")
    assert [s["id"] for s in content["selected"]] == ["policy-current"]
    assert content["missing_topics"] == [] and content["passed"]


def test_a_topic_that_needs_a_label_must_be_reported_missing_on_content(
        dataset: MakeDataset, tmp_path: Path) -> None:
    result, out = _run(dataset, tmp_path, _case(needs_label={"rate-limit": WHY}))
    assert result.exit_code == 0, result.output
    content = _mine(out, "content")
    assert content["missing_topics"] == ["rate-limit"] and content["passed"]
    data = json.loads((out / "context-comparison.json").read_text())
    assert data["topics"]["needs_label"] == [{
        "case_id": "case-1", "topic": "rate-limit", "why": WHY,
        "content_mode": {"passed": True, "missing_topics": ["rate-limit"]}}]
    assert f"| case-1 | rate-limit | {WHY} | pass, missing ['rate-limit'] |" in (
        out / "context-comparison.md").read_text()
    assert "topics that need a label: case-1/rate-limit" in result.output


def test_a_stale_needs_label_mark_fails_instead_of_hiding(
        dataset: MakeDataset, tmp_path: Path) -> None:
    """The content does name the topic (term ``429``): the engine covers it, so expecting it
    missing is wrong and the case fails in the content mode."""
    stale = _case(needs_label={"rate-limit": WHY}, topic_terms={"rate-limit": ["429"]})
    result, out = _run(dataset, tmp_path, stale)
    assert result.exit_code == 1, result.output
    content = _mine(out, "content")
    assert content["missing_topics"] == [] and not content["passed"]
    missing = next(g for g in content["grades"] if g["name"] == "missing_evidence")
    assert "expected=['rate-limit']" in missing["detail"]


def test_baselines_see_the_topics_their_content_names_in_content_mode() -> None:
    case = LabCase.model_validate(LABEL_ONLY)
    source = LabSource.model_validate(BASE_SOURCE)
    assert content_topics(case, source) == []
    termed = LabCase.model_validate(BASE_CASE)
    assert content_topics(termed, source) == ["rate-limit"]
    assert topic_spec(termed, "rate-limit").match_terms == ("rate-limit", "rate limit", "429")
    shown = baseline_sources(case, {source.id: source}, "content")
    assert shown[source.id].topics == []
    assert baseline_sources(case, {source.id: source}, "labels")[source.id] is source


def test_graded_case_expects_label_only_topics_missing_in_content_mode_only() -> None:
    case = LabCase.model_validate(_case(required_topics=["rate-limit", "retry"],
                                        expected_missing_topics=["retry"],
                                        needs_label={"rate-limit": WHY}))
    assert graded_case(case, "labels") is case
    assert graded_case(case, "content").expected_missing_topics == ["rate-limit", "retry"]


@pytest.mark.parametrize(("option", "modes"), [("labels", ["labels"]),
                                               ("content", ["content"]),
                                               ("both", ["labels", "content"])])
def test_topics_option_chooses_the_modes(dataset: MakeDataset, tmp_path: Path, option: str,
                                         modes: list[str]) -> None:
    result, out = _run(dataset, tmp_path, dict(BASE_CASE), "--topics", option)
    assert result.exit_code == 0, result.output
    data = json.loads((out / "context-comparison.json").read_text())
    assert data["topics"]["option"] == option and data["topics"]["modes"] == modes
    assert sorted({p["topics_mode"] for p in _packets(out)}) == sorted(modes)
    assert len(_packets(out)) == len(modes) * len(STRATEGIES) * 2
    content_checks = [k for k in data["gate"]["checks"] if k.startswith("content:")]
    assert bool(content_checks) == ("content" in modes)
    assert ("content:no_case_passes_only_on_labels" in content_checks) == (option == "both")


def test_default_is_both_modes(dataset: MakeDataset) -> None:
    cases, sources = dataset()
    result = run_context_eval(cases, sources)
    assert result.topics == "both" and list(result.modes) == ["labels", "content"]
    assert result.runs == result.modes["labels"].runs
    assert result.metrics == result.modes["labels"].metrics


def test_an_unknown_topics_option_is_unusable_input(
        dataset: MakeDataset, tmp_path: Path) -> None:
    result, out = _run(dataset, tmp_path, dict(BASE_CASE), "--topics", "declared")
    assert result.exit_code == 2
    assert "--topics" in result.output and "'declared'" in result.output
    assert not out.exists()
    with pytest.raises(DatasetError, match="labels, content, both"):
        modes_of("Labels")


@pytest.mark.parametrize(("over", "field", "message"), [
    ({"topic_terms": {"retry": ["backoff"]}}, "topic_terms.retry", "not one of required_topics"),
    ({"topic_terms": {"rate-limit": []}}, "topic_terms", "empty list of terms"),
    ({"topic_terms": {"rate-limit": [" "]}}, "topic_terms", "blank term"),
    ({"needs_label": {"retry": WHY}}, "needs_label.retry", "not one of required_topics"),
    ({"needs_label": {"rate-limit": " "}}, "needs_label", "say why"),
    ({"needs_label": {"rate-limit": WHY}, "expected_missing_topics": ["rate-limit"]},
     "needs_label.rate-limit", "expected missing anyway"),
    ({"needs_labels": {"rate-limit": WHY}}, "needs_labels", "unknown field"),
])
def test_topic_fields_are_loaded_strictly(dataset: MakeDataset, tmp_path: Path,
                                          over: dict[str, Any], field: str,
                                          message: str) -> None:
    result, _ = _run(dataset, tmp_path, _case(**over))
    assert result.exit_code == 2, result.output
    assert f"field '{field}'" in result.output and message in result.output
