"""Cost in money end to end (docs/configuration.md#cost-in-money): the real ``pressroom``
process against the session's dev server and a real worker with the offline research
agent, whose token counts a test price table prices (no paid model API is called, so
nothing is faked).

* ``pressroom run`` refuses a job with a cost budget whose model has no price, in one line
  naming the model and ``PRESSROOM_PRICES``, before anything starts.
* With a price, the research loop blocks with ``budget_exhausted (… cost budget used)`` once
  the priced turns reach the budget; ``status --json`` and ``trace --json`` show the cost,
  each turn's exactly what the price table makes of its token counts;
  ``pressroom resolve JOB --cost-budget USD`` lets it go on to its draft.
* A worker whose own table has no price refuses the paid call (``model_call_failed``)
  instead of making a call it cannot count.
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
from temporalio.service import RPCError

from activities.runtime import ActivityRuntime
from contracts.job_spec import JobSpec, parse_job_spec
from contracts.pricing import call_cost, load_prices
from tests.workflows.conftest import LOCAL
from tests.workflows.jobkit import (
    REPO_ROOT,
    job_dict,
    roots_for,
    running_worker,
    start_job,
    wait_status,
    write_registry,
)
from tests.workflows.test_cli import CLI
from webconsole.pages.job import resolve_actions

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

#: the offline agent priced like a mid-range model (USD per million tokens)
PRICES = """\
as_of: "2026-01-01"
models:
  extractive:
    extractive-v1: {input: 10.00, cached_input: 1.00, cache_write: 12.50, output: 30.00,
                    source: "test table"}
"""


async def _pressroom(home: Path, address: str, *args: str,
                     prices: Path | None = None) -> tuple[int, str, str]:
    env = {**os.environ, "PRESSROOM_HOME": str(home), "PRESSROOM_TEMPORAL_ADDRESS": address,
           "COLUMNS": "200"}
    env.pop("PRESSROOM_DEBUG", None)
    env.pop("PRESSROOM_PRICES", None)
    if prices is not None:
        env["PRESSROOM_PRICES"] = str(prices)
    proc = await asyncio.create_subprocess_exec(*CLI, *args, env=env, cwd=REPO_ROOT,
                                                stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_cost_budget_blocks_a_real_job_until_resolve_raises_it(
        temporal_env: Any, tmp_path: Path, docs: Path, task_queue: str) -> None:
    client = temporal_env.client
    address = client.service_client.config.target_host
    home = tmp_path / "home"
    home.mkdir()
    write_registry(home, "alice")
    price_file = tmp_path / "prices.yaml"
    price_file.write_text(PRICES, encoding="utf-8")
    data = job_dict(tmp_path, docs, research={"cost_budget_usd": 0.01})
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    spec = parse_job_spec(data)

    # no price for the offline model in the shipped table: refused at submit, one line
    rc, out, err = await _pressroom(home, address, "run", str(job_file), "--task-queue",
                                    task_queue)
    assert rc == 1, (out, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    assert "extractive/extractive-v1 has no price" in lines[0]
    assert "PRESSROOM_PRICES" in lines[0] and "Traceback" not in err
    with pytest.raises(RPCError):  # ... and nothing started
        await client.get_workflow_handle(spec.job_id).describe()

    prices = load_prices(price_file)
    price = prices.price_of("extractive", "extractive-v1")
    assert price is not None
    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{home / 'pressroom.db'}", locations=LOCAL,
                              roots=roots_for(tmp_path), prices=prices)
    async with running_worker(client, runtime, task_queue):
        rc, out, err = await _pressroom(home, address, "run", str(job_file), "--task-queue",
                                        task_queue, prices=price_file)
        assert rc == 0, err
        handle = client.get_workflow_handle(spec.job_id)
        status = await wait_status(handle, {"blocked", "awaiting_review", "failed"})
        assert status.status == "blocked" and status.stage == "research", status
        assert status.blocked_reason is not None
        assert status.blocked_reason.startswith("budget_exhausted ($"), status.blocked_reason
        assert "cost budget used" in status.blocked_reason
        # the console offers what resolves it, and every offer parses (test_cli_hints.py)
        assert resolve_actions("blocked", status.blocked_reason)[0] == "--cost-budget USD"

        rc, out, err = await _pressroom(home, address, "status", spec.job_id, "--json")
        report = json.loads(out)
        assert rc == report["exit_code"] and report["status"].startswith("blocked"), err
        live = report["live"]
        research = live["research"]
        assert research["cost_budget_micro_usd"] == 10_000
        assert research["cost_micro_usd"] >= 10_000
        turns_at_block = research["turn"]
        rc, out, err = await _pressroom(home, address, "status", spec.job_id)
        assert "cost $" in out and "/$0.010000" in out, out

        rc, out, err = await _pressroom(home, address, "trace", spec.job_id, "--json")
        assert rc == 0, err
        trace = json.loads(out)
        assert len(trace["turns"]) == turns_at_block
        for turn in trace["turns"]:  # each turn is its token counts at the table's prices
            assert turn["cost_micro_usd"] == call_cost(
                price, input_tokens=turn["input_tokens"], output_tokens=turn["output_tokens"],
                cached_input_tokens=turn.get("cached_input_tokens") or 0,
                cache_write_input_tokens=turn.get("cache_write_input_tokens") or 0)
            assert turn["cost_micro_usd"] > 0
        assert trace["cost_micro_usd"] == sum(t["cost_micro_usd"] for t in trace["turns"])
        assert trace["cost_micro_usd"] == research["cost_micro_usd"]
        rc, out, err = await _pressroom(home, address, "trace", spec.job_id)
        assert rc == 0 and "cost $" in out, err

        # a bad amount is one line; a good one lets the job go on
        rc, _out, err = await _pressroom(home, address, "resolve", spec.job_id,
                                         "--cost-budget", "0.0000001", "--as", "alice")
        assert rc == 1 and "--cost-budget must be a positive amount" in err, err
        rc, out, err = await _pressroom(home, address, "resolve", spec.job_id,
                                        "--cost-budget", "100", "--as", "alice")
        assert rc == 0, err
        status = await wait_status(handle, {"awaiting_review", "failed"})
    assert status.status == "awaiting_review", status.blocked_reason
    research_after = status.research
    assert research_after is not None
    assert research_after.cost_budget_micro_usd == 100_000_000
    assert research_after.turn > turns_at_block
    assert research_after.cost_micro_usd > research["cost_micro_usd"]


async def test_a_worker_without_the_price_makes_no_uncounted_call(
        client: Any, runtime: ActivityRuntime, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec(research={"cost_budget_usd": "1.50"})  # the submit check bypassed
    async with running_worker(client, runtime, task_queue):  # shipped prices only
        handle = await start_job(client, spec, task_queue)
        status = await wait_status(handle, {"blocked", "awaiting_review", "failed"})
    assert status.status == "blocked", status
    assert status.blocked_reason is not None
    assert status.blocked_reason.startswith("model_call_failed ("), status.blocked_reason
    assert "no price for model extractive/extractive-v1" in status.blocked_reason
    research = status.research
    assert research is not None and research.tokens_used == 0  # no model call was made
