"""A job's own model endpoint (``model.base_url``), from the operator's allow-list, on the
real dev server.

Two jobs run on ONE worker: one on the worker's default OpenAI-compatible endpoint
(``OPENAI_BASE_URL``, with ``OPENAI_API_KEY``), one on a second endpoint the operator listed
as needing no key. Each endpoint is a local server replaying API-shaped Chat Completions
replies through the official ``openai`` SDK (``tests.workflows.replay_api``: no model API
is reachable here); each must receive only its own job's requests, each with its own key.
A ``base_url`` the worker's list lacks is refused by its path pre-check (what ``pressroom
run`` asks) and by ``store_job_spec``, before anything reads a source.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from activities.runtime import ActivityRuntime
from client import jobs
from contracts.job_spec import JobSpec
from contracts.model_endpoints import load_endpoints
from settings import Settings
from tests.waiting import wait_for
from tests.workflows.jobkit import roots_for, running_worker, start_job, wait_status
from tests.workflows.replay_api import Turn, replaying_api

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

LOCAL = Settings.from_env(os.environ).locations
SCRIPT: list[Turn] = [[("search", {"source": "handbook", "query": "retry"})],
          [("finish", {"summary": "done", "open_items": []})]]
QUESTION_A = "How does the client retry failed requests (default endpoint)?"
QUESTION_B = "How does a stopped download resume (second endpoint)?"


def _questions(requests: list[dict[str, Any]]) -> set[str]:
    """Which of the two jobs' questions the requests carry."""
    text = json.dumps(requests)
    return {q for q in (QUESTION_A, QUESTION_B) if json.dumps(q)[1:-1] in text}


async def test_two_jobs_on_one_worker_each_reach_their_own_endpoint(
        client: Any, store_url: str, tmp_path: Path, task_queue: str,
        make_spec: Callable[..., JobSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    keys_a: list[str] = []
    keys_b: list[str] = []
    with replaying_api(SCRIPT, keys=keys_a) as (url_a, requests_a), \
            replaying_api(SCRIPT, keys=keys_b) as (url_b, requests_b):
        monkeypatch.setenv("OPENAI_BASE_URL", url_a)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-real")
        monkeypatch.delenv("SECOND_KEY", raising=False)
        listed = tmp_path / "endpoints.yaml"
        listed.write_text(yaml.safe_dump({"endpoints": [
            {"name": "second", "url": url_b + "/", "key_required": False,
             "key_env": "SECOND_KEY"}]}), encoding="utf-8")
        runtime = ActivityRuntime(store_url, locations=LOCAL, roots=roots_for(tmp_path),
                                  endpoints=load_endpoints(listed))
        spec_a = make_spec(question=QUESTION_A,
                           model={"provider": "openai", "name": "replayed-model"})
        spec_b = make_spec(question=QUESTION_B,
                           model={"provider": "openai", "name": "replayed-model",
                                  "base_url": url_b})
        async with running_worker(client, runtime, task_queue):
            handle_a = await start_job(client, spec_a, task_queue)
            handle_b = await start_job(client, spec_b, task_queue)
            done = {"blocked", "awaiting_review", "failed", "needs_operator"}
            status_a, status_b = await asyncio.gather(wait_status(handle_a, done),
                                                      wait_status(handle_b, done))
            await handle_a.terminate("test over")
            await handle_b.terminate("test over")
    # each job made its research turns, on its own endpoint only
    for status in (status_a, status_b):
        assert status.status == "blocked" and status.research is not None, status
        assert status.research.turn == 2, status
    assert requests_a and requests_b
    assert _questions(requests_a) == {QUESTION_A}
    assert _questions(requests_b) == {QUESTION_B}
    # the default endpoint got the worker's key; the second, listed as needing none, never
    assert set(keys_a) == {"test-key-not-real"}
    assert keys_b and "test-key-not-real" not in keys_b


async def test_a_base_url_off_the_workers_list_is_refused_before_the_job_reads(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    with replaying_api(SCRIPT) as (url, requests):
        spec = make_spec(model={"provider": "openai", "name": "replayed-model",
                                "base_url": url})
        async with running_worker(client, runtime, task_queue):
            await wait_for(lambda: jobs.has_pollers(client, task_queue), 60,
                           "the worker polling")
            verdict = await jobs.check_paths_on_worker(client, spec, task_queue=task_queue)
            assert verdict is not None and verdict.refusal is not None
            assert "model.base_url" in verdict.refusal and url not in verdict.refusal
            # started around the pre-check: store_job_spec refuses it, non-retryably
            handle = await start_job(client, spec, task_queue)
            status = await wait_status(handle, {"needs_operator", "failed", "blocked",
                                                "awaiting_review"})
            await handle.terminate("test over")
    assert status.status in ("needs_operator", "failed"), status
    assert "ModelEndpointRefused" in json.dumps(status.model_dump(mode="json")), status
    assert requests == []  # the model was never called
