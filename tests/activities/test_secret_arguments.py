"""Secrets a model or a tool put into text that travels on are redacted first.

Pure: the reply is built here as the provider would return it; the helper-process body
runs in this process on its own event loop; the blocked detail is computed from a body.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from activities import offload
from activities.context_activity import _detail
from activities.decide import plan_calls
from activities.providers.base import ProposedToolCall, ProviderDecision

#: assembled from parts: this file holds no literal token shape
TOKEN = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0" + "k1L2m3N4o5P6q7R8"


def test_a_token_in_a_repository_url_argument_does_not_travel() -> None:
    url = f"https://x-access-token:{TOKEN}@github.com/org/repo.git"
    reply = ProviderDecision(model="m", provider="p", tool_calls=[
        ProposedToolCall(provider_call_id="a", name="search",
                         arguments={"source": url, "query": "retry"}),
        ProposedToolCall(provider_call_id="b", name="note",
                         arguments={"topic": "t", "claim": "DB_PASSWORD=hunter2hunter2 works",
                                    "citations": []}),
        ProposedToolCall(provider_call_id="c", name="list", arguments={"source": "handbook"}),
    ])
    planned = plan_calls(reply, turn=2, max_calls=8)
    assert planned[0].arguments == {
        "source": "https://x-access-token:[REDACTED:github_token]@github.com/org/repo.git",
        "query": "retry"}
    assert planned[1].arguments["claim"] == (
        "DB_PASSWORD=[REDACTED:unquoted_assigned_secret] works")
    assert planned[2].arguments == {"source": "handbook"}  # nothing to redact: as asked
    assert all(c.refusal is None for c in planned)
    assert TOKEN not in str([c.model_dump() for c in planned])


def test_a_blocked_detail_in_workflow_history_is_redacted() -> None:
    detail = _detail({"blocked_detail": "history summary failed: postgresql://app:s3cr3t@db/x"})
    assert detail is not None and "s3cr3t" not in detail
    assert "[REDACTED:url_password]" in detail
    assert _detail({"missing_topics": ["retries"]}) == "missing topics: retries"


class _Input(BaseModel):
    pass


@pytest.fixture
def helper_body(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``offload._call`` as a helper process runs it, with a body that fails quoting a
    credential."""
    async def fails(runtime: Any, inp: _Input) -> BaseModel:
        raise RuntimeError(f"clone of https://x-access-token:{TOKEN}@github.com/o/r failed")

    runner = asyncio.Runner()
    monkeypatch.setattr(offload, "_runner", runner)
    monkeypatch.setattr(offload, "_body", lambda name: (fails, _Input))
    try:
        yield
    finally:
        runner.close()


def test_a_helper_error_message_is_redacted_before_it_becomes_an_application_error(
        helper_body: None) -> None:
    ok, out = offload._call("assemble_context", "{}")
    assert not ok and isinstance(out, dict)
    assert TOKEN not in out["message"] and "[REDACTED:github_token]" in out["message"]
    assert out["type"] == "RuntimeError"
