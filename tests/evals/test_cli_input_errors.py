"""``pressroom eval context`` on unusable input: exit 2 and a message naming line and field.

Runs the real CLI (typer's runner over ``pressroom.app``); no part of the lab is faked.
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner, Result

from pressroom import app
from tests.evals.conftest import BASE_CASE, BASE_SOURCE, MakeDataset

runner = CliRunner()


def _run(cases: Path, sources: Path, *extra: str, out: Path) -> Result:
    return runner.invoke(app, ["eval", "context", "--cases", str(cases), "--sources",
                               str(sources), "--output", str(out), *extra])


def test_missing_cases_file(tmp_path: Path, dataset: MakeDataset) -> None:
    _, sources = dataset()
    result = _run(tmp_path / "nope.jsonl", sources, out=tmp_path / "r")
    assert result.exit_code == 2
    assert "nope.jsonl" in result.output and "file not found" in result.output
    assert not (tmp_path / "r").exists()


def test_missing_sources_file(tmp_path: Path, dataset: MakeDataset) -> None:
    cases, _ = dataset()
    result = _run(cases, tmp_path / "absent.jsonl", out=tmp_path / "r")
    assert result.exit_code == 2
    assert "absent.jsonl" in result.output and "not found" in result.output


def test_case_names_unknown_source(tmp_path: Path, dataset: MakeDataset) -> None:
    second = dict(BASE_CASE, id="case-2", candidate_source_ids=["policy-current", "ghost"])
    cases, sources = dataset(cases=[dict(BASE_CASE), second])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2
    assert "line 2" in result.output
    assert "candidate_source_ids[1]" in result.output and "'ghost'" in result.output


def test_forbidden_id_must_exist(tmp_path: Path, dataset: MakeDataset) -> None:
    cases, sources = dataset(cases=[dict(BASE_CASE, forbidden_source_ids=["typo"])])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2
    assert "line 1" in result.output and "forbidden_source_ids[0]" in result.output


def test_duplicate_source_id(tmp_path: Path, dataset: MakeDataset) -> None:
    cases, sources = dataset(sources=[dict(BASE_SOURCE), dict(BASE_SOURCE)])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2
    assert "line 2" in result.output and "field 'id'" in result.output
    assert "duplicate source id 'policy-current'" in result.output


def test_duplicate_case_id(tmp_path: Path, dataset: MakeDataset) -> None:
    cases, sources = dataset(cases=[dict(BASE_CASE), "", dict(BASE_CASE)])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2
    assert "line 3" in result.output and "duplicate case id" in result.output


def test_bad_date_in_source(tmp_path: Path, dataset: MakeDataset) -> None:
    cases, sources = dataset(sources=[dict(BASE_SOURCE, updated_at="2026-13-45")])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2
    assert "line 1" in result.output and "field 'updated_at'" in result.output
    assert "2026-13-45" in result.output


def test_bad_as_of_in_case(tmp_path: Path, dataset: MakeDataset) -> None:
    cases, sources = dataset(cases=[dict(BASE_CASE, as_of="yesterday")])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2
    assert "field 'as_of'" in result.output and "yesterday" in result.output


def test_case_budget_below_one(tmp_path: Path, dataset: MakeDataset) -> None:
    cases, sources = dataset(cases=[dict(BASE_CASE, budget=0)])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2
    assert "line 1" in result.output and "field 'budget'" in result.output


def test_budget_option_below_one(tmp_path: Path, dataset: MakeDataset) -> None:
    cases, sources = dataset()
    result = _run(cases, sources, "--budget", "0", out=tmp_path / "r")
    assert result.exit_code == 2
    assert "budget" in result.output and "at least 1" in result.output


def test_unknown_baseline_and_k_below_one(tmp_path: Path, dataset: MakeDataset) -> None:
    cases, sources = dataset()
    result = _run(cases, sources, "--baseline", "best-guess", out=tmp_path / "r")
    assert result.exit_code == 2 and "--baseline" in result.output
    assert "gated-dump" in result.output
    result = _run(cases, sources, "--top-k", "0", out=tmp_path / "r")
    assert result.exit_code == 2 and "--top-k" in result.output and "at least 1" in result.output


def test_line_that_is_not_json(tmp_path: Path, dataset: MakeDataset) -> None:
    cases, sources = dataset(sources=[dict(BASE_SOURCE), "{not json"])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2
    assert "line 2" in result.output and "not valid JSON" in result.output


def test_missing_required_field_and_unknown_field(tmp_path: Path, dataset: MakeDataset) -> None:
    no_locator = {k: v for k, v in BASE_SOURCE.items() if k != "locator"}
    cases, sources = dataset(sources=[no_locator])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2
    assert "field 'locator'" in result.output and "missing" in result.output
    cases, sources = dataset(cases=[dict(BASE_CASE, forbiden_source_ids=[])])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2
    assert "field 'forbiden_source_ids'" in result.output and "unknown field" in result.output


def test_unknown_trust_label_and_sensitivity_range(tmp_path: Path, dataset: MakeDataset) -> None:
    cases, sources = dataset(sources=[dict(BASE_SOURCE, trust="mostly")])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2 and "field 'trust'" in result.output
    cases, sources = dataset(sources=[dict(BASE_SOURCE, sensitivity=9)])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2 and "field 'sensitivity'" in result.output


def test_expected_exclusion_must_name_a_candidate_and_a_known_reason(
        tmp_path: Path, dataset: MakeDataset) -> None:
    cases, sources = dataset(cases=[dict(BASE_CASE, expected_excluded={"other": "expired"})])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2 and "expected_excluded.other" in result.output
    cases, sources = dataset(
        cases=[dict(BASE_CASE, expected_excluded={"policy-current": "too_old"})])
    result = _run(cases, sources, out=tmp_path / "r")
    assert result.exit_code == 2 and "expected_excluded.policy-current" in result.output


def test_unknown_policy_name(tmp_path: Path, dataset: MakeDataset) -> None:
    cases, sources = dataset()
    result = _run(cases, sources, "--policy", "no-such-policy", out=tmp_path / "r")
    assert result.exit_code == 2
    assert "--policy" in result.output and "no-such-policy" in result.output
