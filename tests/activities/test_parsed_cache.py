"""Parsed values are kept by the content hash of the bytes they came from, and bounded."""

from __future__ import annotations

from activities.parsed import ParsedCache


def test_parse_runs_once_per_content_hash_and_inputs() -> None:
    cache = ParsedCache(entries=2)
    calls: list[str] = []

    def parse(tag: str) -> tuple[str, ...]:
        calls.append(tag)
        return (tag,)

    assert cache.get("items", "sha256:a", lambda: parse("a")) == ("a",)
    assert cache.get("items", "sha256:a", lambda: parse("again")) == ("a",)
    assert calls == ["a"]
    # another body, another kind of parse, or other inputs: parsed afresh
    assert cache.get("items", "sha256:b", lambda: parse("b")) == ("b",)
    assert cache.get("other", "sha256:a", lambda: parse("other")) == ("other",)
    assert cache.get("items", "sha256:a", lambda: parse("scoped"), "tenant-2") == ("scoped",)
    assert calls == ["a", "b", "other", "scoped"]
    # bounded: the least recently used entries are gone
    assert cache.get("items", "sha256:a", lambda: parse("a2")) == ("a2",)
    assert len(cache._values) == 2
