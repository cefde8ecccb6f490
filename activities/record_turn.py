"""``record_turn``: fold one research turn's exchanges into what the next turn assembles from.

Each tool call stored its own exchange (``tool_call``); the context engine reads a job's
tool history as a whole. This activity appends the turn's calls and results to the
history's current chunk — results in call order, so the history's hash does not depend on
which parallel call finished first — and turns every accepted ``note`` into evidence
records (one per citation, holding exactly the cited lines of the stored result it names,
so a note's evidence is what the source said, not what the model claimed) in the notes'
current chunk; the turn's last accepted ``update_plan`` becomes the job's new plan
revision. Chunks hold ``TOOL_CHUNK_TURNS`` turns each (``read_chunks`` reads a history
back), so the store grows by a chunk per turn, never by rewriting the whole history.

All three writes use the turn as their write id: a retry after a crash returns the revisions
the first attempt wrote, and nothing is appended twice. Only references come back.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from activities.research_tools.exchanges import exchange_id, stored_exchange
from activities.research_tools.note import NoteArguments, cited_lines
from activities.research_tools.registry import tool_named
from activities.runtime import (
    ActivityRuntime,
    dumps,
    load_json,
    pause_point,
    principal_of,
    put_once,
    ref_of,
)
from activities.sources.evidence import EvidenceRecord
from activities.sources.kind import CitedRange
from artifacts import Store
from context import sha256_text
from contracts.activity_messages import ArtifactRef, RecordTurnInput, RecordTurnResult
from contracts.job_spec import JobSpec

#: research turns per tool-history chunk
TOOL_CHUNK_TURNS = 10
_CHUNK = re.compile(r"^(?P<job>.+)\.(?P<what>tools|notes)\.t(?P<n>\d{4})$")


def tools_id(job_id: str, turn: int) -> str:
    """The tool-history chunk a research turn's exchanges go to (``TOOL_CHUNK_TURNS`` turns
    each): a turn rewrites its chunk, never the whole history, so the store grows by a
    chunk per turn however long the job runs."""
    return f"{job_id}.tools.t{(turn - 1) // TOOL_CHUNK_TURNS:04d}"


def notes_id(job_id: str, turn: int) -> str:
    """The chunk of evidence records a research turn's notes go to (same turns per chunk)."""
    return f"{job_id}.notes.t{(turn - 1) // TOOL_CHUNK_TURNS:04d}"


async def read_chunks(store: Store, principal: Any,
                      ref: ArtifactRef) -> list[tuple[Any, bytes]]:
    """The records and bodies making up the history ``ref`` ends (tool history or notes):
    for a chunk, every earlier chunk at its head — complete, so final: no turn writes to it
    again — then ``ref``'s own revision; any other artifact alone."""
    found = _CHUNK.match(ref.artifact_id)
    chunks = []
    if found is not None:
        for number in range(int(found.group("n"))):
            artifact_id = f"{found.group('job')}.{found.group('what')}.t{number:04d}"
            head = await store.head(ref.kind, artifact_id, principal=principal)
            if head is not None:
                chunks.append(await store.get(ref.kind, artifact_id, principal=principal,
                                              revision=head.revision))
    chunks.append(await store.get(ref.kind, ref.artifact_id, principal=principal,
                                  revision=ref.revision))
    return chunks


def agent_plan_id(job_id: str) -> str:
    return f"{job_id}.agent-plan"


def note_item_id(topic: str, note_call_id: str, index: int) -> str:
    """``note:<topic>:<call id>#<n>``: the topic is in the id so a reader of the request
    (the offline agent) can tell which topic a piece of evidence was noted for."""
    suffix = f":{note_call_id}#{index}"
    return f"note:{topic[:200 - len(suffix) - 5]}{suffix}"


def _note_records(spec: JobSpec, note_call_id: str, note: dict[str, Any],
                  cited: dict[str, dict[str, Any]], as_of: datetime) -> list[EvidenceRecord]:
    """One evidence record per citation of an accepted note: the cited lines as the stored
    result showed them, with the fields the tool that produced that result gives its
    evidence (a declared source's kind, an MCP result …; ``ResearchTool.evidence``)."""
    records = []
    topic = note["topic"]
    for index, citation in enumerate(note["citations"], start=1):
        name, path = citation["source"], citation["path"]
        start, end, revision = citation["start_line"], citation["end_line"], citation["revision"]
        exchange = cited[citation["call_id"]]
        shown = cited_lines(exchange, name, revision, path, tool_named)
        text = "\n".join(shown[number] for number in range(start, end + 1))
        tool = tool_named(exchange["call"]["tool_name"])
        fields = tool.evidence(spec, name, CitedRange(path=path, start=start, end=end,
                                                      revision=revision))
        records.append(EvidenceRecord(
            item_id=note_item_id(topic, note_call_id, index), call_id=note_call_id,
            tool_name="note", source_name=name, path=path, line_start=start, line_end=end,
            content=text, content_hash=sha256_text(text), revision=revision,
            observed_at=as_of, topics=[topic],
            canonical_key=f"note:{topic}:{name}:{path}#L{start}-L{end}",
            cited_call_id=citation["call_id"], **fields))
    return records


async def record_turn(runtime: ActivityRuntime, inp: RecordTurnInput) -> RecordTurnResult:
    store = await runtime.store()
    spec, state = await runtime.spec_of(inp.job), inp.state
    as_of = datetime.fromisoformat(inp.as_of)
    write = f"turn-{inp.turn}"
    await pause_point("record_turn")
    exchanges = [await load_json(store, spec, result.exchange, {}) for result in inp.results]

    chunk_id = tools_id(spec.job_id, inp.turn)
    held = state.tool_records if (state.tool_records is not None
                                  and state.tool_records.artifact_id == chunk_id) else None
    tools = await load_json(store, spec, held, {"calls": [], "results": []})
    known = {call["call_id"] for call in tools["calls"]}
    for exchange in exchanges:
        call, result = exchange["call"], exchange["result"]
        if call["call_id"] in known:
            continue  # already recorded (never expected: the turn is the write id)
        tools["calls"].append({"call_id": call["call_id"], "tool_name": call["tool_name"],
                               "arguments": call["arguments"], "turn": inp.turn})
        tools["results"].append({"call_id": result["call_id"],
                                 "tool_name": result["tool_name"], "status": result["status"],
                                 "content": result["content"],
                                 "result_hash": result["result_hash"]})
    await pause_point("record_turn_before_write")
    tool_record = await put_once(store, "tool_record", chunk_id, dumps(tools),
                                 spec=spec, trust="trusted_state", write_id=write,
                                 parent_revision=held.revision if held else None)
    await pause_point("record_turn_between_writes")

    new_records: list[EvidenceRecord] = []
    plan_text: str | None = None
    for exchange in exchanges:
        call, result = exchange["call"], exchange["result"]
        if result["status"] != "success":
            continue
        if call["tool_name"] == "update_plan":
            plan_text = call["arguments"]["text"]
        elif call["tool_name"] == "note":
            # the accepted call's own arguments: its result only acknowledges it (one stored
            # before that echoed them, the same values)
            note = json.loads(result["content"])
            if not isinstance(note.get("citations"), list):
                note = NoteArguments.model_validate(call["arguments"]).model_dump()
            cited: dict[str, dict[str, Any]] = {}
            for citation in note["citations"]:
                found = await stored_exchange(store, exchange_id(spec.job_id,
                                                                 citation["call_id"]),
                                              principal_of(spec))
                if found is not None:
                    cited[citation["call_id"]] = found[1]
            new_records += _note_records(spec, call["call_id"], note, cited, as_of)

    notes_ref = state.notes
    if new_records:
        chunk = notes_id(spec.job_id, inp.turn)
        held_notes = state.notes if (state.notes is not None
                                     and state.notes.artifact_id == chunk) else None
        pack = await load_json(store, spec, held_notes, {"records": []})
        pack["records"] += [{**r.model_dump(mode="json"), "citation": r.citation()}
                            for r in new_records]
        written = await put_once(store, "evidence_pack", chunk, dumps(pack), spec=spec,
                                 trust="mixed", write_id=write,
                                 parent_revision=held_notes.revision if held_notes else None)
        notes_ref = ref_of(written)
    plan_ref = state.agent_plan
    if plan_text is not None:
        plan = await put_once(store, "agent_plan", agent_plan_id(spec.job_id),
                              plan_text.encode("utf-8"), spec=spec,
                              trust="untrusted_external_data", write_id=write,
                              media_type="text/markdown",
                              parent_revision=state.agent_plan.revision
                              if state.agent_plan else None)
        plan_ref = ref_of(plan)
    await pause_point("record_turn_after_write")
    return RecordTurnResult(tool_records=ref_of(tool_record), notes=notes_ref,
                            agent_plan=plan_ref, notes_added=len(new_records))
