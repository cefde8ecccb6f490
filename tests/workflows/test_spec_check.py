"""``pressroom check`` and ``pressroom init``, run as a user runs them (a separate process
each), offline: no Temporal server is reachable at the address they are given, and nothing
is written under ``$PRESSROOM_HOME``.

Each kind of mistake is one line on stderr naming the field, and exit code 1; a valid spec
(and what ``init`` writes) is exit code 0. ``pressroom run`` runs the same checks before it
connects: a spec ``check`` refuses is refused by ``run`` without reaching Temporal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from contracts.errors import JobSpecError
from contracts.job_spec import JobSpec, parse_job_spec
from tests.workflows.jobkit import REPO_ROOT, job_dict, reviewer_entry, write_registry

CLI = [sys.executable, str(REPO_ROOT / "pressroom.py")]
#: nothing listens here: a command that tried to reach Temporal would fail on it
NO_SERVER = "127.0.0.1:9"
#: the variables a check reads keys from; each test says which are set
_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "LOCAL_KEY")


def pressroom(home: Path, *args: str, cwd: Path | str = REPO_ROOT,
              **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if k not in _KEYS and not k.startswith("PRESSROOM_")}
    return subprocess.run(
        [*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**base, "PRESSROOM_HOME": str(home), "PRESSROOM_TEMPORAL_ADDRESS": NO_SERVER,
             "COLUMNS": "200", **env})


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    write_registry(home, "alice", "bob")
    return home


@pytest.fixture
def roots(tmp_path: Path) -> dict[str, str]:
    return {"PRESSROOM_SOURCE_ROOTS": str(tmp_path), "PRESSROOM_PUBLISH_ROOTS": str(tmp_path)}


@pytest.fixture
def endpoints(tmp_path: Path) -> Path:
    path = tmp_path / "endpoints.yaml"
    path.write_text(yaml.safe_dump({"endpoints": [
        {"name": "local", "url": "http://127.0.0.1:8001/v1", "key_required": False},
        {"name": "gateway", "url": "https://llm.example.com/v1", "key_env": "LOCAL_KEY"},
    ]}), encoding="utf-8")
    return path


def _spec(tmp_path: Path, docs: Path, **overrides: Any) -> dict[str, Any]:
    data = job_dict(tmp_path, docs, **overrides)
    # by name, as a spec author writes it: check pins it from the registry
    review = data["review"]
    review["reviewers"] = [p["name"] if isinstance(p, dict) else p for p in review["reviewers"]]
    return data


def _write(tmp_path: Path, data: dict[str, Any], name: str = "job.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _snapshot(home: Path) -> set[str]:
    return {str(p.relative_to(home)) for p in home.rglob("*")}


def test_a_valid_spec_passes_and_nothing_is_written(
        tmp_path: Path, docs: Path, home: Path, roots: dict[str, str]) -> None:
    before = _snapshot(home)
    job = _write(tmp_path, _spec(tmp_path, docs))
    proc = pressroom(home, "check", str(job), **roots)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{job}: ok" and proc.stderr == ""
    assert _snapshot(home) == before  # no store, no log, nothing
    proc = pressroom(home, "check", str(job), "--json", **roots)
    assert proc.returncode == 0 and '"ok": true' in proc.stdout


def _model(**fields: Any) -> dict[str, Any]:
    return {"model": {"name": "some-model", **fields}}


#: (the spec's changes, the variables set, the field the one problem names, a phrase of it)
MISTAKES: dict[str, tuple[Callable[[Path, Path], dict[str, Any]], dict[str, str], str, str]] = {
    "schema": (lambda t, d: {"topics": []}, {}, "topics", "at least 1 item"),
    "unknown key": (lambda t, d: {"review": {"reviewers": ["alice"], "timout": "1d"}}, {},
                    "review", "did you mean 'timeout'"),
    "source outside the roots": (
        lambda t, d: {"sources": [{"kind": "document", "name": "etc", "path": "/etc"}]}, {},
        "sources.0.path", "outside the source roots"),
    "destination outside the roots": (lambda t, d: {"destination": "/var/tmp/out"}, {},
                                      "destination", "outside the publish roots"),
    "reviewer not registered": (lambda t, d: {"review": {"reviewers": ["carol"]}}, {},
                                "review.reviewers", "no public key for ['carol']"),
    "unknown provider": (lambda t, d: _model(provider="openia"), {}, "model.provider",
                         "unknown provider 'openia'"),
    "provider and adapter": (lambda t, d: _model(provider="anthropic"),
                             {"ANTHROPIC_API_KEY": "k"}, "model.adapter",
                             "sends 'anthropic_messages' requests, not 'openai_chat'"),
    "no key": (lambda t, d: _model(provider="openai"), {}, "model.provider",
               "OPENAI_API_KEY is not set"),
    "endpoint's key": (lambda t, d: _model(provider="openai",
                                           base_url="https://llm.example.com/v1"),
                       {"OPENAI_API_KEY": "k"}, "model.base_url", "LOCAL_KEY is not set"),
    "endpoint not listed": (lambda t, d: _model(provider="openai",
                                                base_url="http://10.0.0.7:8000/v1"),
                            {"OPENAI_API_KEY": "k"}, "model.base_url",
                            "not an endpoint this worker allows"),
    "base_url for anthropic": (lambda t, d: _model(provider="anthropic",
                                                   adapter="anthropic_messages",
                                                   base_url="http://127.0.0.1:8001/v1"),
                               {"ANTHROPIC_API_KEY": "k"}, "model.base_url",
                               "only provider 'openai'"),
    "policy": (lambda t, d: {"policy": "no-such-policy"}, {}, "policy",
               "unknown policy name"),
    "policy file": (lambda t, d: {"policy": str(t / "missing-policy.yaml")}, {}, "policy",
                    "does not exist"),
    "topic term": (lambda t, d: {"topics": [{"name": "retries", "terms": ["retry", "???"]}]},
                   {}, "topics.0.terms.1", "no letter or digit"),
    "topic term too long": (lambda t, d: {"topics": [{"name": "x", "terms": ["y" * 201]}]},
                            {}, "topics.0.terms.0", "longer than a search query"),
    "cost budget": (lambda t, d: {"research": {"cost_budget_usd": 1}}, {},
                    "research.cost_budget_usd", "extractive/extractive-v1 has no price"),
    "retired research mode": (lambda t, d: {"research": {"mode": "acquire"}}, {},
                              "research.mode", "'acquire' was retired"),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_each_kind_of_mistake_is_one_line_naming_the_field(
        mistake: str, tmp_path: Path, docs: Path, home: Path, roots: dict[str, str],
        endpoints: Path) -> None:
    change, keys, field, phrase = MISTAKES[mistake]
    data = _spec(tmp_path, docs, **change(tmp_path, docs))
    job = _write(tmp_path, data)
    before = _snapshot(home)
    proc = pressroom(home, "check", str(job), **roots, **keys,
                     PRESSROOM_MODEL_ENDPOINTS=str(endpoints))
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{job}: ") and "Traceback" not in proc.stderr
    assert field in lines[0] and phrase in lines[0], lines[0]
    assert proc.stdout == ""
    assert _snapshot(home) == before
    for secret in keys.values():
        assert f"={secret}" not in lines[0]


def test_a_live_web_page_among_local_sources_is_checked_by_its_own_rules(
        tmp_path: Path, docs: Path, home: Path, roots: dict[str, str]) -> None:
    """A live page names no local path: the path checks line up with the sources that do
    (a live page first used to shift them and crash the check), and its URL meets the
    operator's web allow-list."""
    page = {"kind": "web_page", "name": "status", "url": "https://status.example.org/p"}
    local = {"kind": "document", "name": "etc", "path": "/etc"}
    job = _write(tmp_path, _spec(tmp_path, docs, sources=[page, local]))
    proc = pressroom(home, "check", str(job), **roots,
                     PRESSROOM_WEB_ALLOWED_DOMAINS="status.example.org")
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1 and "sources.1.path" in lines[0], lines
    job = _write(tmp_path, _spec(tmp_path, docs, sources=[
        page, {"kind": "document", "name": "handbook", "path": str(docs)}]), "ok.yaml")
    proc = pressroom(home, "check", str(job), **roots,
                     PRESSROOM_WEB_ALLOWED_DOMAINS="status.example.org")
    assert proc.returncode == 0, proc.stderr
    proc = pressroom(home, "check", str(job), **roots)  # no domain allowed: one line
    assert proc.returncode == 1 and "sources" in proc.stderr and "Traceback" not in proc.stderr


def test_a_history_may_hold_the_retired_mode_that_a_new_spec_may_not() -> None:
    """A workflow's input read back from its history is validated without the submit
    context, so a job started with ``mode: acquire`` still replays."""
    data = {**job_dict(Path("/tmp"), Path("/tmp/docs")), "research": {"mode": "acquire"}}
    with pytest.raises(JobSpecError, match=r"research\.mode"):
        parse_job_spec(data)
    assert JobSpec.model_validate(data).research.mode == "acquire"


def test_a_listed_endpoint_that_needs_no_key_passes_without_one(
        tmp_path: Path, docs: Path, home: Path, roots: dict[str, str],
        endpoints: Path) -> None:
    job = _write(tmp_path, _spec(tmp_path, docs, **_model(
        provider="openai", base_url="http://127.0.0.1:8001/v1/")))
    proc = pressroom(home, "check", str(job), **roots, PRESSROOM_MODEL_ENDPOINTS=str(endpoints))
    assert proc.returncode == 0, proc.stderr
    # the worker's default endpoint, listed as needing none, needs none either
    job = _write(tmp_path, _spec(tmp_path, docs, **_model(provider="openai")), "default.yaml")
    proc = pressroom(home, "check", str(job), **roots, PRESSROOM_MODEL_ENDPOINTS=str(endpoints),
                     OPENAI_BASE_URL="http://127.0.0.1:8001/v1")
    assert proc.returncode == 0, proc.stderr
    # without the endpoint file no job may name a base_url
    proc = pressroom(home, "check", str(job.with_name("job.yaml")), **roots)
    assert proc.returncode == 1 and "model.base_url" in proc.stderr


def test_every_problem_is_reported_at_once(tmp_path: Path, docs: Path, home: Path,
                                           roots: dict[str, str]) -> None:
    data = _spec(tmp_path, docs, destination="/var/tmp/out", policy="no-such-policy",
                 topics=[{"name": "retries", "terms": ["---"]}],
                 **_model(provider="anthropic"))
    data["review"] = {"reviewers": ["carol"]}
    job = _write(tmp_path, data)
    proc = pressroom(home, "check", str(job), **roots)
    assert proc.returncode == 1
    fields = [ln.split(": ", 2)[1] for ln in proc.stderr.splitlines() if ln.strip()]
    assert fields == ["destination", "review.reviewers", "model.adapter", "model.provider",
                      "policy", "topics.0.terms.0"], proc.stderr


def test_run_runs_the_same_checks_before_connecting(
        tmp_path: Path, docs: Path, home: Path, roots: dict[str, str],
        endpoints: Path) -> None:
    """Nothing listens at the address: a refusal that names the field, not the connection,
    shows the check ran first."""
    for change, needle in (
            (_model(provider="openai", base_url="http://10.0.0.7:8000/v1"), "model.base_url"),
            (_model(provider="anthropic"), "model.adapter"),
            ({"review": {"reviewers": ["carol"]}}, "no public key for ['carol']")):
        data = _spec(tmp_path, docs, **change)
        if "review" in change:
            data["review"] = change["review"]
        job = _write(tmp_path, data)
        proc = pressroom(home, "run", str(job), **roots, OPENAI_API_KEY="k",
                         ANTHROPIC_API_KEY="k", PRESSROOM_MODEL_ENDPOINTS=str(endpoints))
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode == 1 and len(lines) == 1, proc.stderr
        assert lines[0].startswith("error:") and needle in lines[0], lines[0]


def test_init_writes_a_commented_spec_that_check_accepts(
        tmp_path: Path, docs: Path, home: Path, roots: dict[str, str]) -> None:
    repo = tmp_path / "lib"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("retry\n", encoding="utf-8")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    subprocess.run([*git, "tag", "v1"], check=True)
    sha = subprocess.run([*git, "rev-parse", "v1"], check=True, capture_output=True,
                         text=True).stdout.strip()
    page = tmp_path / "page.html"
    page.write_text("<p>retry</p>", encoding="utf-8")
    out = tmp_path / "new.yaml"
    args = ["init", "--question", "How does the client handle retries and resume offsets?",
            "--repo", "lib@v1", "--docs", "docs", "--page", f"{page}=https://example.org/p",
            "--reviewer", "alice", "--output", str(out),
            "--destination", str(tmp_path / "published")]
    proc = pressroom(home, *args, cwd=tmp_path, **roots)
    assert proc.returncode == 0, proc.stderr
    assert f"pinned lib: ref v1 → commit {sha}" in proc.stdout
    text = out.read_text(encoding="utf-8")
    assert text.count("\n#") >= 10  # commented
    data = yaml.safe_load(text)
    # topics from the question's content words, deterministically
    assert [t["name"] for t in data["topics"]] == ["client", "retries", "resume"]
    assert data["topics"][1]["terms"] == ["retries", "retry"]
    assert "offsets" in text.split("topics:")[0]
    git_source, doc_source, page_source = data["sources"]
    assert (git_source["ref"], git_source["commit"]) == ("v1", sha)
    assert doc_source["path"] == str(docs) and page_source["url"] == "https://example.org/p"
    proc = pressroom(home, "check", str(out), **roots)
    assert proc.returncode == 0, proc.stderr
    # never over an existing file, unless asked
    proc = pressroom(home, *args, cwd=tmp_path, **roots)
    assert proc.returncode == 1 and "already exists" in proc.stderr
    assert out.read_text(encoding="utf-8") == text
    proc = pressroom(home, *args, "--force", cwd=tmp_path, **roots)
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(out.read_text(encoding="utf-8"))["job_id"] != data["job_id"]


@pytest.mark.parametrize(("args", "needle"), [
    (["--docs", "docs"], "--reviewer"),
    (["--reviewer", "alice"], "at least one source"),
    (["--reviewer", "alice", "--page", "https://example.org/p"], "saved copy"),
    (["--reviewer", "alice", "--repo", "nowhere@v1"], "--repo nowhere@v1"),
])
def test_init_refuses_in_one_line(args: list[str], needle: str, tmp_path: Path, docs: Path,
                                  home: Path) -> None:
    proc = pressroom(home, "init", "--question", "How do retries work?", *args,
                     "--output", str(tmp_path / "x.yaml"), cwd=tmp_path)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 1 and len(lines) == 1 and needle in lines[0], proc.stderr
    assert not (tmp_path / "x.yaml").exists()


def test_registered_reviewers_only_refuses_a_key_the_registry_does_not_hold(
        tmp_path: Path, docs: Path, home: Path, roots: dict[str, str]) -> None:
    data = _spec(tmp_path, docs)
    forged = reviewer_entry("mallory")["public_key"]
    data["review"]["reviewers"] = [{"name": "alice", "public_key": forged}, "bob"]
    job = _write(tmp_path, data)
    assert pressroom(home, "check", str(job), **roots).returncode == 0
    proc = pressroom(home, "check", str(job), **roots, PRESSROOM_REGISTERED_REVIEWERS_ONLY="on")
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert "review.reviewers: reviewer 'alice' is not in the reviewer registry" in lines[0]
    assert forged not in lines[0]
