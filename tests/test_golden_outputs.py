"""Byte-identical outputs across refactors: the digests of what the engine and the job emit.

The architecture work moves every module of the context engine and the job's contracts
without changing behaviour. "Without changing behaviour" is checked here, not promised:
this module computes digests of everything observable that a move could perturb and
compares them with ``tests/golden_outputs.json``, recorded before the move.

* the bundled context eval (``evals/context``): every packet of every strategy in both
  topic modes, whole — selected and excluded items with reasons, the manifest reference
  with the candidate-set, assembly-input and serialized-request hashes — plus the release
  gate's verdict;
* synthetic assemblies from ``bench/assemble.py``'s workload (100 and 1,000 candidates,
  both provider adapters, cold and then warm — a warm assembly reuses the engine's memos,
  so a memo keyed wrongly after a move shows up here): the manifest JSON, the serialized
  request's canonical JSON and the assembly input;
* the example job (``examples/job.yaml``) driven through its real activities with a fixed
  ``as_of`` over a real SQLite store and the real fixture repositories: the plan step, each
  research turn of the offline agent (its sealed request, the calls it made and their
  results' hashes) and the draft step's sealed manifests and request hashes, the tool
  history, notes and plan it left, and the extractive draft's text.

A deliberate change of output re-records with
``python -m tests.test_golden_outputs --record`` and says why in its commit.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import context
from context.policy import load_policy

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden_outputs.json"
AS_OF = "2026-01-01T12:00:00+00:00"


def _sha(data: str | bytes) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def _json_sha(value: Any) -> str:
    return _sha(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def eval_digests() -> dict[str, Any]:
    from evals.context_lab.runner import run_context_eval

    result = run_context_eval()
    out: dict[str, Any] = {"gate": _json_sha(result.gate.model_dump(mode="json"))}
    for mode, mode_result in result.modes.items():  # both topic modes
        prefix = "" if mode == "labels" else f"{mode}/"
        for strategy, runs in sorted(mode_result.runs.items()):
            for run in runs:
                packet = run.packet.model_dump(mode="json")
                out[f"{prefix}{strategy}/{run.case.id}"] = {
                    "packet": _json_sha(packet),
                    "manifest": packet.get("manifest"),
                }
    return out


def _bench_module() -> Any:
    spec = importlib.util.spec_from_file_location("bench_assemble", ROOT / "bench" / "assemble.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def synthetic_digests() -> dict[str, Any]:
    bench = _bench_module()
    out: dict[str, Any] = {}
    for size in (100, 1_000):
        for adapter in ("openai_chat", "anthropic_messages"):
            request = bench.workload(size, size * 600).model_copy(update={"adapter": adapter})
            context.reset_caches()
            for warmth in ("cold", "warm"):
                outcome = context.assemble(request)
                entry: dict[str, Any] = {
                    "status": outcome.status,
                    "manifest": _sha(outcome.manifest.model_dump_json()),
                }
                if isinstance(outcome, context.Ready):
                    entry["request"] = _sha(outcome.serialized.canonical_json)
                    entry["request_hash"] = outcome.serialized.hash
                    entry["assembly_input"] = _sha(outcome.assembly_input.model_dump_json())
                out[f"{size}/{adapter}/{warmth}"] = entry
    return out


def _without_store_clock(value: Any) -> Any:
    """The manifest minus the one wall-clock value in it: the store stamps an artifact it
    writes with its creation time, which becomes that candidate's ``observed_at`` (and so
    enters the manifest digest). Everything else is fixed by ``AS_OF`` and the fixtures."""
    if isinstance(value, dict):
        return {key: "<store clock>" if key in ("observed_at", "manifest_digest")
                and item != AS_OF else _without_store_clock(item)
                for key, item in value.items()}
    if isinstance(value, list):
        return [_without_store_clock(item) for item in value]
    return value


#: the example job's research loop is cut off here (it finishes in far fewer turns)
MAX_GOLDEN_TURNS = 30


async def _example_job(tmp: Path) -> dict[str, Any]:
    from activities import draft, store_activities
    from activities.context_activity import assemble_context
    from activities.decide import decide
    from activities.record_turn import record_turn
    from activities.runtime import ActivityRuntime
    from activities.tool_call import run_tool_call
    from artifacts.types import Principal
    from contracts.activity_messages import (
        AssembleContextInput,
        DecideInput,
        DraftInput,
        JobRef,
        PlanInput,
        RecordTurnInput,
        StepState,
        StoreJobSpecInput,
        ToolCallInput,
    )
    from contracts.job_spec import load_job_spec
    from contracts.path_safety import PathRoots
    from examples.build_fixtures import build_fixtures

    fixtures = tmp / "fixtures"
    build_fixtures(fixtures)
    locations = {"PRESSROOM_HOME": str(tmp / "home"), "PRESSROOM_FIXTURES": str(fixtures)}
    # the job reads under tmp (fixtures, workspace); nothing is published, but its pinned
    # destination must lie in a publish root for the spec to be stored
    roots = PathRoots(sources=(tmp,), publish=(Path("/golden"),))
    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{tmp / 'store.db'}", locations=locations,
                              roots=roots)
    out: dict[str, Any] = {}
    try:
        spec = load_job_spec(ROOT / "examples" / "job.yaml")
        # The destination is rendered into the task contract; the job file resolves it
        # against its own folder, so it is pinned here to keep the digests independent of
        # where the repository is checked out (nothing is published).
        spec = spec.model_copy(update={"workspace": str(tmp / "workspace"),
                                       "destination": "/golden/published"})
        (tmp / "workspace").mkdir()
        store = await runtime.store()
        principal = Principal(principal_id=spec.principal.principal_id,
                              tenant=spec.scope.tenant, project=spec.scope.project)
        spec_ref = await store_activities.store_job_spec(
            runtime, StoreJobSpecInput(spec=spec))
        job = JobRef(job_id=spec.job_id, principal_id=spec.principal.principal_id,
                     tenant=spec.scope.tenant, project=spec.scope.project, spec=spec_ref)
        state = StepState(job_spec=spec_ref)

        async def step(stage: Any, step_id: str, turn: int = 0) -> Any:
            ref = await assemble_context(runtime, AssembleContextInput(
                job=job, step_id=step_id, stage=stage, state=state, as_of=AS_OF, turn=turn))
            body = await store.get_manifest(ref.manifest_id, principal=principal)
            out[step_id] = {"status": ref.status, "input_hash": ref.input_hash,
                            "blocked_reason": ref.blocked_reason,
                            "manifest": _json_sha(_without_store_clock(body))}
            return ref

        plan_ctx = await step("plan", "plan-1")
        plan = await store_activities.write_plan(
            runtime, PlanInput(job=job, context=plan_ctx))
        state = state.model_copy(update={"plan": plan})
        # the research loop as the workflow runs it (assemble, decide, the calls, record),
        # the calls one after another: the workflow records results in call order anyway,
        # and one at a time keeps the store's bytes independent of process timing
        steps, finished = 1, False
        for turn in range(1, MAX_GOLDEN_TURNS + 1):
            steps += 1
            research_ctx = await step("research", f"research-{steps}", turn)
            decided = await decide(runtime, DecideInput(job=job, context=research_ctx,
                                                        turn=turn))
            results = [await run_tool_call(runtime, ToolCallInput(
                job=job, call_id=call.call_id, tool_name=call.tool_name,
                arguments=call.arguments, turn=turn, refusal=call.refusal))
                for call in decided.calls]
            recorded = await record_turn(runtime, RecordTurnInput(
                job=job, turn=turn, state=state, results=results, as_of=AS_OF))
            state = state.model_copy(update={
                "tool_records": recorded.tool_records, "agent_plan": recorded.agent_plan,
                "notes": recorded.notes or state.notes})
            out[f"turn-{turn}"] = [f"{c.tool_name} {r.status} {r.result_hash}"
                                   for c, r in zip(decided.calls, results, strict=True)]
            finished = any(c.tool_name == "finish" and r.status == "success"
                           for c, r in zip(decided.calls, results, strict=True))
            if finished or not decided.calls:
                break
        assert finished, "the offline agent did not finish the example job"
        for name in ("tool_records", "notes", "agent_plan"):
            ref = getattr(state, name)
            out[name] = ref.content_hash if ref is not None else None
        steps += 1
        draft_ctx = await step("draft", f"draft-{steps}")
        written = await draft.draft(runtime, DraftInput(job=job, context=draft_ctx,
                                                        state=state))
        out["draft"] = written.draft.content_hash
    finally:
        await runtime.close()
    return out


def example_job_digests(tmp: Path) -> dict[str, Any]:
    return asyncio.run(_example_job(tmp))


def current_outputs(tmp: Path) -> dict[str, Any]:
    return {
        "policy_digest": load_policy("default").digest,
        "eval": eval_digests(),
        "synthetic": synthetic_digests(),
        "example_job": example_job_digests(tmp),
    }


def _diff(expected: Any, actual: Any, path: str = "") -> list[str]:
    if isinstance(expected, dict) and isinstance(actual, dict):
        lines: list[str] = []
        for key in sorted(set(expected) | set(actual)):
            lines += _diff(expected.get(key), actual.get(key), f"{path}/{key}")
        return lines
    return [] if expected == actual else [f"{path}: {expected!r} != {actual!r}"]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return current_outputs(tmp_path_factory.mktemp("golden"))


@pytest.mark.parametrize("part", ["policy_digest", "eval", "synthetic", "example_job"])
def test_outputs_are_byte_identical_to_the_recorded_ones(
    outputs: dict[str, Any], part: str
) -> None:
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    differences = _diff(expected[part], outputs[part], part)
    assert not differences, "outputs changed:\n" + "\n".join(differences[:20])


def test_the_example_job_is_deterministic_under_a_fixed_clock(
    outputs: dict[str, Any], tmp_path: Path
) -> None:
    """The golden comparison is only meaningful if a second run gives the same digests."""
    assert example_job_digests(tmp_path) == outputs["example_job"]


if __name__ == "__main__":  # pragma: no cover - the recording entry point
    import tempfile

    if sys.argv[1:] != ["--record"]:
        raise SystemExit("usage: python -m tests.test_golden_outputs --record")
    with tempfile.TemporaryDirectory() as scratch:
        recorded = current_outputs(Path(scratch))
    GOLDEN.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"recorded {GOLDEN}")
