"""``pressroom eval context`` end to end on the bundled dataset, through the real engine.

Nothing is faked: the CLI runs ``context.assemble`` on every case, grades both strategies
and writes the four reports. The bundled run must pass the release gate (exit 0) and
``--budget 10`` must fail it (exit 1) naming the cases.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from evals.context_lab.reports import REPORT_FILES
from pressroom import app

runner = CliRunner()
PACKET_FIELDS = {"case_id", "strategy", "selected", "excluded", "missing_topics", "budget",
                 "fingerprint", "manifest_id", "hashes", "rendered_context", "acquisitions"}


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path]:
    out = tmp_path_factory.mktemp("bundled")
    result = runner.invoke(app, ["eval", "context", "--output", str(out)])
    return result, out


def test_bundled_run_passes_the_gate(bundled: tuple[Result, Path]) -> None:
    result, out = bundled
    assert result.exit_code == 0, result.output
    assert "release gate: PASS" in result.output
    assert "Context assembly eval" in result.output  # the rich summary table
    for name in REPORT_FILES:
        assert (out / name).is_file()


def test_bundled_reports_hold_the_issue_fields(bundled: tuple[Result, Path]) -> None:
    _, out = bundled
    data = json.loads((out / "context-comparison.json").read_text())
    assert data["gate"]["passed"] is True
    base, cand = data["strategies"]["dump-all"], data["strategies"]["pressroom"]
    assert cand["passed_cases"] == cand["cases"] >= 20
    assert base["passed_cases"] < cand["passed_cases"]
    assert len(data["improvements"]) >= 3 and data["regressions"] == []
    for key in ("case_pass_rate", "required_topic_coverage", "forbidden_exposures",
                "irrelevant_exposures", "budget_compliance", "missing_evidence_accuracy",
                "mean_tokens"):
        assert key in cand
    lines = [json.loads(x) for x in (out / "context-packets.jsonl").read_text().splitlines()]
    # one line per case, strategy and topic mode (both modes by default)
    assert data["topics"]["modes"] == ["labels", "content"]
    assert len(lines) == 2 * len(data["strategies"]) * cand["cases"]
    assert [x["topics_mode"] for x in lines] == (
        ["labels"] * (len(lines) // 2) + ["content"] * (len(lines) // 2))
    assert list(data["strategies"]) == ["dump-all", "gated-dump", "top-k", "pressroom"]
    for line in lines:
        assert PACKET_FIELDS <= set(line)
        assert set(line["budget"]) == {"used", "limit"}
        assert all(set(s) == {"id", "tokens"} for s in line["selected"])
        assert all(set(e) == {"id", "reason", "gate", "detail"} and e["detail"]
                   for e in line["excluded"])
        # every candidate's acquisition outcome (the lab retrieves every one)
        assert [a["outcome"] for a in line["acquisitions"]] == ["retrieved"] * len(
            line["acquisitions"])
        assert len(line["acquisitions"]) == len(line["selected"]) + len(line["excluded"])
    ready = [x for x in lines if x["strategy"] == "pressroom"]
    assert all(x["manifest_id"] and x["hashes"]["serialized_model_input_hash"] for x in ready)
    failures = (out / "context-failures.md").read_text()
    assert "## dump-all" in failures and "## pressroom: 0 failing case(s)" in failures
    assert "## gated-dump" in failures and "## top-k" in failures
    assert "## pressroom (content topics): 0 failing case(s)" in failures


def test_bundled_gate_compares_against_the_strongest_baseline(bundled: tuple[Result, Path]) -> None:
    result, out = bundled
    data = json.loads((out / "context-comparison.json").read_text())
    counts = {name: data["strategies"][name]["passed_cases"] for name in data["baselines"]}
    assert data["gate"]["baseline"] in {n for n, c in counts.items() if c == max(counts.values())}
    assert data["gate"]["baseline_selection"] == "strongest"
    assert f"gate baseline: {data['gate']['baseline']} (strongest)" in result.output
    assert set(data["comparisons"]) == set(data["baselines"])
    strongest = data["comparisons"][data["gate"]["baseline"]]
    assert strongest["improvements"] == data["improvements"]
    assert all(set(row) >= {"case_id", "change", *data["strategies"]} for row in data["cases"])
    md = (out / "context-comparison.md").read_text()
    assert f"against `{data['gate']['baseline']}` (the strongest baseline" in md
    assert "## pressroom against each baseline" in md


def test_a_chosen_baseline_and_k_reach_the_reports(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "context", "--baseline", "dump-all", "--top-k", "1",
                                 "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "context-comparison.json").read_text())
    assert data["gate"]["baseline"] == "dump-all" and data["gate"]["baseline_selection"] == "chosen"
    assert data["top_k"] == 1
    topk = [json.loads(x) for x in (tmp_path / "context-packets.jsonl").read_text().splitlines()
            if '"strategy": "top-k"' in x]
    assert all(len(p["selected"]) <= 1 for p in topk)


def test_bundled_reports_are_deterministic(bundled: tuple[Result, Path], tmp_path: Path) -> None:
    first, out = bundled
    again = runner.invoke(app, ["eval", "context", "--output", str(tmp_path)])
    assert again.exit_code == first.exit_code
    for name in REPORT_FILES:
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name


def test_budget_ten_fails_the_gate_and_names_the_cases(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "context", "--budget", "10", "--output",
                                 str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "release gate: FAIL" in result.output
    assert "all_available_required_evidence_retained: ctx-01-current-policy" in result.output
    data = json.loads((tmp_path / "context-comparison.json").read_text())
    assert data["budget_override"] == 10 and data["gate"]["passed"] is False
    failing = data["gate"]["checks"]["all_available_required_evidence_retained"]["cases"]
    assert "ctx-02-expired-version" in failing
    packets = [json.loads(x) for x in (tmp_path / "context-packets.jsonl").read_text().splitlines()]
    assert all(p["budget"]["used"] <= 10 for p in packets)
    assert all(p["budget"]["limit"] == 10 for p in packets)
