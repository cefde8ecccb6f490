"""The job spec is validated before anything starts, and a bad one names its field."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.errors import JobSpecError
from contracts.job_spec import load_job_spec, parse_duration, parse_job_spec
from tests.workflows.jobkit import job_dict

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "job.yaml"


def test_example_job_loads_with_paths_resolved_against_its_folder() -> None:
    spec = load_job_spec(EXAMPLE)
    assert spec.job_id and spec.review.reviewers
    assert Path(spec.destination).is_absolute()
    assert spec.workspace is not None and Path(spec.workspace).is_absolute()
    # placeholders stay as written; the worker expands them
    assert any("${PRESSROOM_FIXTURES}" in getattr(s, "path", getattr(s, "repo", ""))
               for s in spec.sources)


@pytest.mark.parametrize(("change", "field"), [
    ({"job_id": "has space"}, "job_id"),
    # the job id names the published file (<destination>/<job_id>.md): no way out of it
    ({"job_id": "../x"}, "job_id"),
    ({"job_id": "a/b"}, "job_id"),
    ({"job_id": "a\\b"}, "job_id"),
    ({"job_id": ".."}, "job_id"),
    ({"job_id": "x\n"}, "job_id"),
    ({"topics": []}, "topics"),
    ({"topics": [{"name": "x", "terms": []}]}, "topics.0.terms"),
    ({"review": {"reviewers": ["alice"], "timeout": "soon"}}, "review.timeout"),
    ({"review": {"reviewers": []}}, "review.reviewers"),
    ({"sources": [{"kind": "ftp", "name": "x", "path": "/x"}]}, "sources.0"),
    ({"sources": [{"kind": "git", "name": "r", "repo": "/r", "commit": "a..b"}]},
     "sources.0.git.commit"),
    # pinned means pinned: a commit is a full id, never a name or a refspec
    ({"sources": [{"kind": "git", "name": "r", "repo": "/r",
                   "commit": "refs/pull/123/head:refs/tags/v2"}]}, "sources.0.git.commit"),
    ({"sources": [{"kind": "git", "name": "r", "repo": "/r", "commit": "v2"}]},
     "sources.0.git.commit"),
    ({"sources": [{"kind": "git", "name": "r", "repo": "/r", "ref": "-v2"}]},
     "sources.0.git.ref"),
    ({"sources": [{"kind": "git", "name": "r", "repo": "/r"}]}, "sources.0.git"),
    ({"block_timeout": -5}, "block_timeout"),
    ({"surprise": 1}, "surprise"),
    ({"model": {"adapter": "gpt"}}, "model.adapter"),
])
def test_bad_spec_names_the_field(tmp_path: Path, change: dict[str, object], field: str) -> None:
    data = job_dict(tmp_path, tmp_path)
    data.update(change)
    with pytest.raises(JobSpecError) as err:
        parse_job_spec(data, origin="job.yaml")
    assert f"field '{field}" in str(err.value)
    assert "job.yaml" in str(err.value)


def test_job_principal_can_not_be_a_reviewer(tmp_path: Path) -> None:
    data = job_dict(tmp_path, tmp_path, review={"reviewers": ["agent-writer", "alice"]})
    with pytest.raises(JobSpecError, match="can never review its own draft"):
        parse_job_spec(data)


def test_duplicate_source_names_rejected(tmp_path: Path) -> None:
    src = {"kind": "document", "name": "same", "path": str(tmp_path)}
    with pytest.raises(JobSpecError, match="duplicate source names"):
        parse_job_spec(job_dict(tmp_path, tmp_path, sources=[src, src]))


def test_yaml_errors_are_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "job.yaml"
    bad.write_text("job_id: [unclosed\n", encoding="utf-8")
    with pytest.raises(JobSpecError, match="not valid YAML"):
        load_job_spec(bad)
    with pytest.raises(JobSpecError, match="cannot read job spec"):
        load_job_spec(tmp_path / "missing.yaml")
    listy = tmp_path / "list.yaml"
    listy.write_text(yaml.safe_dump([1, 2]), encoding="utf-8")
    with pytest.raises(JobSpecError, match="mapping at the top level"):
        load_job_spec(listy)


def test_yaml_and_encoding_errors_are_a_single_line(tmp_path: Path) -> None:
    """PyYAML's own message spans several lines; the CLI prints errors as one line."""
    bad = tmp_path / "job.yaml"
    bad.write_text("job_id: x\nquestion: [unclosed\n", encoding="utf-8")
    with pytest.raises(JobSpecError) as err:
        load_job_spec(bad)
    text = str(err.value)
    assert "\n" not in text
    assert "line 3, column 1" in text and "flow sequence" in text
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"job_id: \xff\xfe\n")
    with pytest.raises(JobSpecError, match="not UTF-8"):
        load_job_spec(binary)


def test_durations_round_trip_through_iso8601() -> None:
    assert parse_duration("90s") == timedelta(seconds=90)
    assert parse_duration("10m") == timedelta(minutes=10)
    assert parse_duration(2.5) == timedelta(seconds=2.5)
    assert parse_duration("PT30S") == timedelta(seconds=30)  # how payloads carry it
    for bad in ("0s", "-1", "P", "tomorrow", True):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_spec_survives_json_round_trip(tmp_path: Path) -> None:
    spec = parse_job_spec(job_dict(tmp_path, tmp_path))
    again = type(spec).model_validate_json(spec.model_dump_json())
    assert again == spec


def test_block_timeout_is_an_optional_override(tmp_path: Path) -> None:
    """Absent, the policy's ``blocking.block_timeout`` alone bounds a block; given, it can
    only shorten it (the workflow waits for the smaller of the two)."""
    data = job_dict(tmp_path, tmp_path)
    del data["block_timeout"]
    assert parse_job_spec(data).block_timeout is None
    data["block_timeout"] = "5m"
    assert parse_job_spec(data).block_timeout == timedelta(minutes=5)
    data["block_timeout"] = "0s"
    with pytest.raises(JobSpecError, match="block_timeout"):
        parse_job_spec(data)


def test_workflow_waits_for_the_shorter_of_policy_and_spec(tmp_path: Path) -> None:
    from contracts.activity_messages import ContextRef
    from workflows.research_job import ResearchJobWorkflow

    def wait(spec_timeout: str | None, policy_s: int | None) -> timedelta:
        data = {**job_dict(tmp_path, tmp_path), "block_timeout": spec_timeout}
        wf = ResearchJobWorkflow.__new__(ResearchJobWorkflow)  # no worker: pure logic
        wf._spec = parse_job_spec(data)
        ref = ContextRef(manifest_id="m", step_id="draft-3", stage="draft", status="blocked",
                         blocked_reason="required_evidence_missing", block_timeout_s=policy_s)
        return wf._block_timeout(ref)

    assert wait(None, 7200) == timedelta(hours=2)          # the policy decides
    assert wait("10m", 7200) == timedelta(minutes=10)      # the spec may shorten it
    assert wait("5h", 7200) == timedelta(hours=2)          # ... never extend it
    assert wait("10m", None) == timedelta(minutes=10)      # refs recorded before the field
    assert wait(None, None) == timedelta(hours=24)


def test_a_job_spec_file_s_errors_never_quote_it(tmp_path: Path) -> None:
    """Errors about a job spec *file* name its field and line, never a value or key from
    it (before: ``not a duration: '<secret>'``, ``Input tag '<secret>' found`` and an
    unknown key by name)."""
    from tests.secret_files import ACCESS_KEY, DB_URL, SECRET_KEY, TOKEN, leaked

    data = job_dict(tmp_path, tmp_path)
    data["review"] = {"reviewers": ["alice"], "timeout": ACCESS_KEY}
    data["sources"] = [{"kind": TOKEN, "name": "x", "path": "/x"},
                       {"kind": "git", "name": "g", "repo": "/r", "commit": SECRET_KEY}]
    data["principal"] = {"principal_id": "agent", "clearance": DB_URL}
    data[SECRET_KEY] = 1
    bad = tmp_path / "job.yaml"
    bad.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(JobSpecError) as err:
        load_job_spec(bad)
    text = str(err.value)
    assert leaked(text) == [], text
    assert str(bad) in text and "\n" not in text
    assert "field 'review.timeout' (line" in text and "not a duration: <value>" in text
    assert "field 'sources.0' (line" in text and "unknown 'kind'" in text
    assert "unknown key (line" in text
    # the same mapping built in code (not read from a file) still names what is wrong
    with pytest.raises(JobSpecError, match=ACCESS_KEY):
        parse_job_spec(data)


@pytest.mark.parametrize("kind", ["json", "ini", "ini-no-section", "bad-yaml", "tabbed-yaml"])
def test_a_credentials_file_given_as_the_job_spec_is_not_quoted(tmp_path: Path,
                                                              kind: str) -> None:
    from tests.secret_files import leaked, write_secret_files

    with pytest.raises(JobSpecError) as err:
        load_job_spec(write_secret_files(tmp_path)[kind])
    assert leaked(str(err.value)) == [], str(err.value)


def test_a_relative_policy_path_is_resolved_against_the_job_file(tmp_path: Path) -> None:
    """Before: a relative policy path was left as written and read from the worker's
    working directory."""
    data = {**job_dict(tmp_path, tmp_path), "policy": "policies/mine.yaml"}
    job = tmp_path / "jobs" / "job.yaml"
    job.parent.mkdir()
    job.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert load_job_spec(job).policy == str(tmp_path / "jobs" / "policies" / "mine.yaml")
    data["policy"] = "strict"  # a shipped policy's name stays a name
    job.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert load_job_spec(job).policy == "strict"


@pytest.mark.parametrize("url", [
    "https://alice:s3cr3t-pa55@git.example.com/team/repo.git",
    "https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/team/repo",
])
def test_a_repository_url_with_credentials_is_refused_without_echoing_them(
        tmp_path: Path, url: str) -> None:
    """The spec travels in history, manifests and tool-call arguments: a token in a
    repository URL would reach them all, so the spec is refused and the error names the
    field, never the value."""
    data = job_dict(tmp_path, tmp_path, sources=[
        {"kind": "git", "name": "r", "repo": url, "commit": "a" * 40}])
    with pytest.raises(JobSpecError, match="carries a password or token") as err:
        parse_job_spec(data)
    assert "s3cr3t" not in str(err.value) and "ghp_" not in str(err.value)
    assert "sources.0.git.repo" in str(err.value)


# --- names the store will be handed, checked by the store's own rule at submit ---

#: before: each of these passed the spec and then failed on the worker on every retry
#: (``record_review`` for a reviewer named ``ops/alice``, the research for a blank term)
STORE_REFUSES = [
    ({"review": {"reviewers": ["ops/alice"]}}, "review.reviewers.0.name", "path separator"),
    ({"review": {"reviewers": ["alice"], "operators": ["ops\\bob"]}},
     "review.operators.0.name", "path separator"),
    ({"review": {"reviewers": ["alice", " bob"]}}, "review.reviewers.1.name",
     "leading or trailing whitespace"),
    ({"review": {"reviewers": [".."]}}, "review.reviewers.0.name", "relative path component"),
    ({"review": {"reviewers": ["ali\u200bce"]}}, "review.reviewers.0.name",
     "control character U+200B"),
    ({"principal": "ops/agent"}, "principal.principal_id", "path separator"),
    ({"principal": {"principal_id": "agent\t"}}, "principal.principal_id",
     "control character U+0009"),
    ({"scope": {"tenant": "acme/eu", "project": "docs", "task": "t1"}}, "scope.tenant",
     "path separator"),
    ({"scope": {"tenant": "acme", "project": "..", "task": "t1"}}, "scope.project",
     "relative path component"),
    ({"scope": {"tenant": "acme", "project": "docs", "task": "t" * 256}}, "scope.task",
     "256 characters long (max 255)"),
    ({"topics": [{"name": "retries", "terms": ["retry", " "]}]}, "topics.0.terms.1",
     "must not be blank"),
    ({"topics": [{"name": "retries", "terms": [""]}]}, "topics.0.terms.0", "must not be blank"),
    ({"topics": [{"name": "\t", "terms": ["retry"]}]}, "topics.0.name", "must not be blank"),
    ({"question": " \n "}, "question", "must not be blank"),
]


@pytest.mark.parametrize(("change", "field", "reason"), STORE_REFUSES)
def test_a_name_the_store_refuses_is_refused_by_the_spec(
        tmp_path: Path, change: dict[str, object], field: str, reason: str) -> None:
    """One line naming the field and the reason, from a mapping and from a file; the value
    itself is never quoted (``contracts.identifiers``)."""
    data = {**job_dict(tmp_path, tmp_path), **change}
    if "review" in change:
        data = job_dict(tmp_path, tmp_path, **change)  # pinned keys: only the name is wrong
    with pytest.raises(JobSpecError) as err:
        parse_job_spec(data, origin="job.yaml")
    text = str(err.value)
    assert f"field '{field}'" in text and reason in text and "\n" not in text, text
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(JobSpecError) as err:
        load_job_spec(job)
    text = str(err.value)
    assert f"field '{field}' (line" in text and reason in text and "\n" not in text, text
    for bad in ("ops/alice", "ops\\bob", "acme/eu", "ops/agent"):
        assert bad not in text


def test_the_rule_is_the_store_s_own() -> None:
    """``contracts.identifiers`` asks ``artifacts.ids``: one definition, the same verdict."""
    from artifacts.ids import identifier_problem
    from contracts.identifiers import store_name

    for value in ("alice", "ops/alice", "", " x", "..", "a\nb", "x" * 256, "Überblick"):
        problem = identifier_problem(value)
        if problem is None:
            assert store_name(value) == value
        else:
            with pytest.raises(ValueError, match=re.escape(problem)):
                store_name(value)


@settings(max_examples=200, deadline=None)
@given(name=st.text(min_size=1, max_size=260))
def test_every_name_the_spec_accepts_the_store_accepts(name: str) -> None:
    """Property: a principal, reviewer, operator or scope name that passes the spec builds
    the store's ``Principal`` and ``Scope`` — nothing the spec lets through fails later."""
    import artifacts
    from contracts.job_spec import PrincipalSpec, ReviewerSpec, ScopeSpec

    accepted: list[str] = []
    for build in (lambda: PrincipalSpec(principal_id=name),
                  lambda: ReviewerSpec(name=name),
                  lambda: ScopeSpec(tenant=name, project=name, task=name)):
        try:
            build()
        except ValueError:
            continue
        accepted.append(name)
    for value in accepted:
        artifacts.Principal(principal_id=value, tenant=value, project=value)
        artifacts.Scope(tenant=value, project=value, task=value)


@settings(max_examples=100, deadline=None)
@given(job_id=st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z"),
       source=st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z"))
def test_job_ids_and_source_names_are_store_identifiers(job_id: str, source: str) -> None:
    """Their own patterns are narrower than the store's rule (and the rule runs too)."""
    from artifacts.ids import identifier_problem

    if job_id in (".", "..") or source in (".", ".."):
        return  # the patterns cannot produce these (first character is alphanumeric)
    assert identifier_problem(job_id) is None and identifier_problem(source) is None


def test_a_spec_changed_in_code_is_checked_again_before_it_starts(tmp_path: Path) -> None:
    """``model_copy(update=...)`` skips validation; ``recheck_job_spec`` (run by
    ``client.jobs.start_job``) does not."""
    from contracts.job_spec import ReviewerSpec, recheck_job_spec

    spec = parse_job_spec(job_dict(tmp_path, tmp_path))
    assert recheck_job_spec(spec) == spec
    bad = spec.model_copy(update={"review": spec.review.model_copy(update={
        "reviewers": [ReviewerSpec.model_construct(name="ops/alice", public_key=None)]})})
    with pytest.raises(JobSpecError, match=r"field 'review\.reviewers\.0\.name': .*path "
                                           "separator") as err:
        recheck_job_spec(bad)
    assert "ops/alice" not in str(err.value)
