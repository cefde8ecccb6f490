"""``assemble``: the pipeline (docs/context-engine.md#the-pipeline-stage-by-stage), stage by
stage, sealed into a manifest.

::

    acquisition outcomes + candidates
      → hard gates (permission … security)               → excluded, reason + gate
      → supersession, load modes, topic coverage          → superseded / not_required
      → structure: zones, tool pairing (+ compaction)     → anomalies / unsafe repair
      → source limits (excerpts)                          → transform records
      → partition budgets on real token counts            → budget_evicted
        (or evicted untokenized on a proven lower bound)
      → render + serialize + validate + exact count       → serialization_invalid
      → seal manifest: ready (both hashes) | blocked (reason, no hashes)

Every attempt returns a sealed manifest. Blocking is a result, not an exception:
``ContextAssemblyBlocked`` carries the manifest with ``status="blocked"``; bad *input*
raises a ``ContextError`` (see ``context.errors``) before anything is decided.

Choices the design leaves open (docs/context-engine.md records them):

* The step itself (question, decision, stage, required topics) is rendered as a task item
  ``step:<step_id>`` built from the request and gated like any candidate. It does not
  count towards the *required* task partition: the task contract must be a real candidate
  (a ``user_request`` item), and the control partition needs a ``system_policy`` item.
* A blocked manifest still lists what had been admitted (``included``) so the record
  shows how far the assembly got; ``status="blocked"`` says no model call follows.
* Order inside zones is deterministic and independent of candidate order: control by
  authority then id, the step contract first in the task zone, then rank and id
  (``context.ranking.relevance``), evidence coverage first, tool exchanges in call order.
* Speed without impurity: every pure per-candidate result is memoized per item object
  (``context.memo``), so a warm assembly redoes only set-level work; results never depend
  on the memos (``reset_caches()`` clears them). The cyclic GC is paused during the call.
"""

from __future__ import annotations

import gc

from pydantic import BaseModel, ConfigDict

from context.assembly.pipeline import Pipeline
from context.errors import ContextError, InvariantViolation
from context.manifest import ContextAssemblyManifest
from context.request import AssemblyRequest
from context.seal.adapters import SerializedRequest
from context.seal.render import AssemblyInput
from context.tokens import TokenCounter, default_counter
from context.vocabulary import BlockedReason


class Ready(BaseModel):
    """A sealed, ready assembly: the exact provider request and its manifest."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    serialized: SerializedRequest
    manifest: ContextAssemblyManifest
    assembly_input: AssemblyInput
    rendered_evidence: str

    @property
    def status(self) -> str:
        return "ready"


class ContextAssemblyBlocked(BaseModel):
    """A sealed, blocked assembly: no model call may follow."""

    model_config = ConfigDict(frozen=True)

    manifest: ContextAssemblyManifest
    blocked_reason: BlockedReason

    @property
    def status(self) -> str:
        return "blocked"


def reset_caches() -> None:
    """Forget every memo the engine keeps across calls (for cold benchmarks and tests).

    The memos (secret/instruction scans and topic coverage, keyed by verified content
    hashes) only ever save work; clearing them changes no result. The token count cache
    belongs to the ``TokenCounter`` passed in (or the shared default one).
    """
    from context import canonical, manifest, manifest_entries, memo
    from context.admission import security
    from context.ranking import relevance
    from context.seal import finish

    canonical.clear_memo()
    memo.clear_all()
    relevance.clear_memo()
    security.clear_memos()
    manifest.clear_memo()
    manifest_entries.clear_memo()
    finish.clear_memo()


def assemble(
    request: AssemblyRequest, *, counter: TokenCounter | None = None
) -> Ready | ContextAssemblyBlocked:
    """Assemble the model input for one step, or block; always with a sealed manifest."""
    if not isinstance(request, AssemblyRequest):
        raise ContextError(f"assemble needs an AssemblyRequest, got {type(request).__name__}")
    pipeline = Pipeline(request, counter if counter is not None else default_counter())
    # The cyclic collector is paused for the call: assembly allocates many short-lived,
    # acyclic objects (freed by reference counting), and repeated collector passes over
    # the long-lived memo heap made large assemblies superlinear (10,000 candidates: ~25%
    # of warm time). Any cycle created meanwhile is collected once it is re-enabled.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        outcome = pipeline.run()
    except ContextError:
        raise
    except Exception as exc:  # a bug, never bad input: fail loudly with context
        raise InvariantViolation(
            f"context engine failed at stage {pipeline.current_stage!r}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    finally:
        if was_enabled:
            gc.enable()
    if outcome.blocked_reason is not None:
        return ContextAssemblyBlocked(
            manifest=outcome.manifest, blocked_reason=outcome.blocked_reason
        )
    assert outcome.serialized is not None and outcome.assembly_input is not None
    return Ready(
        serialized=outcome.serialized,
        manifest=outcome.manifest,
        assembly_input=outcome.assembly_input,
        rendered_evidence=outcome.rendered_evidence,
    )
