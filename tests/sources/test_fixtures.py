"""The example fixtures build to the same commits on every machine, and the job pins them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from examples.build_fixtures import EXPECTED_COMMITS, build_fixtures

ROOT = Path(__file__).resolve().parents[2]


def _rev(repo: Path, rev: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", rev], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_fixture_shas_are_the_expected_ones(shared_fixtures: Path) -> None:
    for repo, versions in EXPECTED_COMMITS.items():
        for version, sha in versions.items():
            assert _rev(shared_fixtures / "repos" / repo, f"refs/tags/{version}") == sha


def test_shas_do_not_depend_on_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A user config that would change author, signing or line endings must not leak in.
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Someone Else\n\temail = x@y.z\n[core]\n\tautocrlf = true\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    result = build_fixtures(tmp_path / "elsewhere")
    assert result["repos"] == EXPECTED_COMMITS


def test_rebuild_is_idempotent_and_keeps_the_repository(fresh_fixtures: Path) -> None:
    marker = fresh_fixtures / "repos" / "httpkit" / ".git" / "pressroom-test-marker"
    marker.write_text("kept")
    assert build_fixtures(fresh_fixtures)["repos"] == EXPECTED_COMMITS
    assert marker.exists(), "an unchanged repository must not be rebuilt"
    assert (fresh_fixtures / "workspace" / "plan.md").is_file()
    assert (fresh_fixtures / "web" / "retry-storms.html").is_file()


def test_example_job_pins_the_fixture_commits() -> None:
    job = yaml.safe_load((ROOT / "examples" / "job.yaml").read_text())
    pins = {s["name"]: s["commit"] for s in job["sources"] if s["kind"] == "git"}
    assert pins == {name: versions["v2"] for name, versions in EXPECTED_COMMITS.items()}
    for source in job["sources"]:
        location = source.get("repo") or source.get("path")
        assert location.startswith("${PRESSROOM_FIXTURES}/"), location
