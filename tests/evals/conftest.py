"""Helpers for the context-lab tests: tiny JSONL datasets written to a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

import pytest

BASE_SOURCE: dict[str, Any] = {
    "id": "policy-current", "kind": "handbook", "title": "Retry policy",
    "content": "When the upstream answers 429, back off exponentially with jitter.",
    "locator": "repo://handbook/retry.md", "trust": "trusted", "authority": 3,
    "updated_at": "2026-11-10", "valid_until": None, "topics": ["rate-limit"],
    "sensitivity": 0,
}
BASE_CASE: dict[str, Any] = {
    "id": "case-1", "question": "How should the crawler retry on 429?",
    "as_of": "2026-11-20", "budget": 500, "clearance": 1,
    "required_topics": ["rate-limit"], "candidate_source_ids": ["policy-current"],
    # the source's text never says "rate limit": without this term only its label covers
    # the topic, and the case would pass on labels only (``--topics content`` fails it)
    "topic_terms": {"rate-limit": ["429"]},
}


def write_jsonl(path: Path, records: list[dict[str, Any]] | list[str]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class MakeDataset(Protocol):
    """The ``dataset`` fixture's factory: tests annotate their parameter with it."""

    def __call__(self, sources: list[Any] | None = None,
                 cases: list[Any] | None = None) -> tuple[Path, Path]: ...


@pytest.fixture
def dataset(tmp_path: Path) -> MakeDataset:
    """Factory: ``dataset(sources=[...], cases=[...])`` → (cases_path, sources_path)."""

    def make(sources: list[Any] | None = None,
             cases: list[Any] | None = None) -> tuple[Path, Path]:
        s = write_jsonl(tmp_path / "sources.jsonl", sources or [dict(BASE_SOURCE)])
        c = write_jsonl(tmp_path / "cases.jsonl", cases or [dict(BASE_CASE)])
        return c, s

    return make
