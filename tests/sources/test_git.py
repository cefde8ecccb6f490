"""Git acquisition reads the pinned commit through the object database, never the worktree."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

from activities.sources import acquire, to_context_item
from context.items import ScopeRef, sha256_text
from context.vocabulary import AcquisitionOutcome, Role, SourceType, ToolStatus, Trust
from contracts.job_spec import TopicSpec
from contracts.source_specs import GitSourceSpec
from examples.build_fixtures import EXPECTED_COMMITS
from tests.sources.conftest import AS_OF, TOPICS, locations, roots

V1 = EXPECTED_COMMITS["backoff-lib"]["v1"]
V2 = EXPECTED_COMMITS["backoff-lib"]["v2"]
SCOPE = ScopeRef(tenant="acme", project="reliability", task="t1")


def _httpkit(fixtures: Path) -> GitSourceSpec:
    return GitSourceSpec(name="httpkit", repo=str(fixtures / "repos" / "httpkit"),
                         commit=EXPECTED_COMMITS["httpkit"]["v2"])


def _show(repo: Path, rev: str, path: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True, check=True
    )
    return out.stdout.decode().splitlines()


async def test_pinned_commit_not_working_tree(fresh_fixtures: Path) -> None:
    repo = fresh_fixtures / "repos" / "backoff-lib"
    # The checkout is at v2 and then edited: none of this may reach evidence read at v1.
    policy = repo / "backoff_lib" / "policy.py"
    policy.write_text(policy.read_text() + "\n# jitter max_delay LEAKED_WORKTREE\n")
    (repo / "untracked.py").write_text("jitter = 'LEAKED_UNTRACKED'\n")
    spec = GitSourceSpec(name="backoff-lib", repo=str(repo), commit=V1)
    result = await acquire(spec, TOPICS, call_id="call-1", as_of=AS_OF, locations=locations(),
                           roots=roots())

    assert result.outcome is AcquisitionOutcome.RETRIEVED
    assert result.revision == V1
    assert result.records, "v1 mentions jitter in its README"
    for rec in result.records:
        assert "LEAKED" not in rec.content
        assert rec.commit == V1 and rec.revision == V1
        assert rec.path != "untracked.py"
        lines = _show(repo, V1, rec.path)
        assert rec.content == "\n".join(lines[rec.line_start - 1 : rec.line_end])
        assert rec.content_hash == sha256_text(rec.content)
    # v1 has neither a cap nor Retry-After support: those topics stay uncovered.
    assert set(result.missing_topics) >= {"delay_cap", "retry_after", "idempotency"}


async def test_commit_is_the_full_id_lowercased(shared_fixtures: Path) -> None:
    """Names and short ids are refused by the spec (tests/sources/test_git_pins.py)."""
    repo = shared_fixtures / "repos" / "backoff-lib"
    for given in (V2.upper(), V2):
        spec = GitSourceSpec(name="backoff-lib", repo=str(repo), commit=given)
        assert spec.commit == V2
        result = await acquire(spec, TOPICS, call_id="c", as_of=AS_OF, locations=locations(),
                               roots=roots())
        assert result.revision == V2
        assert {r.commit for r in result.records} == {V2}


async def test_excerpts_are_bounded_with_line_ranges(shared_fixtures: Path) -> None:
    spec = GitSourceSpec(
        name="httpkit", repo=str(shared_fixtures / "repos" / "httpkit"),
        commit=EXPECTED_COMMITS["httpkit"]["v2"],
    )
    result = await acquire(spec, TOPICS, call_id="c", as_of=AS_OF, locations=locations(),
                           roots=roots())
    assert result.outcome is AcquisitionOutcome.RETRIEVED
    assert result.missing_topics == []
    by_path: dict[str, list[tuple[int, int]]] = {}
    for rec in result.records:
        assert rec.line_start is not None and rec.line_end is not None
        assert rec.line_end - rec.line_start + 1 <= 40
        by_path.setdefault(rec.path or "", []).append((rec.line_start, rec.line_end))
        assert rec.citation() == (
            f"httpkit@{rec.commit}:{rec.path}#L{rec.line_start}-L{rec.line_end}"
        )
    for spans in by_path.values():  # adjacent hits were merged: windows never touch
        spans.sort()
        assert all(b[0] > a[1] + 1 for a, b in itertools.pairwise(spans))
    idem = [r for r in result.records if "idempotency" in r.topics]
    assert any("IDEMPOTENT_METHODS" in r.content for r in idem)


async def test_test_log_gives_failures_and_an_artifact_ref(shared_fixtures: Path) -> None:
    spec = GitSourceSpec(
        name="backoff-lib", repo=str(shared_fixtures / "repos" / "backoff-lib"),
        commit=V2, paths=["logs"],
    )
    result = await acquire(spec, TOPICS, call_id="c", as_of=AS_OF, locations=locations(),
                           roots=roots())
    logs = [r for r in result.records if r.source_type is SourceType.TEST_LOG]
    assert logs and len(logs) == len(result.records)
    assert any("FAILED" in r.content and "Retry-After" in r.content for r in logs)
    assert all(r.artifact_ref and r.artifact_ref.startswith("git-blob:backoff-lib/") for r in logs)


async def test_missing_commit_is_retrieval_failed(shared_fixtures: Path) -> None:
    spec = GitSourceSpec(
        name="backoff-lib", repo=str(shared_fixtures / "repos" / "backoff-lib"),
        commit="0123456789abcdef0123456789abcdef01234567",
    )
    result = await acquire(spec, TOPICS, call_id="c", as_of=AS_OF, locations=locations(),
                           roots=roots())
    assert result.outcome is AcquisitionOutcome.RETRIEVAL_FAILED
    assert "0123456789abcdef" in (result.reason or "")
    assert result.records == [] and result.tool_result.status is ToolStatus.ERROR
    assert result.source_acquisition().outcome is AcquisitionOutcome.RETRIEVAL_FAILED


async def test_unreachable_repositories_are_retrieval_failed(tmp_path: Path) -> None:
    plain_dir = tmp_path / "not-a-repo"
    plain_dir.mkdir()
    cases = {
        str(tmp_path / "missing"): "does not exist",
        str(plain_dir): "not a git repository",
        f"file://{tmp_path}/nowhere.git": "unreachable",
    }
    for location, expected in cases.items():
        spec = GitSourceSpec(name="r", repo=location, commit=V1)
        result = await acquire(spec, TOPICS, call_id="c", as_of=AS_OF, locations=locations(),
                               roots=roots())
        assert result.outcome is AcquisitionOutcome.RETRIEVAL_FAILED, location
        assert expected in (result.reason or ""), result.reason


async def test_bad_path_is_retrieval_failed(shared_fixtures: Path) -> None:
    spec = GitSourceSpec(
        name="backoff-lib", repo=str(shared_fixtures / "repos" / "backoff-lib"),
        commit=V1, paths=["logs"],  # logs/ exists only from v2 on
    )
    result = await acquire(spec, TOPICS, call_id="c", as_of=AS_OF, locations=locations(),
                           roots=roots())
    assert result.outcome is AcquisitionOutcome.RETRIEVAL_FAILED
    assert "'logs'" in (result.reason or "")


async def test_no_matches_is_retrieved_with_zero_records(shared_fixtures: Path) -> None:
    topics = [TopicSpec(name="tls", terms=["certificate pinning"])]
    spec = _httpkit(shared_fixtures)
    result = await acquire(spec, topics, call_id="c", as_of=AS_OF, locations=locations(),
                           roots=roots())
    assert result.outcome is AcquisitionOutcome.RETRIEVED
    assert result.records == [] and result.missing_topics == ["tls"]
    assert result.tool_result.status is ToolStatus.SUCCESS


async def test_timeout_is_retrieval_failed(shared_fixtures: Path) -> None:
    spec = _httpkit(shared_fixtures)
    result = await acquire(spec, TOPICS, call_id="c", as_of=AS_OF, locations=locations(),
                           roots=roots(),
                           timeout=1e-6)
    assert result.outcome is AcquisitionOutcome.RETRIEVAL_FAILED
    assert "timed out" in (result.reason or "")


async def test_records_become_code_evidence_items(shared_fixtures: Path) -> None:
    spec = _httpkit(shared_fixtures)
    first = await acquire(spec, TOPICS, call_id="c", as_of=AS_OF, locations=locations(),
                          roots=roots())
    again = await acquire(spec, TOPICS, call_id="c", as_of=AS_OF, locations=locations(),
                          roots=roots())
    assert first == again, "same commit, same topics -> identical records and hashes"
    item = to_context_item(first.records[0], SCOPE)
    assert item.source_ref.is_complete_code_ref
    assert item.trust is Trust.REPOSITORY_EVIDENCE
    assert item.intended_role is Role.UNTRUSTED_DATA
    assert item.revision == EXPECTED_COMMITS["httpkit"]["v2"]
    assert item.source_request_id == "c"
    assert [n.type for n in item.source_lineage] == ["source", "excerpt"]
    assert item.source_lineage[-1].digest == item.content_hash == sha256_text(item.content)


async def test_url_sources_are_cloned_once_and_fetched_for_new_commits(
    fresh_fixtures: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("PRESSROOM_HOME", str(tmp_path / "home"))
    origin = fresh_fixtures / "repos" / "httpkit"
    url = f"file://{origin}"
    by_url = await acquire(
        GitSourceSpec(name="httpkit", repo=url, commit=EXPECTED_COMMITS["httpkit"]["v2"]),
        TOPICS, call_id="c", as_of=AS_OF, locations=locations(), roots=roots(),
    )
    by_path = await acquire(_httpkit(fresh_fixtures), TOPICS, call_id="c", as_of=AS_OF,
                            locations=locations(), roots=roots())
    assert by_url.outcome is AcquisitionOutcome.RETRIEVED
    assert by_url.records == by_path.records  # citations name the source, not its location
    caches = list((tmp_path / "home" / "git-cache").iterdir())
    assert len(caches) == 1 and (caches[0] / "HEAD").is_file(), caches

    # A commit made after the clone is fetched on demand, never read from a working tree.
    (origin / "NOTES.md").write_text("Retry-After handling was reviewed.\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "-C", str(origin), "add", "NOTES.md"], check=True, env=env)
    subprocess.run(["git", "-C", str(origin), "commit", "-qm", "notes"], check=True, env=env)
    new = subprocess.run(["git", "-C", str(origin), "rev-parse", "HEAD"], check=True,
                         capture_output=True, text=True, env=env).stdout.strip()
    later = await acquire(
        GitSourceSpec(name="httpkit", repo=url, commit=new, paths=["NOTES.md"]), TOPICS,
        call_id="c2", as_of=AS_OF, locations=locations(), roots=roots(),
    )
    assert later.outcome is AcquisitionOutcome.RETRIEVED, later.reason
    assert [r.path for r in later.records] == ["NOTES.md"] and later.revision == new


async def test_oversized_blobs_are_skipped_and_reported(shared_fixtures: Path, monkeypatch) -> None:
    import activities.sources.gitrepo as gitrepo

    monkeypatch.setattr(gitrepo, "MAX_BLOB_BYTES", 600)
    result = await acquire(_httpkit(shared_fixtures), TOPICS, call_id="c", as_of=AS_OF,
                           locations=locations(), roots=roots())
    assert result.outcome is AcquisitionOutcome.RETRIEVED
    assert result.tool_result.status is ToolStatus.PARTIAL
    assert "httpkit/client.py" in (result.reason or "") and "not read" in (result.reason or "")
    assert "httpkit/client.py" not in {r.path for r in result.records}
