"""Observability (docs/architecture.md#observability): one real job, run by a real worker
on its own Temporal runtime with a Prometheus endpoint, traced into an in-memory
OpenTelemetry exporter, logging JSON — then the endpoint is scraped over HTTP, the spans
read and a log line parsed.

Real dev server (the session's), a real worker with one helper process (so assemblies and
the extractive provider's model calls are observed in a helper and recorded by the worker),
a real SQLite store; the offline provider. The Temporal runtime here is this test's own: a
Prometheus runtime is made once per process, bound to a free port, and the session's client
keeps the default runtime.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import socket
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities import telemetry
from contracts.job_spec import JobSpec
from settings import Settings
from tests.waiting import wait_for
from tests.workflows.jobkit import (
    review,
    roots_for,
    running_worker,
    start_job,
    start_worker_process,
    wait_status,
)
from worker import build_runtime, telemetry_runtime
from workflows.temporal_config import DATA_CONVERTER

LOCAL = Settings.from_env(os.environ).locations

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text: str = answer.read().decode("utf-8")
        return text


def _samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of every sample line of a Prometheus text exposition."""
    out = []
    for line in text.splitlines():
        match = _SAMPLE.match(line.strip())
        if not match or line.startswith("#"):
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        out.append((match.group(1), labels, float(match.group(3))))
    return out


def _total(samples: list[tuple[str, dict[str, str], float]], name: str,
           **want: str) -> float:
    return sum(value for n, labels, value in samples
               if n in (name, f"{name}_total")
               and all(labels.get(k) == v for k, v in want.items()))


async def test_a_job_is_measured_traced_and_logged(
        temporal_env: WorkflowEnvironment, store_url: str, tmp_path: Path, task_queue: str,
        make_spec: Callable[..., JobSpec]) -> None:
    port = _free_port()
    client = await Client.connect(
        temporal_env.client.service_client.config.target_host,
        namespace=temporal_env.client.namespace, data_converter=DATA_CONVERTER,
        runtime=telemetry_runtime(f"127.0.0.1:{port}"))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use_tracer(provider.get_tracer("pressroom-test"))
    logs = io.StringIO()
    root = logging.getLogger()
    level = root.level
    handler = telemetry.configure_logging("json", stream=logs)
    spec = make_spec()
    try:
        runtime = build_runtime(store_url, locations=LOCAL, roots=roots_for(tmp_path),
                                helper_processes=1)
        async with running_worker(client, runtime, task_queue):
            handle = await start_job(client, spec, task_queue)
            await wait_status(handle, {"awaiting_review"})
            await review(client, spec.job_id, "approve", reviewer="alice")
            result = await handle.result()
        assert result.status == "published"
    finally:
        telemetry.use_tracer(None)
        root.removeHandler(handler)
        root.setLevel(level)

    # --- metrics, over HTTP: Temporal's own and Pressroom's, with bounded labels
    async def scraped() -> list[tuple[str, dict[str, str], float]] | None:
        samples = _samples(await asyncio.to_thread(_scrape, port))
        return samples if _total(samples, "pressroom_publishes") else None

    samples = await wait_for(scraped, 30, "pressroom_publishes on the Prometheus endpoint")
    names = {name for name, _, _ in samples}
    # the SDK's (Core's) metrics, on the same endpoint
    assert any(n.startswith("temporal_activity_execution_latency") for n in names), names
    assert any(n.startswith("temporal_workflow_completed") for n in names), names
    provider_name = spec.model.provider
    assert _total(samples, "pressroom_assemblies", stage="plan", status="ready") >= 1
    assert _total(samples, "pressroom_assemblies", stage="research", status="ready") >= 2
    assert _total(samples, "pressroom_assemblies", stage="draft", status="ready") >= 1
    assert _total(samples, "pressroom_model_calls", provider=provider_name,
                  operation="decide") >= 1
    assert _total(samples, "pressroom_model_calls", provider=provider_name,
                  operation="draft") == 1
    assert _total(samples, "pressroom_model_input_tokens_count", provider=provider_name,
                  operation="draft") == 1
    assert _total(samples, "pressroom_model_input_tokens_sum", provider=provider_name,
                  operation="draft") > 0
    assert _total(samples, "pressroom_model_output_tokens_sum", provider=provider_name) > 0
    assert _total(samples, "pressroom_partition_tokens_sum", stage="draft",
                  partition="task") > 0
    assert _total(samples, "pressroom_tool_calls", outcome="success") >= 1
    assert _total(samples, "pressroom_publishes", outcome="published") == 1
    # Temporal labels Pressroom's metrics with the activity and task queue too
    ours = [(n, labels) for n, labels, _ in samples if n.startswith("pressroom_")]
    assert all(labels.get("task_queue") == task_queue for _, labels in ours)
    assert {labels.get("activity_type") for n, labels in ours
            if n.startswith("pressroom_assemblies")} == {"assemble_context"}
    # bounded label values only: no job, step or manifest id in any label
    for _, labels in ours:
        for key, value in labels.items():
            assert spec.job_id not in value, (key, value)
    bounded = {"stage": telemetry.STAGES, "status": {"ready", "blocked"},
               "partition": telemetry.PARTITIONS | {"other"},
               "provider": telemetry.PROVIDER_NAMES | {"other"},
               "operation": telemetry.OPERATIONS | {"other"},
               "tool": telemetry.TOOL_NAMES | {"other"},
               "reason": telemetry.EXCLUSION_REASONS | telemetry.BLOCKED_REASONS | {"other"}}
    for _, labels in ours:
        for key, allowed in bounded.items():
            if key in labels:
                assert labels[key] in allowed, (key, labels[key])

    # --- spans: one per assembly and per model call, under the activity's own span
    spans = list(exporter.get_finished_spans())
    by_id = {span.context.span_id: span for span in spans if span.context is not None}

    def parent_name(span: ReadableSpan) -> str | None:
        parent = by_id.get(span.parent.span_id) if span.parent is not None else None
        return parent.name if parent is not None else None

    assemblies = [s for s in spans if s.name == "pressroom.assemble_context"]
    assert {str((s.attributes or {})["pressroom.manifest_id"]) for s in assemblies} == set(
        result.manifest_ids)
    for span in assemblies:
        attrs = dict(span.attributes or {})
        assert attrs["pressroom.status"] == "ready"
        assert attrs["pressroom.job_id"] == spec.job_id
        assert int(attrs["pressroom.input_tokens"]) > 0  # type: ignore[arg-type]
        assert parent_name(span) == "RunActivity:assemble_context"
    calls = [s for s in spans if (s.attributes or {}).get("gen_ai.operation.name") == "chat"]
    assert {(s.attributes or {}).get("pressroom.operation") for s in calls} == {
        "decide", "draft"}
    for span in calls:
        attrs = dict(span.attributes or {})
        assert span.name == f"chat {spec.model.name}"
        assert attrs["gen_ai.system"] == attrs["gen_ai.provider.name"] == provider_name
        assert attrs["gen_ai.request.model"] == spec.model.name
        assert int(attrs["gen_ai.usage.input_tokens"]) > 0  # type: ignore[arg-type]
        assert int(attrs["gen_ai.usage.output_tokens"]) >= 0  # type: ignore[arg-type]
        assert parent_name(span) in ("RunActivity:decide", "RunActivity:draft")
        # ids and counts only: no prompt, reply or question text
        assert not any(spec.question in str(v) for v in attrs.values())
    assert any(s.name == "RunWorkflow:ResearchJobWorkflow" for s in spans)
    assert any(s.name.startswith("execute_tool ") for s in spans)

    # --- logs: JSON lines carrying the job id (and step and manifest ids where known)
    lines = [json.loads(line) for line in logs.getvalue().splitlines() if line.strip()]
    ours_logged = [line for line in lines if line.get("job_id") == spec.job_id]
    assert ours_logged, logs.getvalue()[:2000]
    assembled = [line for line in ours_logged
                 if line["message"].startswith("assemble_context done")]
    assert assembled and all(line.get("step_id") and line.get("manifest_id")
                             for line in assembled)
    assert {line["manifest_id"] for line in assembled} == set(result.manifest_ids)
    workflow_lines = [line for line in ours_logged
                      if line["logger"].startswith("temporalio.workflow")]
    assert workflow_lines and all(line.get("manifest_id") for line in workflow_lines)




async def test_the_worker_command_serves_metrics_and_logs_json(
        temporal_env: WorkflowEnvironment, client: Client, store_url: str, tmp_path: Path,
        task_queue: str, make_spec: Callable[..., JobSpec]) -> None:
    """``python worker.py --metrics-port N --log-format json``: the flags reach ``observe``
    (the process's default runtime serves /metrics) and the log lines are JSON."""
    port = _free_port()
    log = tmp_path / "worker.log"
    address = temporal_env.client.service_client.config.target_host
    proc = start_worker_process({"PRESSROOM_HELPER_PROCESSES": "0"}, address, task_queue,
                                store_url, log,
                                args=["--metrics-port", str(port), "--log-format", "json"])
    try:
        spec = make_spec()
        handle = await start_job(client, spec, task_queue)
        await wait_status(handle, {"awaiting_review"})

        async def scraped() -> list[tuple[str, dict[str, str], float]] | None:
            samples = _samples(await asyncio.to_thread(_scrape, port))
            return samples if _total(samples, "pressroom_assemblies", stage="draft") else None

        samples = await wait_for(scraped, 30, "the worker process's /metrics")
        assert any(n.startswith("temporal_") for n, _, _ in samples)
        assert _total(samples, "pressroom_model_calls", operation="draft") == 1
        lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()
                 if line.startswith("{")]
        done = [line for line in lines if line.get("job_id") == spec.job_id
                and line["message"].startswith("draft done")]
        assert done and done[0]["step_id"] and done[0]["manifest_id"], lines[-5:]
        await handle.terminate("test over")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


async def test_a_blocked_assembly_and_its_exclusions_are_counted_with_bounded_labels() -> None:
    """``telemetry.record`` inside an activity context (``ActivityEnvironment``) on a real
    SDK meter (a runtime with a metric buffer): a blocked assembly counts under its reason,
    its exclusions under theirs; a value outside a bounded set is ``other``, never itself."""
    buffer = MetricBuffer(1000)
    runtime = Runtime(telemetry=TelemetryConfig(metrics=buffer))
    env = ActivityEnvironment()
    env.metric_meter = runtime.metric_meter
    observation = {
        "kind": "assembly", "start_ns": 1, "end_ns": 2, "job_id": "job-secret-id",
        "step_id": "draft-3", "stage": "draft", "manifest_id": "m-1", "status": "blocked",
        "blocked_reason": "required_evidence_missing", "input_tokens": None,
        "exclusions": {"not_required": 2, "budget_evicted": 1, "made up by a model": 1},
        "partition_tokens": {},
    }
    env.run(telemetry.record, [observation])
    seen: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for update in buffer.retrieve_updates():
        labels = tuple(sorted((k, str(v)) for k, v in update.attributes.items()
                              if k in ("stage", "status", "reason")))
        key = (update.metric.name, labels)
        seen[key] = seen.get(key, 0) + update.value
    assert seen[("pressroom_assemblies", (("stage", "draft"), ("status", "blocked")))] == 1
    assert seen[("pressroom_assemblies_blocked",
                 (("reason", "required_evidence_missing"),))] == 1
    assert seen[("pressroom_exclusions", (("reason", "not_required"),))] == 2
    assert seen[("pressroom_exclusions", (("reason", "budget_evicted"),))] == 1
    assert seen[("pressroom_exclusions", (("reason", "other"),))] == 1
    assert not any("job-secret-id" in value or "made up" in value
                   for _, labels in seen for _, value in labels)


async def test_a_priced_model_call_counts_its_cost_with_bounded_labels() -> None:
    """A model call's cost (docs/configuration.md#cost-in-money) is added to
    ``pressroom_model_cost_micro_usd`` under its provider and operation only — never its
    model or job — on a real SDK meter; an unpriced call adds nothing."""
    buffer = MetricBuffer(1000)
    runtime = Runtime(telemetry=TelemetryConfig(metrics=buffer))
    env = ActivityEnvironment()
    env.metric_meter = runtime.metric_meter
    call = {"kind": "model_cost", "start_ns": 1, "end_ns": 2, "provider": "openai",
            "operation": "decide", "model": "gpt-secret-finetune", "job_id": "job-secret-id"}
    env.run(telemetry.record, [{**call, "cost_micro_usd": 1234},
                               {**call, "cost_micro_usd": 766},
                               {**call, "cost_micro_usd": None}])
    costs = [u for u in buffer.retrieve_updates()
             if u.metric.name == "pressroom_model_cost_micro_usd"]
    assert sum(u.value for u in costs) == 2000 and len(costs) == 2
    sdk_labels = {"service_name", "namespace", "task_queue", "activity_type"}  # Temporal's
    for update in costs:
        ours = {k: v for k, v in update.attributes.items() if k not in sdk_labels}
        assert ours == {"provider": "openai", "operation": "decide"}
