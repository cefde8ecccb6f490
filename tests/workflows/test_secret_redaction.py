"""Secrets in what the activities take from outside stay out of what they hand on.

Real SQLite store, real document source, activities called directly (no Temporal): a
refused tool call's detail, a reviewer's comment entering the next prompt, and why a
source could not be read are each redacted (``context.admission.security``) before
they reach a tool result, the provider request or the sealed manifest.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from activities import store_activities
from activities.context_activity import assemble_context
from activities.runtime import ActivityRuntime, principal_of
from activities.sources.errors import RetrievalFailed
from activities.sources.registry import SOURCE_KINDS
from activities.tool_call import exchange_id, run_tool_call
from contracts.activity_messages import (
    ArtifactRef,
    AssembleContextInput,
    JobRef,
    StepState,
    StoreJobSpecInput,
    ToolCallInput,
)
from contracts.job_spec import JobSpec

#: assembled from parts: this file holds no literal token shape
SERVER_TOKEN = "gh" + "s_" + "a1B2c3D4e5F6g7H8i9J0" + "k1L2m3N4o5P6q7R8"


async def _job(runtime: ActivityRuntime, spec: JobSpec) -> JobRef:
    ref = await store_activities.store_job_spec(runtime, StoreJobSpecInput(spec=spec))
    return JobRef(job_id=spec.job_id, principal_id=spec.principal.principal_id,
                  tenant=spec.scope.tenant, project=spec.scope.project, spec=ref)


async def test_a_refusal_quoting_a_credential_is_stored_redacted(
        runtime: ActivityRuntime, make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec()
    job = await _job(runtime, spec)
    source = "https://ci:Tok3nValue9@git.example/r"
    result = await run_tool_call(runtime, ToolCallInput(
        job=job, call_id="leaky", tool_name="list", arguments={"source": source}))
    assert (result.status, result.rejection) == ("error", "undeclared_source")
    store = await runtime.store()
    _, raw = await store.get("tool_record", exchange_id(spec.job_id, "leaky"),
                             principal=principal_of(spec))
    content = json.loads(json.loads(raw)["result"]["content"])
    assert "Tok3nValue9" not in content["detail"]
    assert "[REDACTED:url_password]" in content["detail"]


async def test_review_comments_are_screened_by_the_security_gate(
        runtime: ActivityRuntime, make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec()
    job = await _job(runtime, spec)
    review = ArtifactRef(kind="review_decision", artifact_id=f"{spec.job_id}.review",
                         revision=1, content_hash="sha256:" + "0" * 64)
    comments = ["Cite the retry section.",
                f"Use the mirror https://x-access-token:{SERVER_TOKEN}@github.com/o/r.git",
                "DATABASE_PASSWORD=hunter2hunter2 is what staging uses"]
    state = StepState(job_spec=job.spec, review=review, review_comments=comments)
    ref = await assemble_context(runtime, AssembleContextInput(
        job=job, step_id="research-1", stage="research", state=state, turn=1,
        as_of="2026-01-01T00:00:00+00:00"))
    assert ref.status == "ready", ref
    store = await runtime.store()
    body = await store.get_manifest(ref.manifest_id, principal=principal_of(spec))
    sealed = json.dumps(body)  # the manifest and the serialized provider request
    assert SERVER_TOKEN not in sealed and "hunter2hunter2" not in sealed
    [entry] = [e for e in body["included"] if e["item_id"].startswith("review_comments:")]
    assert entry["security_assessment"]["secret_handling"] == "redacted"
    assert entry["security_assessment"]["secret_kinds"] == (
        "github_token,unquoted_assigned_secret")
    assert entry["trust"] == "project_editable" and entry["zone"] == "data"
    assert "Cite the retry section." in body["serialized_request"]["canonical_json"]


async def test_a_source_failure_quoting_a_credential_is_stored_redacted(
        runtime: ActivityRuntime, make_spec: Callable[..., JobSpec],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A source that cannot be read (here: a clone refused with the token in its URL) is a
    ``source_unavailable`` result the model sees; what it quotes is redacted before it is
    stored."""
    async def failing(*args: Any, **kwargs: Any) -> Any:
        raise RetrievalFailed(f"git clone https://x-access-token:{SERVER_TOKEN}@github.com/"
                              "o/r.git: HTTP 403")

    monkeypatch.setattr(SOURCE_KINDS["document"], "open", failing)
    spec = make_spec()
    job = await _job(runtime, spec)
    result = await run_tool_call(runtime, ToolCallInput(
        job=job, call_id="clone-1", tool_name="list", arguments={"source": "handbook"}))
    assert (result.status, result.rejection) == ("error", "source_unavailable")
    store = await runtime.store()
    _, raw = await store.get("tool_record", exchange_id(spec.job_id, "clone-1"),
                             principal=principal_of(spec))
    assert SERVER_TOKEN not in raw.decode("utf-8")
    detail = json.loads(json.loads(raw)["result"]["content"])["detail"]
    assert "[REDACTED:github_token]" in detail and "HTTP 403" in detail


#: a configuration file's double-quoted secrets (assembled from parts: no literal shape)
QUOTED = {"DB_PASSWORD": "Xk29" + "fjQm2vB7", "api_key": "q8Lz" + "3RtY6wPn1sDf",
          "password": "Tr0u" + "b4dorZz81k"}
CONFIG = ("# Database settings\n\n"
          f'DB_PASSWORD = "{QUOTED["DB_PASSWORD"]}"\n'
          f'api_key = "{QUOTED["api_key"]}"\n'
          f'password: "{QUOTED["password"]}"\n')


async def test_json_quoted_secrets_in_a_real_read_never_reach_the_sealed_request(
        runtime: ActivityRuntime, make_spec: Callable[..., JobSpec], docs: Any) -> None:
    """The ``read`` result is stored as JSON (every quote a ``\\"``): the gate scans its
    decoded strings, so none of the values is in the provider request or the manifest,
    and the pair carries the secret flag."""
    from activities.record_turn import record_turn
    from contracts.activity_messages import RecordTurnInput

    (docs / "config.md").write_text(CONFIG, encoding="utf-8")
    spec = make_spec()
    job = await _job(runtime, spec)
    read = await run_tool_call(runtime, ToolCallInput(
        job=job, call_id="t0001-1", tool_name="read", turn=1,
        arguments={"source": "handbook", "path": "config.md", "start_line": 1,
                   "end_line": 5}))
    assert read.status == "success"
    store = await runtime.store()
    _, raw = await store.get("tool_record", exchange_id(spec.job_id, "t0001-1"),
                             principal=principal_of(spec))
    assert QUOTED["DB_PASSWORD"] in json.loads(raw)["result"]["content"]  # as read
    as_of = "2026-01-01T00:00:00+00:00"
    turn = await record_turn(runtime, RecordTurnInput(
        job=job, turn=1, state=StepState(job_spec=job.spec), results=[read], as_of=as_of))
    state = StepState(job_spec=job.spec, tool_records=turn.tool_records)
    ref = await assemble_context(runtime, AssembleContextInput(
        job=job, step_id="research-2", stage="research", state=state, turn=2, as_of=as_of))
    assert ref.status == "ready", ref
    body = await store.get_manifest(ref.manifest_id, principal=principal_of(spec))
    sealed = json.dumps(body)  # the manifest and the serialized provider request
    for value in QUOTED.values():
        assert value not in sealed
    request = body["serialized_request"]["canonical_json"]
    assert "[REDACTED:assigned_secret]" in request
    [pair] = [p for p in body["tool_pairs"] if p["call_id"] == "t0001-1"]
    assert "secret_material:assigned_secret@result" in pair["security_flags"]
