"""The draft activity: call the model on exactly the input the manifest sealed.

It never rebuilds the prompt. It loads the serialized request stored beside the manifest
(by manifest id), re-hashes it and compares the hash with the manifest's own copy and with
the one the workflow holds (``ContextRef.input_hash``, returned when the step was sealed —
a manifest rewritten in the database together with its copy of the hash still differs from
it), calls the configured provider, appends a new ``article_draft`` revision and writes
the provider's actual token usage back to the manifest next to the engine's estimate.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from temporalio.exceptions import ApplicationError

from activities.providers import provider_for
from activities.runtime import ActivityRuntime, pause_point, principal_of, put_once, ref_of
from activities.telemetry import emit, now_ns
from artifacts import Store
from artifacts.errors import IntegrityError, InvalidArtifact
from contracts.activity_messages import ContextRef, DraftInput, DraftResult

SUMMARY_CHARS = 240


def draft_id(job_id: str) -> str:
    return f"{job_id}.draft"


def summarize(text: str) -> str:
    """First heading plus the start of the first paragraph: what a reviewer sees first."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    title = next((ln.lstrip("# ") for ln in lines if ln.startswith("#")), "")
    body = next((ln for ln in lines if not ln.startswith(("#", "<!--"))), "")
    summary = f"{title}: {body}" if title else body
    return summary[:SUMMARY_CHARS] + ("…" if len(summary) > SUMMARY_CHARS else "")


async def load_serialized(store: Store, spec: Any, manifest_id: str,
                          held_hash: str | None) -> dict[str, Any]:
    """The serialized request sealed with the manifest; its hash must still match both the
    manifest's copy and ``held_hash``, the one the workflow holds for the step."""
    body = await store.get_manifest(manifest_id, principal=principal_of(spec))
    serialized = body.get("serialized_request")
    if not serialized:
        raise ApplicationError(f"manifest {manifest_id} has no serialized request "
                               "(was it blocked?)", type=InvalidArtifact.__name__,
                               non_retryable=True)
    canonical = serialized["canonical_json"]
    digest = "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    if digest != serialized["hash"]:
        raise ApplicationError(f"serialized request of manifest {manifest_id} does not match "
                               "its sealed hash", type=IntegrityError.__name__, non_retryable=True)
    if digest != held_hash:
        raise ApplicationError(f"serialized request of manifest {manifest_id} hashes to "
                               f"{digest}, but the workflow holds {held_hash} for this step",
                               type=IntegrityError.__name__, non_retryable=True)
    # The payload sent is decoded from the verified bytes, never taken from a second copy
    # (manifests written before this kept one beside them; it is ignored).
    loaded: dict[str, Any] = {**serialized, "payload": json.loads(canonical)}
    # the engine's prompt-cache record (its count of the cacheable prefix), for the turn
    loaded["cache"] = body.get("cache") or {}
    return loaded


def require_ready(ctx: ContextRef) -> None:
    """A blocked step calls no model (draft and research turns alike)."""
    if ctx.status != "ready":
        raise ApplicationError(f"step {ctx.step_id} is blocked; no model call",
                               type=InvalidArtifact.__name__, non_retryable=True)


async def draft(runtime: ActivityRuntime, inp: DraftInput) -> DraftResult:
    store = await runtime.store()
    spec, ctx = await runtime.spec_of(inp.job), inp.context
    require_ready(ctx)
    serialized = await load_serialized(store, spec, ctx.manifest_id, ctx.input_hash)
    await pause_point("draft")
    provider = provider_for(spec.model, runtime.endpoints)
    purpose = "revise" if inp.round > 0 else "draft"
    started = now_ns()
    result = await provider.complete(serialized["payload"], adapter=serialized["adapter"],
                                     purpose=purpose)
    emit("model_call", started, provider=spec.model.provider, operation=purpose,
         model=spec.model.name, response_model=result.model,
         input_tokens=result.input_tokens, output_tokens=result.output_tokens,
         job_id=spec.job_id, step_id=ctx.step_id, manifest_id=ctx.manifest_id)
    text = result.text if result.text.endswith("\n") else result.text + "\n"
    await pause_point("draft_before_write")
    rec = await put_once(
        store, "article_draft", draft_id(spec.job_id), text.encode("utf-8"), spec=spec,
        trust="derived_context", write_id=ctx.step_id, media_type="text/markdown",
        parent_revision=inp.state.draft.revision if inp.state.draft else None,
        metadata={"manifest_id": ctx.manifest_id, "model": result.model, "round": inp.round},
    )
    if result.input_tokens is not None:
        await store.record_usage(ctx.manifest_id, result.input_tokens,
                                 principal=principal_of(spec))
    await pause_point("draft_after_write")
    return DraftResult(draft=ref_of(rec), summary=summarize(text),
                       input_tokens=result.input_tokens, output_tokens=result.output_tokens)
