"""A long tool call keeps its worker's heartbeats flowing: the real dev server, a real
worker with Pressroom's activities, the ``run_tool`` activity as the research loop calls it.

The call is a search whose pattern spends the call's whole regex time (about 2 s); the
activity runs under a 1 s heartbeat timeout and one attempt. It can only succeed if the
worker's event loop kept sending heartbeats while the search ran — a search on the loop
itself (15 s of matching here) would miss them and the server would time the attempt out.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.registry import build_activities
from activities.runtime import ActivityRuntime
from contracts.activity_messages import ToolCallInput, ToolCallResult
from contracts.job_spec import JobSpec
from tests.workflows.test_tool_call_activity import CATASTROPHIC, _job, slow_file

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


@workflow.defn(sandboxed=False)
class OneToolCall:
    """Runs one ``run_tool`` activity the way the research loop does, with a short
    heartbeat timeout and no retry."""

    @workflow.run
    async def run(self, inp: ToolCallInput) -> ToolCallResult:
        result: ToolCallResult = await workflow.execute_activity(
            "run_tool", inp, result_type=ToolCallResult,
            start_to_close_timeout=timedelta(seconds=60),
            heartbeat_timeout=timedelta(seconds=1),
            retry_policy=RetryPolicy(maximum_attempts=1))
        return result


async def test_heartbeats_flow_while_a_search_spends_its_regex_time(
        client: Client, runtime: ActivityRuntime, make_spec: Callable[..., JobSpec],
        docs: Path) -> None:
    spec = make_spec()
    job = await _job(runtime, spec)
    path = slow_file(docs)
    queue = f"tool-call-{uuid.uuid4().hex[:12]}"
    inp = ToolCallInput(job=job, call_id="slow-worker-1", tool_name="search", turn=1,
                        arguments={"source": "handbook", "query": CATASTROPHIC, "regex": True,
                                   "paths": [path]})
    async with Worker(client, task_queue=queue, workflows=[OneToolCall],
                      activities=build_activities(runtime),
                      workflow_runner=UnsandboxedWorkflowRunner()):
        started = time.monotonic()
        result: Any = await client.execute_workflow(
            OneToolCall.run, inp, id=f"tool-call-{uuid.uuid4().hex}", task_queue=queue,
            execution_timeout=timedelta(seconds=90))
        elapsed = time.monotonic() - started
    # the activity outlived its 1 s heartbeat timeout, so beats kept arriving meanwhile
    assert elapsed > 1.5, elapsed
    assert (result.status, result.rejection) == ("error", "arguments_over_limit")
