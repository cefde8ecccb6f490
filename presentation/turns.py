"""What a research turn looks like as data and as text, for every reader of it.

``research_turns`` reads a job's turns from the store (each ``model_decision`` and the
``tool_record`` of each planned call); ``pressroom trace`` (``cli.commands``) prints them and
the review console's job page (``webconsole``) renders them. ``argument_line`` and
``cache_line`` are the one-line forms both show. Owned by neither: the console must not
import the CLI (docs/architecture.md).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

import artifacts
from contracts.ownership import check_manifest


class TraceCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    status: str | None = None  # None: not run yet
    rejection: str | None = None
    result_chars: int | None = None
    #: what the call found, in one line (``found_line``); ``None``: not run yet
    found: str | None = None


class TraceTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turn: int
    model: str
    input_tokens: int
    output_tokens: int
    manifest_id: str
    calls: list[TraceCall]
    #: prompt cache (docs/context-engine.md#prompt-cache-identity): the provider's reported
    #: cached and cache-write input tokens (None: not reported), and the engine's own count
    #: of the cacheable prefix it asked for
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None
    cacheable_prefix_tokens: int | None = None
    #: the call's cost as the worker priced it (``None``: no price for the model)
    cost_micro_usd: int | None = None


async def _head_json(store: Any, kind: str, artifact_id: str,
                     principal: Any) -> dict[str, Any] | None:
    """The head revision of an artifact as JSON (its bytes verified by the store), or
    ``None`` when there is none to see — one read, not a head lookup and then a read."""
    try:
        _, raw = await store.get(kind, artifact_id, principal=principal)
    except artifacts.ScopeDenied:  # none in this scope: missing and foreign look alike
        return None
    found: dict[str, Any] = json.loads(raw)
    return found


async def first_turn(store: Any, job_id: str, principal: Any) -> int:
    """The number of ``job_id``'s first own research turn: 1, or N+1 for a fork of a
    job's turn N (its turns up to N are its parent's, and were never its own calls —
    docs/architecture.md#forking-a-job)."""
    spec = await _head_json(store, "job_spec", job_id, principal)
    lineage = (spec or {}).get("lineage")
    turn = lineage.get("turn") if isinstance(lineage, dict) else None
    return int(turn) + 1 if isinstance(turn, int) else 1


async def turn_request(store: Any, job_id: str, turn: int,
                       principal: Any) -> tuple[dict[str, Any], int | None] | None:
    """The sealed manifest research turn ``turn`` of ``job_id`` was decided on, and that
    turn's cost as its stored reply records it (micro-USD; ``None`` when the worker had no
    price for the model); ``None`` when the job has no such turn. ``pressroom explain
    --diff`` and the console's compare page read both sides with it."""
    decision = await _head_json(store, "model_decision", f"{job_id}.turn.{turn:04d}",
                                principal)
    if decision is None:
        return None
    manifest_id = str(decision["manifest_id"])
    manifest: dict[str, Any] = await store.get_manifest(manifest_id, principal=principal)
    check_manifest(job_id, manifest, manifest_id)
    cost = (decision.get("usage") or {}).get("cost_micro_usd")
    return manifest, cost if isinstance(cost, int) else None


async def research_turns(store: Any, job_id: str, principal: Any) -> list[TraceTurn]:
    """Every research turn of ``job_id`` in order (a fork's from its first own turn), each
    with its tool calls and what their results were (``pressroom trace`` and the console's
    job page both show these): one store read per turn and one per call."""
    turns: list[TraceTurn] = []
    number = await first_turn(store, job_id, principal)
    while (decision := await _head_json(store, "model_decision",
                                        f"{job_id}.turn.{number:04d}", principal)) is not None:
        usage = decision.get("usage") or {}
        turn = TraceTurn(turn=int(decision.get("turn", number)),
                         model=str(decision.get("model", "")),
                         input_tokens=int(usage.get("input_tokens") or 0),
                         output_tokens=int(usage.get("output_tokens") or 0),
                         manifest_id=str(decision.get("manifest_id", "")), calls=[],
                         cost_micro_usd=(None if usage.get("cost_micro_usd") is None
                                         else int(usage["cost_micro_usd"])),
                         **{k: usage[k] for k in ("cached_input_tokens",
                                                  "cache_write_input_tokens",
                                                  "cacheable_prefix_tokens")
                            if isinstance(usage.get(k), int)})
        for call in decision.get("planned") or []:
            record = await _head_json(store, "tool_record",
                                      f"{job_id}:tool:{call['call_id']}", principal)
            result = None if record is None else record.get("result")
            arguments = call.get("arguments") or {}
            turn.calls.append(TraceCall(
                call_id=str(call["call_id"]), tool_name=str(call.get("tool_name", "")),
                arguments=arguments,
                status=result["status"] if result else None,
                rejection=(result.get("rejection") or None) if result else None,
                result_chars=len(str(result.get("content", ""))) if result else None,
                found=(found_line(str(call.get("tool_name", "")), arguments, result)
                       if result else None)))
        turns.append(turn)
        number += 1
    return turns


def _content(result: dict[str, Any]) -> dict[str, Any]:
    try:
        content = json.loads(str(result.get("content", "")))
    except ValueError:
        return {}
    return content if isinstance(content, dict) else {}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def found_line(tool: str, arguments: dict[str, Any], result: dict[str, Any]) -> str:
    """What one call found, in one line: ``search 'jitter' → 7 hits in 3 files``,
    ``read README.md L1-40 (of 120)``, ``list docs/ → 12 entries``, ``note on retries
    (2 citations)``; a refused call says why."""
    content = _content(result)
    if result.get("status") != "success":
        return f"{tool} refused: {result.get('rejection') or content.get('error') or 'error'}"
    if tool == "search":
        hits, files = int(content.get("hit_count") or 0), len(content.get("files") or [])
        more = " (cut short)" if content.get("truncated") else ""
        return (f"search '{content.get('query', arguments.get('query', ''))}' → "
                f"{_plural(hits, 'hit')} in {_plural(files, 'file')}{more}")
    if tool == "read":
        start, end = content.get("start_line"), content.get("end_line")
        return (f"read {content.get('path', arguments.get('path', ''))} L{start}-{end}"
                f" (of {content.get('total_lines')})")
    if tool == "list":
        entries = len(content.get("entries") or [])
        return (f"list {content.get('path') or '/'} → {entries} "
                f"{'entry' if entries == 1 else 'entries'}")
    if tool == "note":
        return (f"note on {arguments.get('topic')} "
                f"({_plural(len(arguments.get('citations') or []), 'citation')})")
    if tool == "update_plan":
        return f"plan updated ({len(str(arguments.get('text', '')))} chars)"
    if tool == "finish":
        return "finish: " + str(content.get("summary") or arguments.get("summary") or "")[:120]
    return f"{tool} {argument_line(arguments)}"[:160]


async def lines_read(store: Any, job_id: str, principal: Any
                     ) -> dict[tuple[str, str, str], dict[int, str]]:
    """Every line the job's successful ``read`` calls returned, by (source, path,
    revision): what the model was given of each file at the revision it was pinned to,
    from the stored tool records (never from the source itself)."""
    found: dict[tuple[str, str, str], dict[int, str]] = {}
    number = 1
    while (decision := await _head_json(store, "model_decision",
                                        f"{job_id}.turn.{number:04d}", principal)) is not None:
        for call in decision.get("planned") or []:
            if call.get("tool_name") != "read":
                continue
            record = await _head_json(store, "tool_record",
                                      f"{job_id}:tool:{call['call_id']}", principal)
            result = None if record is None else record.get("result")
            if not result or result.get("status") != "success":
                continue
            content = _content(result)
            lines = content.get("lines")
            if not isinstance(lines, list) or not isinstance(content.get("start_line"), int):
                continue
            key = (str(content.get("source")), str(content.get("path")),
                   str(content.get("revision")))
            into = found.setdefault(key, {})
            for offset, text in enumerate(lines):
                into[content["start_line"] + offset] = str(text)
        number += 1
    return found


def cache_line(turn: TraceTurn) -> str:
    """``cached N written N of prefix N `` when the turn recorded cache figures."""
    if turn.cached_input_tokens is None and turn.cacheable_prefix_tokens is None:
        return ""
    return (f"cached {turn.cached_input_tokens or 0} written "
            f"{turn.cache_write_input_tokens or 0} of prefix "
            f"{turn.cacheable_prefix_tokens or 0} ")


def argument_line(arguments: dict[str, Any]) -> str:
    """A call's arguments in one short line (a note shows its topic, a plan its size)."""
    if "text" in arguments:
        return f"text: {len(str(arguments['text']))} chars"
    if "claim" in arguments:
        return f"topic={arguments.get('topic')} citations={len(arguments.get('citations', []))}"
    return " ".join(f"{k}={v}" for k, v in sorted(arguments.items()) if k != "open_items")
