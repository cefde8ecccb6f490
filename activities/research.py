"""The research activity: acquire the job's sources in parallel and store what came back.

Every acquisition is a recorded tool call (call id, argument hash, result hash, status).
Calls are recorded in the order they were issued and results in the order they completed,
so the tool history shows the real interleaving and pairing by ``call_id`` has to survive
it. A failed or empty acquisition is an outcome (``retrieval_failed`` / ``not_retrieved``),
never a crash. Results merge into the revisions the job already holds: re-acquiring one
source replaces only that source's records.

Writes three artifacts, each a new revision: ``source_records`` (one entry per source:
outcome, reason, revision, missing topics, searched scope), ``evidence_pack`` (the excerpt
records with source refs, lineage inputs and content hashes) and ``tool_record`` (the
cumulative tool history).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from activities.runtime import (
    ActivityRuntime,
    dumps,
    load_json,
    pause_point,
    put_once,
    ref_of,
)
from activities.sources import acquire
from activities.web_refresh import web_pages
from contracts.activity_messages import ResearchInput, ResearchResult
from contracts.source_specs import TopicTerms


def _ids(job_id: str) -> tuple[str, str, str]:
    return f"{job_id}.sources", f"{job_id}.evidence", f"{job_id}.tools"


def _searched(src: Any, topics: list[TopicTerms]) -> dict[str, Any]:
    """The scope that was searched, kept with negative findings
    (docs/architecture.md#checkpoints)."""
    where = {"kind": src.kind, "name": src.name}
    if src.kind == "git":
        where |= {"repo": src.repo, "commit": src.commit, "paths": list(src.paths)}
    elif src.kind == "web_page" and src.path is None:
        where |= {"url": src.url}
    else:
        where |= {"path": src.path}
    where["terms"] = sorted({t for topic in topics for t in topic.terms})
    return where


async def research(runtime: ActivityRuntime, inp: ResearchInput) -> ResearchResult:
    store = await runtime.store()
    spec, state = await runtime.spec_of(inp.job), inp.state
    topics = [TopicTerms(name=t.name, terms=list(t.terms)) for t in spec.topics]
    as_of = datetime.fromisoformat(inp.as_of)
    # One acquisition per source name, the newest spec winning: two resolutions naming the
    # same source can arrive together, and acquiring it twice would record duplicate call
    # ids and duplicate evidence.
    sources = list({src.name: src for src in inp.sources}.values())
    await pause_point("research")

    results: list[dict[str, Any]] = []  # appended in completion order
    pages = await web_pages(runtime, spec)

    async def one(src: Any) -> Any:
        call_id = f"{spec.job_id}:{inp.context.step_id}:{src.name}"
        acquisition = await acquire(src, topics, call_id=call_id, as_of=as_of, turn=inp.turn,
                                    locations=runtime.locations, roots=runtime.roots_for(spec),
                                    web_pages=pages)
        results.append(acquisition.tool_result.model_dump(mode="json"))
        return acquisition

    acquired = await asyncio.gather(*(one(src) for src in sources))
    issued = [a.tool_call.model_dump(mode="json") for a in acquired]  # issue order

    src_id, ev_id, tool_id = _ids(spec.job_id)
    old_sources = await load_json(store, spec, state.source_records, {"acquisitions": []})
    old_pack = await load_json(store, spec, state.evidence_pack, {"records": []})
    # this record continues only a record of its own (a research loop keeps its history in
    # chunks, ``record_turn``)
    held_tools = state.tool_records if (state.tool_records is not None
                                        and state.tool_records.artifact_id == tool_id) else None
    old_tools = await load_json(store, spec, held_tools, {"calls": [], "results": []})
    renewed = {a.source_name for a in acquired}

    acquisitions = [a for a in old_sources["acquisitions"] if a["source_name"] not in renewed]
    records = [r for r in old_pack["records"] if r["source_name"] not in renewed]
    for a, src in zip(acquired, sources, strict=True):
        acquisitions.append({
            "source_name": a.source_name, "kind": a.kind, "outcome": str(a.outcome),
            "reason": a.reason, "revision": a.revision, "missing_topics": a.missing_topics,
            "warnings": a.warnings, "argument_hash": a.argument_hash,
            "call_id": a.tool_call.call_id, "result_hash": a.tool_result.result_hash,
            "record_count": len(a.records), "searched": _searched(src, topics),
            "acquisition": a.source_acquisition().model_dump(mode="json"),
        })
        for r in a.records:
            records.append({**r.model_dump(mode="json"), "citation": r.citation()})
    tools = {"calls": [*old_tools["calls"], *issued],
             "results": [*old_tools["results"], *results]}

    write = inp.context.step_id
    await pause_point("research_before_write")
    src_rec = await put_once(store, "source_records", src_id, dumps({"acquisitions": acquisitions}),
                             spec=spec, trust="trusted_state", write_id=write,
                             parent_revision=state.source_records.revision
                             if state.source_records else None)
    await pause_point("research_between_writes")
    ev_rec = await put_once(store, "evidence_pack", ev_id, dumps({"records": records}),
                            spec=spec, trust="mixed", write_id=write,
                            parent_revision=state.evidence_pack.revision
                            if state.evidence_pack else None)
    tool_rec = await put_once(store, "tool_record", tool_id, dumps(tools), spec=spec,
                              trust="trusted_state", write_id=write,
                              parent_revision=held_tools.revision if held_tools else None)
    await pause_point("research_after_write")
    outcomes = [str(a.outcome) for a in acquired]
    return ResearchResult(
        source_records=ref_of(src_rec), evidence_pack=ref_of(ev_rec), tool_records=ref_of(tool_rec),
        retrieved=outcomes.count("retrieved"), not_retrieved=outcomes.count("not_retrieved"),
        retrieval_failed=outcomes.count("retrieval_failed"),
    )
