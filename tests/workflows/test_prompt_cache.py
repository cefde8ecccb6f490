"""Prompt caching requested and measured on whole jobs.

What is requested and measured: docs/context-engine.md#prompt-cache-identity. Everything
runs for real: the session's dev server, a worker with Pressroom's activities, the SQLite
store under a temporary ``$PRESSROOM_HOME`` and the ``pressroom trace`` command as a
separate process. Only the paid model APIs are faked: the official OpenAI and Anthropic
SDKs talk to a local server replaying API-shaped replies (``tests/workflows/replay_api.py``)
that report cached and cache-write input tokens as the APIs do. The offline provider's job
needs no fake at all.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from activities.runtime import ActivityRuntime, principal_of
from context.seal.adapters import get_adapter
from context.seal.cache import shared_prefix_tokens
from context.tokens import TokenCounter
from contracts.job_spec import JobSpec, parse_job_spec
from settings import Settings
from tests.workflows.jobkit import (
    job_dict,
    roots_for,
    running_worker,
    start_job,
    store_json,
    wait_status,
)
from tests.workflows.replay_api import (
    CACHED_TOKENS,
    distinct_requests,
    replayed_anthropic,
    replayed_openai,
)
from tests.workflows.test_cli import pressroom

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

LOCAL = Settings.from_env(os.environ).locations
SCRIPT: Any = [[("search", {"source": "handbook", "query": "retry"})],
               [("search", {"source": "handbook", "query": "resume"})],
               [("finish", {"summary": "done", "open_items": []})]]


def _job(tmp_path: Path, docs: Path, **overrides: Any) -> tuple[Path, ActivityRuntime, JobSpec]:
    home = tmp_path / "home"
    home.mkdir()
    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{home / 'pressroom.db'}", locations=LOCAL,
                              roots=roots_for(tmp_path))
    return home, runtime, parse_job_spec(job_dict(tmp_path, docs, **overrides))


async def _run(temporal_env: Any, runtime: ActivityRuntime, spec: JobSpec,
               task_queue: str, home: Path) -> tuple[str, dict[str, Any]]:
    """Run the job until it waits, then ``pressroom trace`` it (text, then ``--json``)
    while the worker still answers the command's query."""
    address = temporal_env.client.service_client.config.target_host
    async with running_worker(temporal_env.client, runtime, task_queue):
        handle = await start_job(temporal_env.client, spec, task_queue)
        status = await wait_status(handle, {"blocked", "awaiting_review", "failed"})
        assert status.status in ("blocked", "awaiting_review"), status
        traced = await _trace(home, address, spec)
        await handle.terminate("test over")
    return traced


async def _turns(runtime: ActivityRuntime, spec: JobSpec) -> list[dict[str, Any]]:
    """Each research turn's stored reply and the manifest it was sent under."""
    store = await runtime.store()
    turns = []
    for number in range(1, 100):
        try:
            decision = await store_json(runtime, spec, "model_decision",
                                        f"{spec.job_id}.turn.{number:04d}")
        except Exception:  # past the last turn
            break
        manifest = await store.get_manifest(decision["manifest_id"],
                                            principal=principal_of(spec))
        turns.append({"usage": decision["usage"], "manifest": manifest})
    return turns


async def _trace(home: Path, address: str, spec: JobSpec) -> tuple[str, dict[str, Any]]:
    rc, text, err = await pressroom(home, address, "trace", spec.job_id)
    assert rc == 0, err
    rc, out, err = await pressroom(home, address, "trace", spec.job_id, "--json")
    assert rc == 0, err
    return text, json.loads(out)


Replayed = Callable[[pytest.MonkeyPatch, Any], Any]


@pytest.mark.parametrize(("provider", "adapter", "replayed"), [
    ("openai", "openai_chat", replayed_openai),
    ("anthropic", "anthropic_messages", replayed_anthropic),
], ids=["openai", "anthropic"])
async def test_replayed_cache_figures_reach_the_turn_record_manifest_and_trace(
        temporal_env: Any, tmp_path: Path, docs: Path, task_queue: str,
        monkeypatch: pytest.MonkeyPatch, provider: str, adapter: str,
        replayed: Replayed) -> None:
    """The sealed request asks for caching (Anthropic: an ephemeral breakpoint closing the
    stable prefix; OpenAI: one per-job ``prompt_cache_key`` naming nothing of the job), and
    the cached / cache-write input tokens the API reported land in each turn's stored reply,
    its manifest's usage and ``pressroom trace`` (text and ``--json``), beside the engine's
    own count of the cacheable prefix."""
    home, runtime, spec = _job(tmp_path, docs, model={
        "provider": provider, "name": "replayed-model", "adapter": adapter})
    requests: list[dict[str, Any]]
    with replayed(monkeypatch, SCRIPT) as requests:
        text, report = await _run(temporal_env, runtime, spec, task_queue, home)
    sent = [r for r in distinct_requests(requests) if r.get("tools")]
    assert len(sent) == 3
    if provider == "openai":
        keys = {r["prompt_cache_key"] for r in sent}
        assert len(keys) == 1 and next(iter(keys)).startswith("pressroom-")
        assert spec.job_id not in next(iter(keys))
        # tools first, then the system message: the prefix OpenAI caches on its own
        expected = [(0, 0), (CACHED_TOKENS, 0), (CACHED_TOKENS, 0)]
    else:
        for body in sent:
            [system] = body["system"]
            assert system["cache_control"] == {"type": "ephemeral"}
            get_adapter(adapter).validate(body)  # what reached the API passes the rules
        expected = [(0, CACHED_TOKENS), (CACHED_TOKENS, 0), (CACHED_TOKENS, 0)]
    turns = await _turns(runtime, spec)
    assert [(t["usage"]["cached_input_tokens"], t["usage"]["cache_write_input_tokens"])
            for t in turns] == expected
    # Anthropic: the stable prefix, and once a turn has aged into the research log (the
    # third turn) its newest block too (docs/context-engine.md#the-research-log-layout)
    breakpoints = [1, 1, 2] if provider == "anthropic" else [0, 0, 0]
    for t, marks in zip(turns, breakpoints, strict=True):
        assert t["usage"]["input_tokens"] == 1000  # cached and written are parts of it
        budget, cache = t["manifest"]["budget"], t["manifest"]["cache"]
        assert (budget["actual_input_tokens"], budget["cached_input_tokens"],
                budget["cache_write_input_tokens"]) == (
            1000, t["usage"]["cached_input_tokens"], t["usage"]["cache_write_input_tokens"])
        assert cache["cacheable_prefix_tokens"] == t["usage"]["cacheable_prefix_tokens"] > 0
        assert cache["breakpoints"] == marks
        assert cache["prompt_cache_key"] == (sent[0].get("prompt_cache_key"))
    assert [(t["cached_input_tokens"], t["cache_write_input_tokens"])
            for t in report["turns"]] == expected
    assert [t["cacheable_prefix_tokens"] for t in report["turns"]] == [
        t["usage"]["cacheable_prefix_tokens"] for t in turns]
    prefix = turns[1]["usage"]["cacheable_prefix_tokens"]
    assert f"cached {CACHED_TOKENS} written 0 of prefix {prefix} " in text, text


def _offline_prefixes(turns: list[dict[str, Any]]) -> Iterator[int]:
    counter = TokenCounter()
    previous = None
    for t in turns:
        payload = json.loads(t["manifest"]["serialized_request"]["canonical_json"])
        yield shared_prefix_tokens(previous, payload, counter,
                                   get_adapter(t["manifest"]["adapter"]["name"]))
        previous = payload


async def test_offline_provider_reports_the_byte_identical_prefix_it_would_cache(
        temporal_env: Any, tmp_path: Path, docs: Path, task_queue: str) -> None:
    """The offline provider has no cache: each turn reports, as cached input, the tokens of
    the prefix its request shares byte for byte with the previous turn's (tools first, as
    providers read them) — 0 on the first turn, the whole stable prefix at least after."""
    home, runtime, spec = _job(tmp_path, docs)
    text, report = await _run(temporal_env, runtime, spec, task_queue, home)
    turns = await _turns(runtime, spec)
    assert len(turns) >= 3
    reported = [t["usage"]["cached_input_tokens"] for t in turns]
    assert reported == list(_offline_prefixes(turns))
    assert reported[0] == 0
    for before, cached in zip(turns, reported[1:], strict=False):
        assert cached <= before["usage"]["input_tokens"]  # a cache holds only what was sent
    for t, cached in zip(turns[1:], reported[1:], strict=True):
        assert t["usage"]["cacheable_prefix_tokens"] <= cached < t["usage"]["input_tokens"]
        assert t["usage"]["cache_write_input_tokens"] == 0
        assert t["manifest"]["budget"]["cached_input_tokens"] == cached
    assert [t["cached_input_tokens"] for t in report["turns"]] == reported
    assert f"cached {reported[1]} written 0 of prefix " in text, text
