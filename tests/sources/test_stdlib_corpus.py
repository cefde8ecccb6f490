"""The standard-library corpus: built the same everywhere from this interpreter's files, and
the rendered asyncio job pins its commit and asks about terms the corpus really holds."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from contracts.errors import JobSpecError
from contracts.job_spec import JobSpec, load_job_spec
from contracts.source_specs import GitSourceSpec
from examples.build_fixtures import (
    STDLIB_FILES,
    STDLIB_JOB,
    STDLIB_JOB_TEMPLATE,
    STDLIB_REPO,
    FixtureBuildError,
    build_fixtures,
    build_stdlib_repo,
    render_template,
    stdlib_dir,
)
from tests.sources.conftest import tool


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _show(repo: Path, rev: str, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"],
                          capture_output=True, check=True).stdout


def _stdlib(fixtures: Path) -> dict[str, object]:
    info = json.loads((fixtures / "fixtures.json").read_text())["stdlib"]
    assert isinstance(info, dict)
    return info


def _job(fixtures: Path) -> JobSpec:
    return load_job_spec(fixtures / STDLIB_JOB)


def _source(job: JobSpec) -> GitSourceSpec:
    source = job.source_named(STDLIB_REPO)
    assert isinstance(source, GitSourceSpec)
    return source


def test_build_is_deterministic_and_environment_independent(
    shared_fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A second build elsewhere, under a user config that would change author and line
    # endings, commits the same tree as the same commit.
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Someone Else\n\temail = x@y.z\n"
        "[core]\n\tautocrlf = true\n\teol = crlf\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    other = build_fixtures(tmp_path / "elsewhere")["stdlib"]
    assert isinstance(other, dict)
    info = _stdlib(shared_fixtures)
    assert other["commit"] == info["commit"]
    assert info["files"] == len(STDLIB_FILES)
    sha = str(info["commit"])
    assert len(sha) == 40
    repo = shared_fixtures / "repos" / STDLIB_REPO
    assert _git(repo, "rev-parse", "HEAD") == sha
    assert _git(repo, "log", "--format=%an <%ae> %aI|%cn <%ce> %cI", sha) == (
        "Pressroom Fixtures <fixtures@pressroom.invalid> 2024-01-01T00:00:00+00:00|"
        "Pressroom Fixtures <fixtures@pressroom.invalid> 2024-01-01T00:00:00+00:00"
    )


def test_corpus_is_the_listed_files_byte_for_byte(shared_fixtures: Path) -> None:
    repo = shared_fixtures / "repos" / STDLIB_REPO
    sha = str(_stdlib(shared_fixtures)["commit"])
    listed = _git(repo, "ls-tree", "-r", "--name-only", sha).splitlines()
    assert sorted(listed) == sorted(f"Lib/{f}" for f in STDLIB_FILES)
    assert not any("__pycache__" in p for p in listed)
    src = stdlib_dir()
    for rel in ("asyncio/taskgroups.py", "asyncio/tasks.py", "queue.py"):
        assert _show(repo, sha, f"Lib/{rel}") == (src / rel).read_bytes()


def test_rendered_job_pins_the_built_commit(shared_fixtures: Path) -> None:
    job = _job(shared_fixtures)
    source = _source(job)
    assert source.commit == _stdlib(shared_fixtures)["commit"]
    assert source.repo == f"${{PRESSROOM_FIXTURES}}/repos/{STDLIB_REPO}"
    assert source.paths == ["Lib"]
    assert [s.name for s in job.sources] == [STDLIB_REPO]
    assert Path(job.destination) == (shared_fixtures / "published").resolve()
    assert 6 <= len(job.topics) <= 10
    assert all(1 <= len(t.terms) <= 4 for t in job.topics)
    assert "{{" not in (shared_fixtures / STDLIB_JOB).read_text()


def test_every_topic_term_occurs_in_the_corpus(shared_fixtures: Path) -> None:
    # Case-insensitive, literal (git grep -i -F), as the search tool matches, at the
    # pinned commit and paths.
    job = _job(shared_fixtures)
    source = _source(job)
    assert source.commit is not None  # the bundled job pins its source
    repo = shared_fixtures / "repos" / STDLIB_REPO
    absent = []
    for topic in job.topics:
        for term in topic.terms:
            found = subprocess.run(
                ["git", "-C", str(repo), "grep", "-q", "-i", "-F", "-e", term, source.commit,
                 "--", *source.paths], capture_output=True, check=False)
            assert found.returncode in (0, 1), found.stderr
            if found.returncode:
                absent.append(f"{topic.name}: {term}")
    assert absent == []
    # the question is about task groups: the module itself answers most topics
    module = _show(repo, source.commit, "Lib/asyncio/taskgroups.py").decode().lower()
    covered = [t.name for t in job.topics if any(term.lower() in module for term in t.terms)]
    assert len(covered) >= len(job.topics) // 2, covered


async def test_the_search_tool_finds_every_topic_of_the_rendered_job(
    shared_fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRESSROOM_FIXTURES", str(shared_fixtures))
    monkeypatch.setenv("PRESSROOM_HOME", str(tmp_path / "home"))
    job = _job(shared_fixtures)
    source = _source(job)
    missing, paths = [], set()
    for topic in job.topics:
        found = [await tool("search", source, query=term) for term in topic.terms]
        if not any(f["files"] for f in found):
            missing.append(topic.name)
        for f in found:
            assert "skipped" not in f, f["skipped"]
            assert {hit["revision"] for hit in f["files"]} <= {source.commit}
            paths |= {hit["path"] for hit in f["files"]}
    assert missing == []
    assert "Lib/asyncio/taskgroups.py" in paths


def test_rebuild_is_a_no_op(fresh_fixtures: Path) -> None:
    repo = fresh_fixtures / "repos" / STDLIB_REPO
    marker = repo / ".git" / "pressroom-test-marker"
    marker.write_text("kept")
    job_file = fresh_fixtures / STDLIB_JOB
    before = (job_file.read_text(), job_file.stat().st_mtime_ns)
    sha = _stdlib(fresh_fixtures)["commit"]
    again = build_fixtures(fresh_fixtures)["stdlib"]
    assert isinstance(again, dict) and again["commit"] == sha
    assert marker.exists(), "an unchanged repository must not be rebuilt"
    assert (job_file.read_text(), job_file.stat().st_mtime_ns) == before
    assert not [p.name for p in (fresh_fixtures / "repos").iterdir() if p.name.startswith(".")]


def test_a_changed_file_is_a_different_commit(tmp_path: Path) -> None:
    # The sha follows the files: another interpreter's stdlib pins another commit.
    src = tmp_path / "stdlib"
    for rel in STDLIB_FILES:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes((stdlib_dir() / rel).read_bytes())
    same = build_stdlib_repo(tmp_path / "a", src)
    assert same == build_stdlib_repo(tmp_path / "b", src)
    crlf = src / "queue.py"
    crlf.write_bytes(crlf.read_bytes().replace(b"\n", b"\r\n"))
    assert build_stdlib_repo(tmp_path / "c", src) != same
    assert _show(tmp_path / "c", "HEAD", "Lib/queue.py") == crlf.read_bytes()  # kept as is
    (src / "selectors.py").unlink()
    with pytest.raises(FixtureBuildError, match=r"selectors\.py"):
        build_stdlib_repo(tmp_path / "d", src)


def test_template_is_not_a_runnable_job() -> None:
    # Unrendered, the commit field is not a revision: the template fails validation.
    with pytest.raises(JobSpecError, match="commit"):
        load_job_spec(STDLIB_JOB_TEMPLATE)
    with pytest.raises(FixtureBuildError, match="nope"):
        render_template("commit: {{ nope }}", {"stdlib_commit": "x"})
    text = render_template("a: ${PRESSROOM_FIXTURES}/x\nb: {{stdlib_commit}}\n",
                           {"stdlib_commit": "abc"})
    assert text == "a: ${PRESSROOM_FIXTURES}/x\nb: abc\n"
