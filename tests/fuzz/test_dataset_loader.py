"""Fuzzing the eval dataset loader (``evals.context_lab.dataset``): mutated sources and
cases files load, or fail with one ``DatasetError`` line naming the file (and the line).

Unlike a job spec or a policy, the lab's errors quote the offending value on purpose (its
tests want ``'ghost'`` and ``2026-13-45`` in them: the files are the operator's own
dataset, not a path a job names), so no marker check here — but a quoted value is bounded
(``reprlib``), however long or deep it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from evals.context_lab.dataset import load_cases, load_sources
from evals.context_lab.errors import DatasetError
from tests.evals.conftest import BASE_CASE, BASE_SOURCE
from tests.fuzz.conftest import fuzz
from tests.fuzz.documents import JSON_TRICKS, is_one_line, json_lines, json_values, mutated

CASE: dict[str, Any] = {
    **BASE_CASE, "scope": "acme/press/t1", "principal": "agent",
    "policy": {"budget": {"response_reserve": 100}},
    "tool_history": [{"type": "call", "call_id": "c1", "tool_name": "read",
                      "arguments": {"path": "a"}},
                     {"type": "result", "call_id": "c1", "tool_name": "read",
                      "content": "ok"}],
    "expected_excluded": {"policy-current": "expired"},
    "expected_anomalies": [{"type": "orphan_tool_result_dropped", "call_id": "c9"}],
    "needs_label": {"rate-limit": "no text says it"},
    "forbidden_text": ["hunter2"], "retained_text": ["c1"],
}
SOURCE: dict[str, Any] = {**BASE_SOURCE, "scope": "acme/press", "revision": 3,
                          "canonical_key": "retry", "observed_at": "2026-11-11T10:00:00",
                          "intended_role": "untrusted_data", "source_type": "web_page"}
SECOND = {**SOURCE, "id": "other", "canonical_key": None}


def test_the_base_documents_are_valid(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_text(json_lines([SOURCE, SECOND]), encoding="utf-8")
    (tmp_path / "c.jsonl").write_text(json_lines([CASE]), encoding="utf-8")
    load_cases(tmp_path / "c.jsonl", load_sources(tmp_path / "s.jsonl"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-dataset")


def _lines(base: dict[str, Any]) -> st.SearchStrategy[list[Any]]:
    record = st.one_of(mutated(base, leaves=json_values, max_depth=200), st.just(base),
                       st.sampled_from(JSON_TRICKS))
    return st.lists(record, min_size=0, max_size=3)


@fuzz()
@given(sources=_lines(SOURCE), cases=_lines(CASE))
@example(sources=["[" * 100_000 + "]" * 100_000], cases=[])  # RecursionError from json
@example(sources=["1" * 5000], cases=[])  # ValueError: Python's int digit limit
@example(sources=[SOURCE], cases=[{**CASE, "tool_history": {"calls": [1]}}])  # TypeError
@example(sources=[SOURCE], cases=[{**CASE, "budget": [[[[[[[["x" * 10**5]]]]]]]]}])
@example(sources=[{**SOURCE, "trust": "x" * 10**5}], cases=[])  # quoted twice, unbounded
def test_a_dataset_loads_or_is_one_error(folder: Path, sources: list[Any],
                                         cases: list[Any]) -> None:
    sources_path, cases_path = folder / "sources.jsonl", folder / "cases.jsonl"
    sources_path.write_text(json_lines([*sources, SECOND]), encoding="utf-8")
    cases_path.write_text(json_lines(cases), encoding="utf-8")
    try:
        load_cases(cases_path, load_sources(sources_path))
    except DatasetError as exc:
        message = str(exc)
        assert is_one_line(message) and exc.path in message
        assert len(message) < 2000, message[:300]


@fuzz(0.5)
@given(raw=st.binary(max_size=300))
def test_bytes_are_one_error(folder: Path, raw: bytes) -> None:
    path = folder / "bytes.jsonl"
    path.write_bytes(raw)
    try:
        load_sources(path)
    except DatasetError as exc:
        assert is_one_line(str(exc))
