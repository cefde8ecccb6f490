"""Pressroom's own metrics, spans and log format (docs/architecture.md#observability).

Activities describe what happened as an *observation* (``emit``): a kind, a few bounded
values and the wall-clock span of the work. Inside an activity it is recorded at once:
metrics through the SDK meter (``activity.metric_meter()``, which the worker's Temporal
runtime exports, e.g. on its Prometheus endpoint) and, when the worker traces
(``use_tracer``), a span under the activity's own (``TracingInterceptor``'s
``RunActivity``). A helper process (``activities.offload``) has no activity context and
no exporter: there the observation is kept (``drain``), carried back with the result and
recorded by the worker (``record``) inside the activity that sent the work.

Metric labels come from bounded sets only (``_bounded``): stages, statuses, reason codes,
partitions, provider names, tool names, rejection kinds — never a job id or free text.
Span attributes carry ids and counts, never prompt or reply content or secrets.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, get_args

from temporalio import activity

from activities.providers import PROVIDERS
from activities.research_tools import TOOL_DEFINITIONS
from activities.tool_errors import RejectionKind
from context import BlockedReason, ExclusionReason, Partition
from contracts.steps import ASSEMBLY_STAGES

#: label values outside a bounded set
OTHER = "other"
STAGES = frozenset(ASSEMBLY_STAGES)
BLOCKED_REASONS = frozenset(r.value for r in BlockedReason)
EXCLUSION_REASONS = frozenset(r.value for r in ExclusionReason)
PARTITIONS = frozenset(p.value for p in Partition)
PROVIDER_NAMES = frozenset(PROVIDERS)
TOOL_NAMES = frozenset(t.name for t in TOOL_DEFINITIONS)
TOOL_OUTCOMES = frozenset({"success", *get_args(RejectionKind)})
OPERATIONS = frozenset({"decide", "draft", "revise"})
PUBLISH_OUTCOMES = frozenset({"published", "already_published"})

#: metric name -> (kind, unit, description, labels); docs/architecture.md shows this table
METRICS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "pressroom_assemblies": (
        "counter", "1", "context assemblies sealed", ("stage", "status")),
    "pressroom_assemblies_blocked": (
        "counter", "1", "assemblies that blocked, by the engine's reason", ("reason",)),
    "pressroom_exclusions": (
        "counter", "1", "candidates the engine excluded, by reason", ("reason",)),
    "pressroom_partition_tokens": (
        "histogram", "tokens", "tokens a ready request uses per partition",
        ("stage", "partition")),
    "pressroom_model_calls": (
        "counter", "1", "model calls made (a retry that finds the stored reply is none)",
        ("provider", "operation")),
    "pressroom_model_input_tokens": (
        "histogram", "tokens", "input tokens per model call", ("provider", "operation")),
    "pressroom_model_output_tokens": (
        "histogram", "tokens", "output tokens per model call", ("provider", "operation")),
    "pressroom_model_cost_micro_usd": (
        "counter", "1", "what model calls cost, in micro-dollars, as the worker's price table "
        "prices them (unpriced calls add nothing)", ("provider", "operation")),
    "pressroom_tool_calls": (
        "counter", "1", "research tool calls run, by tool and outcome", ("tool", "outcome")),
    "pressroom_publishes": (
        "counter", "1", "publish activities completed", ("outcome",)),
}

_MAX_PENDING = 256
_pending: list[dict[str, Any]] = []
_tracer: Any = None


def _bounded(value: Any, allowed: frozenset[str]) -> str:
    text = str(value) if value is not None else ""
    return text if text in allowed else OTHER


def use_tracer(tracer: Any) -> None:
    """Spans go to ``tracer`` (an OpenTelemetry ``Tracer``) from now on; ``None``: none."""
    global _tracer
    _tracer = tracer


def current_tracer() -> Any:
    """The tracer spans go to (``None``: no tracing)."""
    return _tracer


def now_ns() -> int:
    return time.time_ns()


def emit(kind: str, start_ns: int, **values: Any) -> None:
    """One observation of ``kind`` that began at ``start_ns`` and ends now: recorded inside
    an activity, kept for the worker in a helper process."""
    observation = {"kind": kind, "start_ns": start_ns, "end_ns": now_ns(), **values}
    if activity.in_activity():
        record([observation])
    elif len(_pending) < _MAX_PENDING:  # a helper (or a test calling a body directly)
        _pending.append(observation)


def drain() -> list[dict[str, Any]]:
    """The observations kept since the last drain (a helper returns them with its result)."""
    out = list(_pending)
    _pending.clear()
    return out


def record(observations: Iterable[Mapping[str, Any]]) -> None:
    """Record observations as metrics and spans; inside an activity only (else nothing)."""
    if not activity.in_activity():
        return
    meter = activity.metric_meter()
    for obs in observations:
        handler = _HANDLERS.get(str(obs.get("kind")))
        if handler is not None:
            handler(meter, obs)


def _add(meter: Any, name: str, value: int, **labels: str) -> None:
    kind, unit, description, names = METRICS[name]
    assert set(labels) == set(names), (name, labels)
    if kind == "counter":
        meter.create_counter(name, description, unit).add(value, labels)
    else:
        meter.create_histogram(name, description, unit).record(max(0, int(value)), labels)


def _span(name: str, obs: Mapping[str, Any], attributes: Mapping[str, Any]) -> None:
    if _tracer is None:
        return
    clean = {k: v for k, v in attributes.items() if v is not None}
    span = _tracer.start_span(name, start_time=int(obs["start_ns"]), attributes=clean)
    span.end(end_time=int(obs["end_ns"]))


def _assembly(meter: Any, obs: Mapping[str, Any]) -> None:
    stage = _bounded(obs.get("stage"), STAGES)
    status = "blocked" if obs.get("status") == "blocked" else "ready"
    _add(meter, "pressroom_assemblies", 1, stage=stage, status=status)
    if status == "blocked":
        _add(meter, "pressroom_assemblies_blocked", 1,
             reason=_bounded(obs.get("blocked_reason"), BLOCKED_REASONS))
    for reason, count in (obs.get("exclusions") or {}).items():
        _add(meter, "pressroom_exclusions", int(count),
             reason=_bounded(reason, EXCLUSION_REASONS))
    for partition, tokens in (obs.get("partition_tokens") or {}).items():
        _add(meter, "pressroom_partition_tokens", int(tokens), stage=stage,
             partition=_bounded(partition, PARTITIONS))
    _span("pressroom.assemble_context", obs, {
        "pressroom.job_id": obs.get("job_id"),
        "pressroom.step_id": obs.get("step_id"),
        "pressroom.manifest_id": obs.get("manifest_id"),
        "pressroom.stage": stage,
        "pressroom.status": status,
        "pressroom.blocked_reason": obs.get("blocked_reason"),
        "pressroom.input_tokens": obs.get("input_tokens"),
        "pressroom.excluded": sum(int(c) for c in (obs.get("exclusions") or {}).values()),
    })


def _model_call(meter: Any, obs: Mapping[str, Any]) -> None:
    provider = _bounded(obs.get("provider"), PROVIDER_NAMES)
    operation = _bounded(obs.get("operation"), OPERATIONS)
    _add(meter, "pressroom_model_calls", 1, provider=provider, operation=operation)
    input_tokens, output_tokens = obs.get("input_tokens"), obs.get("output_tokens")
    if input_tokens is not None:
        _add(meter, "pressroom_model_input_tokens", int(input_tokens), provider=provider,
             operation=operation)
    if output_tokens is not None:
        _add(meter, "pressroom_model_output_tokens", int(output_tokens), provider=provider,
             operation=operation)
    model = obs.get("model")
    # GenAI semantic conventions: "{gen_ai.operation.name} {gen_ai.request.model}"
    _span(f"chat {model}" if model else "chat", obs, {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": provider,
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "gen_ai.response.model": obs.get("response_model"),
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
        "pressroom.operation": operation,
        "pressroom.job_id": obs.get("job_id"),
        "pressroom.step_id": obs.get("step_id"),
        "pressroom.manifest_id": obs.get("manifest_id"),
    })


def _model_cost(meter: Any, obs: Mapping[str, Any]) -> None:
    """A priced model call's cost (docs/configuration.md#cost-in-money); an unpriced one
    adds nothing."""
    cost = obs.get("cost_micro_usd")
    if cost is not None:
        _add(meter, "pressroom_model_cost_micro_usd", int(cost),
             provider=_bounded(obs.get("provider"), PROVIDER_NAMES),
             operation=_bounded(obs.get("operation"), OPERATIONS))


def _tool_call(meter: Any, obs: Mapping[str, Any]) -> None:
    tool = _bounded(obs.get("tool"), TOOL_NAMES)
    outcome = _bounded(obs.get("outcome"), TOOL_OUTCOMES)
    _add(meter, "pressroom_tool_calls", 1, tool=tool, outcome=outcome)
    _span(f"execute_tool {tool}", obs, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
        "gen_ai.tool.call.id": obs.get("call_id"), "pressroom.outcome": outcome,
        "pressroom.job_id": obs.get("job_id"),
    })


def _publish(meter: Any, obs: Mapping[str, Any]) -> None:
    outcome = _bounded(obs.get("outcome"), PUBLISH_OUTCOMES)
    _add(meter, "pressroom_publishes", 1, outcome=outcome)
    _span("pressroom.publish", obs, {"pressroom.outcome": outcome,
                                     "pressroom.job_id": obs.get("job_id")})


_HANDLERS = {"assembly": _assembly, "model_call": _model_call, "tool_call": _tool_call,
             "publish": _publish, "model_cost": _model_cost}


def manifest_counts(body: Mapping[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """A sealed manifest's exclusions by reason and tokens used per partition."""
    exclusions: dict[str, int] = {}
    for entry in body.get("excluded") or []:
        reason = str(entry.get("reason"))
        exclusions[reason] = exclusions.get(reason, 0) + 1
    partitions = {name: int(entry.get("used") or 0)
                  for name, entry in ((body.get("budget") or {}).get("partitions") or {}).items()}
    return exclusions, partitions


# ---------------------------------------------------------------------------- logs

#: the ids a log line carries when known (``extra=``; a Temporal logger adds its own)
LOG_IDS = ("job_id", "step_id", "manifest_id")


def log_ids(inp: Any) -> dict[str, str]:
    """The job, step and manifest ids an activity input names (for a log line's ``extra``)."""
    ids: dict[str, str] = {}
    job = getattr(inp, "job", None)
    if job is not None:
        ids["job_id"] = job.job_id
    ctx = getattr(inp, "context", None)
    step = getattr(inp, "step_id", None) or getattr(ctx, "step_id", None)
    if step:
        ids["step_id"] = step
    manifest = getattr(ctx, "manifest_id", None)
    if manifest:
        ids["manifest_id"] = manifest
    return ids


@contextlib.asynccontextmanager
async def logged(inp: Any) -> AsyncIterator[dict[str, str]]:
    """One ``activity.logger`` line when the activity ends (done or failed: the error's
    type, never its message), with the input's ids; the caller may add ids it learns
    (an assembly's manifest id) to the yielded dict."""
    ids = log_ids(inp)
    name = activity.info().activity_type
    try:
        yield ids
    except BaseException as exc:
        activity.logger.warning("%s failed: %s", name, type(exc).__name__, extra=dict(ids))
        raise
    activity.logger.info("%s done", name, extra=dict(ids))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the job/step/manifest ids
    when known (``extra``, else the Temporal workflow id — a job's workflow id is its job
    id), and Temporal's workflow/activity details."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        temporal = (getattr(record, "temporal_activity", None)
                    or getattr(record, "temporal_workflow", None) or {})
        for key in LOG_IDS:
            value = getattr(record, key, None)
            if value is None and key == "job_id" and isinstance(temporal, Mapping):
                value = temporal.get("workflow_id")
            if value is not None:
                line[key] = value
        if isinstance(temporal, Mapping) and temporal:
            line["temporal"] = dict(temporal)
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def configure_logging(log_format: str, *, level: int = logging.INFO,
                      stream: Any = None) -> logging.Handler:
    """One handler on the root logger: ``json`` lines (``JsonFormatter``) or plain text."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    return handler


__all__ = ["METRICS", "JsonFormatter", "configure_logging", "current_tracer", "drain", "emit",
           "log_ids", "logged", "manifest_counts", "record", "use_tracer"]
