"""Builders for context-engine tests: a valid request in one call, items in one line each.

Every builder returns real engine objects (no mocks); tests override only what they
exercise, so each test states the one thing it is about.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from context import (
    AssemblyRequest,
    ContextItem,
    ContextPolicy,
    ModelSpec,
    PrincipalContext,
    ScopeRef,
    SourceRef,
    TopicSpec,
    load_policy,
)
from context.vocabulary import Role, SecurityClass, SourceType, Trust

AS_OF = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SCOPE = ScopeRef(tenant="acme", project="press", task="t42")
POLICY = load_policy("default")
STRICT = load_policy("strict")
#: the default policy compacting every aged tool pair at once into one history summary
#: (``compact_block: 1``, no research-log fold, the last 4 pairs verbatim), as the
#: compaction tests and the opening case describe it; the default lays the history out as
#: a research log (``fold_every``, context/tools/fold.py)
PER_PAIR = ContextPolicy.model_validate({
    **POLICY.model_dump(mode="json"),
    "tool_pairs": {**POLICY.tool_pairs.model_dump(mode="json"), "compact_block": 1,
                   "fold_every": 0, "keep_recent": 4}})


def item(item_id: str, content: str = "", **kw: Any) -> ContextItem:
    """An item with sensible defaults for its source type (evidence by default)."""
    source_type = kw.pop("source_type", SourceType.OFFICIAL_DOCUMENT)
    defaults: dict[str, Any] = {
        "item_id": item_id,
        "content": content or f"content of {item_id}",
        "source_type": source_type,
        "producer": "test",
        "scope": SCOPE,
        "observed_at": AS_OF - timedelta(days=1),
        "trust": Trust.EXTERNAL_EVIDENCE,
        "intended_role": Role.UNTRUSTED_DATA,
        "source_ref": SourceRef(url=f"https://example.org/{item_id}"),
    }
    defaults.update(kw)
    return ContextItem.build(**defaults)


def _kind(item_id: str, content: str, base: dict[str, Any], kw: dict[str, Any]) -> ContextItem:
    return item(item_id, content, **{**base, **kw})


def control(item_id: str = "policy-system", content: str = "Follow the research policy.",
            **kw: Any) -> ContextItem:
    return _kind(item_id, content, {"source_type": SourceType.SYSTEM_POLICY,
                                    "trust": Trust.CONTROL_AUTHORITY,
                                    "intended_role": Role.CONTROL}, kw)


def task(item_id: str = "job-spec", content: str = "Write an article on retry policies.",
         **kw: Any) -> ContextItem:
    return _kind(item_id, content, {"source_type": SourceType.USER_REQUEST,
                                    "trust": Trust.TASK_AUTHORITY,
                                    "intended_role": Role.TASK_INTENT}, kw)


def state(item_id: str = "run-state", content: str = "stage: research", **kw: Any) -> ContextItem:
    return _kind(item_id, content, {"source_type": SourceType.RUNTIME_STATE,
                                    "trust": Trust.TRUSTED_STATE, "intended_role": Role.STATE}, kw)


def code(item_id: str, content: str, *, repo: str = "pi", commit: str = "53fa77cc",
         path: str = "src/types.ts", lines: tuple[int, int] | None = None,
         **kw: Any) -> ContextItem:
    n = content.count("\n") + 1
    start, end = lines or (1, n)
    ref = SourceRef(repo=repo, commit=commit, path=path, line_start=start, line_end=end)
    return _kind(item_id, content, {"source_type": SourceType.REPOSITORY_SOURCE,
                                    "trust": Trust.REPOSITORY_EVIDENCE, "source_ref": ref,
                                    "revision": commit}, kw)


def web(item_id: str, content: str, **kw: Any) -> ContextItem:
    return _kind(item_id, content, {"source_type": SourceType.WEB_PAGE,
                                    "trust": Trust.UNTRUSTED_EXTERNAL_DATA}, kw)


def topic(name: str, *terms: str, blocking: bool = False) -> TopicSpec:
    return TopicSpec(name=name, terms=tuple(terms), blocking=blocking)


def request(candidates: list[ContextItem] | None = None, *, base: bool = True,
            raw_candidates: tuple[Any, ...] | None = None, **kw: Any) -> AssemblyRequest:
    """A request with a control and a task item (``base``) plus ``candidates``.

    ``raw_candidates`` replaces the candidate list verbatim (dicts allowed: bad input).
    """
    cands: Any = ([control(), task()] if base else []) + list(candidates or [])
    if raw_candidates is not None:
        cands = raw_candidates
    fields: dict[str, Any] = {
        "run_id": "run-1",
        "step_id": "step-1",
        "stage": "research",
        "as_of": AS_OF,
        "principal": PrincipalContext(principal_id="agent", clearance=SecurityClass.CONFIDENTIAL,
                                      scope=ScopeRef(tenant="acme", project="press")),
        "scope": SCOPE,
        "policy": POLICY,
        "model": ModelSpec(provider="openai", name="gpt-test", context_limit=32_000),
        "question": "How should a client retry on HTTP 429?",
        "decision": "choose the retry policy to recommend",
        "required_topics": (topic("rate-limit", "429", "rate limit"),),
        "candidates": tuple(cands),
    }
    fields.update(kw)
    return AssemblyRequest(**fields)
