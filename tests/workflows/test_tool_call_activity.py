"""The ``run_tool`` activity called directly: real SQLite store, real document source.

A tool call is run once and stored once by its call id — a retry after a crash (the same
call id again, even while the first attempt is still running) gets the stored exchange
back and writes nothing — and a call the runtime refuses is stored as a typed error result
instead of failing the activity. A call cannot hold its worker: a pathological pattern
spends the call's regex time in a worker thread while the event loop keeps running.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from activities import store_activities
from activities.research_tools import MAX_REGEX_SECONDS, search_hits
from activities.runtime import ActivityRuntime, principal_of
from activities.tool_call import exchange_id, run_tool_call
from contracts.activity_messages import JobRef, StoreJobSpecInput, ToolCallInput
from contracts.job_spec import JobSpec


async def _job(runtime: ActivityRuntime, spec: JobSpec) -> JobRef:
    ref = await store_activities.store_job_spec(
        runtime, StoreJobSpecInput(spec=spec))
    return JobRef(job_id=spec.job_id, principal_id=spec.principal.principal_id,
                  tenant=spec.scope.tenant, project=spec.scope.project, spec=ref)


async def _stored(runtime: ActivityRuntime, spec: JobSpec, call_id: str) -> list[Any]:
    store = await runtime.store()
    return list(await store.history("tool_record", exchange_id(spec.job_id, call_id),
                                    principal=principal_of(spec)))


async def _exchange(runtime: ActivityRuntime, spec: JobSpec, call_id: str) -> dict[str, Any]:
    store = await runtime.store()
    _, raw = await store.get("tool_record", exchange_id(spec.job_id, call_id),
                             principal=principal_of(spec))
    body: dict[str, Any] = json.loads(raw)
    return body


async def test_a_call_is_stored_with_its_hashes_and_only_a_reference_returns(
        runtime: ActivityRuntime, make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec()
    job = await _job(runtime, spec)
    result = await run_tool_call(runtime, ToolCallInput(
        job=job, call_id="turn1-call1", tool_name="search", turn=1,
        arguments={"source": "handbook", "query": "exponential backoff"}))
    assert result.status == "success" and result.rejection is None
    assert result.exchange.kind == "tool_record" and result.result_chars > 0
    assert "exponential backoff" not in result.model_dump_json()  # content stays in the store
    body = await _exchange(runtime, spec, "turn1-call1")
    assert body["call"]["argument_hash"].startswith("sha256:")
    assert body["result"]["result_hash"] == result.result_hash
    hits = list(search_hits(json.loads(body["result"]["content"])))
    assert hits and all(path == "retries.md" for path, _rev, _line, _text in hits)


async def test_a_retried_call_runs_once_and_returns_the_first_result(
        runtime: ActivityRuntime, make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec()
    job = await _job(runtime, spec)
    first_input = ToolCallInput(job=job, call_id="c-1", tool_name="read",
                                arguments={"source": "handbook", "path": "retries.md",
                                           "start_line": 1, "end_line": 2})
    # two attempts at once (a retry while the first still runs), then a late one
    first, concurrent = await asyncio.gather(run_tool_call(runtime, first_input),
                                             run_tool_call(runtime, first_input))
    # even if a retry carried other arguments, the call id's stored exchange is the answer
    late = await run_tool_call(runtime, first_input.model_copy(
        update={"arguments": {"source": "handbook", "path": "resume.md", "start_line": 1,
                              "end_line": 1}}))
    assert first == concurrent == late
    assert len(await _stored(runtime, spec, "c-1")) == 1


@pytest.mark.parametrize(("tool", "arguments", "kind"), [
    ("list", {"source": "somebody-elses-repo"}, "undeclared_source"),
    ("read", {"source": "handbook", "path": "../../etc/passwd", "start_line": 1,
              "end_line": 1}, "path_outside_source"),
    ("shell", {"command": "rm -rf /"}, "unknown_tool"),
    ("search", {"source": "handbook"}, "malformed_arguments"),
])
async def test_a_refused_call_is_a_stored_error_result(
        runtime: ActivityRuntime, make_spec: Callable[..., JobSpec], tool: str,
        arguments: dict[str, Any], kind: str) -> None:
    spec = make_spec()
    job = await _job(runtime, spec)
    result = await run_tool_call(runtime, ToolCallInput(
        job=job, call_id=f"bad-{tool}", tool_name=tool, arguments=arguments))
    assert (result.status, result.rejection) == ("error", kind)
    content = json.loads((await _exchange(runtime, spec, f"bad-{tool}"))["result"]["content"])
    assert content["error"] == kind and content["detail"]


#: backtracks exponentially on a line of word characters that ends in one that is not
CATASTROPHIC = r"^(?:(?:\w|\s){1,2}){1,18}$"


def slow_file(folder: Any) -> str:
    """200 lines of about 70 ms each for ``CATASTROPHIC``: 15 s of matching in all."""
    (folder / "slow.md").write_text(
        "".join(f"line {n:03d} abcdefghij klmnopqrstu vwxyzab!\n" for n in range(200)),
        encoding="utf-8")
    return "slow.md"


class Ticks:
    """An event-loop tick every 10 ms beside a call; ``longest`` is the worst gap."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._last = time.monotonic()
        self._task: asyncio.Task[None] | None = None

    def _tick(self) -> None:
        now = time.monotonic()
        self.longest, self._last = max(self.longest, now - self._last), now

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.01)
            self._tick()

    async def __aenter__(self) -> Ticks:
        self._last = time.monotonic()
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(0)  # ticking before the call starts
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._tick()  # the gap up to now: a call that blocked the loop to its end counts
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def test_a_catastrophic_pattern_ends_at_the_calls_deadline_and_never_stalls_the_loop(
        runtime: ActivityRuntime, make_spec: Callable[..., JobSpec], docs: Any) -> None:
    spec = make_spec()
    job = await _job(runtime, spec)
    path = slow_file(docs)
    started = time.monotonic()
    async with Ticks() as ticks:
        result = await run_tool_call(runtime, ToolCallInput(
            job=job, call_id="slow-1", tool_name="search", turn=1,
            arguments={"source": "handbook", "query": CATASTROPHIC, "regex": True,
                       "paths": [path]}))
    elapsed = time.monotonic() - started
    # the loop kept ticking (heartbeats, the worker's other jobs) the whole time
    assert ticks.longest < 0.25, f"event loop stalled for {ticks.longest:.2f} s"
    # one deadline for the whole call, not one per line: about 2 s, not 15
    assert elapsed < MAX_REGEX_SECONDS + 1.5, elapsed
    assert (result.status, result.rejection) == ("error", "arguments_over_limit")
    content = json.loads((await _exchange(runtime, spec, "slow-1"))["result"]["content"])
    assert content["error"] == "arguments_over_limit"
    assert f"used the call's {MAX_REGEX_SECONDS:g} s of regex time" in content["detail"]
    assert "abcdefghij" not in content["detail"]  # names the limit, never file content


def test_oversized_arguments_are_refused_before_they_reach_history() -> None:
    from contracts.activity_messages import ArtifactRef

    job = JobRef(job_id="j", principal_id="p", tenant="t", project="q",
                 spec=ArtifactRef(kind="job_spec", artifact_id="j", revision=1,
                                  content_hash="sha256:" + "0" * 64))
    with pytest.raises(ValidationError, match="limit is 4000"):
        ToolCallInput(job=job, call_id="c", tool_name="search",
                      arguments={"source": "handbook", "query": "x" * 5000})


async def _call(runtime: ActivityRuntime, job: JobRef, call_id: str, tool: str,
                **arguments: Any) -> Any:
    return await run_tool_call(runtime, ToolCallInput(job=job, call_id=call_id,
                                                      tool_name=tool, arguments=arguments))


def _cite(call_id: str, revision: str, start: int, end: int, *, path: str = "retries.md",
          source: str = "handbook") -> dict[str, Any]:
    return {"call_id": call_id, "source": source, "revision": revision, "path": path,
            "start_line": start, "end_line": end}


async def test_a_note_is_accepted_only_for_lines_a_stored_result_showed(
        runtime: ActivityRuntime, make_spec: Callable[..., JobSpec]) -> None:
    spec = make_spec()
    job = await _job(runtime, spec)
    read = await _call(runtime, job, "r1", "read", source="handbook", path="retries.md",
                       start_line=3, end_line=4)
    found = await _call(runtime, job, "s1", "search", source="handbook", query="twice as long")
    refused = await _call(runtime, job, "x1", "read", source="handbook", path="nope.md",
                          start_line=1, end_line=1)
    assert (read.status, found.status, refused.status) == ("success", "success", "error")
    exchange = await _exchange(runtime, spec, "r1")
    revision = json.loads(exchange["result"]["content"])["revision"]
    [(_path, _rev, hit_line, _text)] = search_hits(
        json.loads((await _exchange(runtime, spec, "s1"))["result"]["content"]))

    async def note(call_id: str, *citations: dict[str, Any], topic: str = "retries") -> Any:
        return await _call(runtime, job, call_id, "note", topic=topic,
                           claim="Each retry waits twice as long as the one before.",
                           citations=list(citations))

    accepted = await note("n1", _cite("r1", revision, 3, 4), _cite("s1", revision, hit_line,
                                                                   hit_line))
    assert accepted.status == "success", accepted
    assert accepted.note_topic == "retries" and read.note_topic is None
    stored = json.loads((await _exchange(runtime, spec, "n1"))["result"]["content"])
    assert stored["accepted"] and stored["topic"] == "retries"

    mismatches = {
        "n2": _cite("r1", revision, 2, 4),                      # line 2 was not read
        "n3": _cite("never-called", revision, 3, 3),            # no such call stored
        "n4": _cite("r1", "sha256:" + "0" * 64, 3, 3),          # another revision
        "n5": _cite("r1", revision, 3, 3, path="resume.md"),    # another file
        "n6": _cite("s1", revision, hit_line + 1, hit_line + 1),  # not a hit line
        "n7": _cite("x1", revision, 1, 1, path="nope.md"),      # a refused call shows nothing
        "n8": _cite("r1", revision, 3, 3, source="other"),      # another source
    }
    for call_id, citation in mismatches.items():
        result = await note(call_id, citation)
        assert (result.status, result.rejection) == ("error", "citation_mismatch"), call_id
    off_topic = await note("n9", _cite("r1", revision, 3, 3), topic="weather")
    assert off_topic.rejection == "malformed_arguments"
    too_many = await note("n10", *[_cite("r1", revision, 3, 3)] * 11)
    assert too_many.rejection == "arguments_over_limit"
