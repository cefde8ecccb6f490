"""Fuzzing the job-spec loader (``contracts.job_spec``): a mutated job spec file is either a
``JobSpec`` whose names the store accepts, or one ``JobSpecError`` line that quotes nothing
from the file. The same mappings built in code (``parse_job_spec``) raise only
``JobSpecError`` too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

import artifacts
from contracts.errors import JobSpecError
from contracts.job_spec import JobSpec, load_job_spec, parse_job_spec, recheck_job_spec
from tests.fuzz.conftest import fuzz
from tests.fuzz.documents import MARKER, is_one_line, mutated, no_marker_in, yaml_texts
from tests.workflows.jobkit import job_dict

BASE: dict[str, Any] = {**job_dict(Path("/srv/jobs"), Path("/srv/jobs/docs")),
                        "job_id": "fuzz-job", "policy": "default",
                        "workspace": "/srv/jobs/ws"}
BASE["sources"] = [*BASE["sources"],
                   {"kind": "git", "name": "repo", "repo": "/srv/repo", "commit": "a" * 40,
                    "paths": ["src"]},
                   {"kind": "web_page", "name": "page", "path": "/srv/page.html",
                    "url": "https://example.org/"}]
BASE["review"] = {**BASE["review"], "operators": [BASE["review"]["reviewers"][1]]}
BASE["review"]["reviewers"] = BASE["review"]["reviewers"][:1]


def test_the_base_document_is_valid() -> None:
    """Guard the fuzz: the mutations start from a spec that loads."""
    parse_job_spec(BASE)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-job-spec")


def _loaded_names_reach_the_store(spec: JobSpec) -> None:
    """What loads, the store accepts (the point of validation at the door)."""
    artifacts.Principal(principal_id=spec.principal.principal_id, tenant=spec.scope.tenant,
                        project=spec.scope.project)
    artifacts.Scope(tenant=spec.scope.tenant, project=spec.scope.project,
                    task=spec.scope.task)
    for person in (*spec.review.reviewers, *spec.review.operators):
        artifacts.Principal(principal_id=person.name, tenant=spec.scope.tenant,
                            project=spec.scope.project)
    assert all(term.strip() for topic in spec.topics for term in topic.terms)
    assert recheck_job_spec(spec) == spec


@fuzz()
@given(text=yaml_texts(BASE))
@example(text="question: &a [*a]\n")  # an alias inside its own anchor: RecursionError
@example(text="question: " + "[" * 5000 + "]" * 5000 + "\n")  # RecursionError in PyYAML
@example(text="question: 2026-13-45\n")  # ValueError from PyYAML's date constructor
@example(text="question: " + "1" * 5000 + "\n")  # ValueError: Python's int digit limit
@example(text="question: 0x" + "f" * 5000 + "\n")  # ... once parsed, in the error scrubber
@example(text="job_id: 0b" + "1" * 20000 + "\n")  # ... and in pydantic (unraisable warnings)
@example(text="job_id: !!timestamp x\n")  # AttributeError from PyYAML's constructor
# names compared case-folded were quoted case-folded: a form the error scrubber missed
@example(text=yaml.safe_dump({**BASE, "review": {**BASE["review"],
                                                 "operators": [MARKER, MARKER.lower()]}}))
@example(text="review: {reviewers: [alice], timeout: 0x" + "f" * 300 + "}\n")  # Overflow
@example(text="a0: &a0 [q, q, q, q, q, q, q, q, q, q]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)))  # hours
def test_a_job_spec_file_loads_or_is_one_quiet_error(folder: Path, text: str) -> None:
    path = folder / "job.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        spec = load_job_spec(path)
    except JobSpecError as exc:
        message = str(exc)
        assert is_one_line(message) and str(path) in message
        assert no_marker_in(message), message
        return
    _loaded_names_reach_the_store(spec)


@fuzz()
@given(data=mutated(BASE))
def test_a_job_spec_mapping_validates_or_is_one_error(data: dict[str, Any]) -> None:
    try:
        spec = parse_job_spec(data, origin="<fuzz>")
    except JobSpecError as exc:
        assert is_one_line(str(exc))
        return
    _loaded_names_reach_the_store(spec)


@fuzz(0.5)
@given(raw=st.binary(max_size=200))
def test_bytes_are_one_error(folder: Path, raw: bytes) -> None:
    path = folder / "bytes.yaml"
    path.write_bytes(raw)
    try:
        load_job_spec(path)
    except JobSpecError as exc:
        assert is_one_line(str(exc))


def test_the_marker_would_be_seen() -> None:
    """Guard the guard: a mapping built in code still names its bad value, so a marker in
    the same place of a *file* would be caught if it were quoted."""
    with pytest.raises(JobSpecError, match=MARKER):
        parse_job_spec({**BASE, "review": {**BASE["review"], "timeout": MARKER}})
    assert yaml.safe_load(yaml.safe_dump({"k": MARKER})) == {"k": MARKER}
