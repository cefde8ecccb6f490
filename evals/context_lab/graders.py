"""Graders: deterministic checks of one packet against its case
(docs/context-engine.md#graders).

Each grader reads the structured packet (never prose) plus the lab's ground truth (the
sources' topics and trust) and returns pass/fail with a detail naming what broke. They do
not know which strategy produced the packet. The ten graders:

``required_evidence``  every required topic that is available (not expected missing) is
                       covered by a selected source.
``missing_evidence``   ``missing_topics`` equals the case's gold label, and a ready packet
                       names every missing topic under a MISSING EVIDENCE heading in the
                       model-visible input (a blocked one is explicit by its sealed
                       manifest).
``forbidden_sources``  no forbidden source and no lab-``untrusted`` source is selected
                       (admitted into the model input in any form, quoted data included),
                       and no ``forbidden_text`` is visible to the model.
``relevance``          every selected source covers a required topic.
``budget``             evidence tokens (reported and summed per block) ≤ the limit.
``traceability``       every selected entry keeps locator, updated-at and content hash;
                       the packet has a fingerprint; ``retained_text`` is still visible.
``expected_exclusions`` each ``expected_excluded`` source is excluded with that reason
                       (not applicable when the case states none).
``tool_pairing``       every visible call has exactly one result, which follows it with
                       only other results in between; no orphan or duplicate result; the
                       repairs the case expects are recorded as typed anomalies.
``trust_zone``         no line of untrusted text (untrusted sources, tool output) appears
                       outside a data block, nor in a system message at all.
``manifest_complete``  every retrieved candidate is selected xor excluded with a reason,
                       every candidate has an acquisition outcome, and a sealed manifest
                       carries the ids and hashes its status requires.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from context import MISSING_EVIDENCE_HEADING
from evals.context_lab.dataset import LabCase, LabSource
from evals.context_lab.mapping import is_untrusted
from evals.context_lab.packet import Packet
from evals.context_lab.zones import outside_data_blocks

MIN_SIGNATURE = 16  # shorter lines are too generic to attribute to one untrusted source


class Grade(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    passed: bool
    detail: str
    applicable: bool = True


Grader = Callable[[LabCase, dict[str, LabSource], Packet], Grade]


def _covered(packet: Packet, sources: dict[str, LabSource]) -> set[str]:
    return {t for s in packet.selected if s.id in sources for t in sources[s.id].topics}


def required_evidence(case: LabCase, sources: dict[str, LabSource], packet: Packet) -> Grade:
    available = [t for t in case.required_topics if t not in case.expected_missing_topics]
    lost = [t for t in available if t not in _covered(packet, sources)]
    return Grade(name="required_evidence", passed=not lost,
                 detail=f"not covered: {lost}" if lost else
                 f"all {len(available)} available required topics covered")


def missing_evidence(case: LabCase, sources: dict[str, LabSource], packet: Packet) -> Grade:
    actual, expected = sorted(packet.missing_topics), sorted(case.expected_missing_topics)
    problems = []
    if actual != expected:
        problems.append(f"missing_topics={actual}, expected={expected}")
    if packet.status == "ready":
        notices = [m.text[m.text.index(MISSING_EVIDENCE_HEADING):] for m in packet.messages
                   if MISSING_EVIDENCE_HEADING in m.text]
        unnamed = [t for t in packet.missing_topics if not any(t in n for n in notices)]
        if unnamed:
            problems.append(f"missing topics not named under {MISSING_EVIDENCE_HEADING}: "
                            f"{unnamed}")
    elif packet.manifest is None:
        problems.append("blocked without a sealed manifest")
    return Grade(name="missing_evidence", passed=not problems,
                 detail="; ".join(problems) or f"missing_topics={actual} as expected")


def forbidden_sources(case: LabCase, sources: dict[str, LabSource], packet: Packet) -> Grade:
    ids = set(packet.selected_ids)
    bad = sorted(ids & set(case.forbidden_source_ids))
    untrusted = sorted(i for i in ids if i in sources and sources[i].trust == "untrusted")
    visible = packet.visible_text() + "\n" + packet.rendered_context
    leaked = [t for t in case.forbidden_text if t in visible]
    problems = []
    if bad:
        problems.append(f"forbidden selected: {bad}")
    if untrusted:
        problems.append(f"lab-untrusted sources admitted: {untrusted}")
    if leaked:
        problems.append(f"forbidden text visible: {leaked}")
    return Grade(name="forbidden_sources", passed=not problems,
                 detail="; ".join(problems) or "no forbidden source or text exposed")


def relevance(case: LabCase, sources: dict[str, LabSource], packet: Packet) -> Grade:
    required = set(case.required_topics)
    off = [s.id for s in packet.selected
           if s.id not in sources or not set(sources[s.id].topics) & required]
    return Grade(name="relevance", passed=not off,
                 detail=f"irrelevant selected: {off}" if off else
                 "every selected source covers a required topic")


def budget(case: LabCase, sources: dict[str, LabSource], packet: Packet) -> Grade:
    summed = sum(s.tokens for s in packet.selected)
    ok = packet.budget_used <= packet.budget_limit and summed <= packet.budget_limit
    return Grade(name="budget", passed=ok,
                 detail=f"used={packet.budget_used}, blocks={summed}, "
                        f"limit={packet.budget_limit}")


def traceability(case: LabCase, sources: dict[str, LabSource], packet: Packet) -> Grade:
    problems = [f"{s.id} lacks {f}" for s in packet.selected
                for f in ("locator", "updated_at", "content_hash") if not getattr(s, f)]
    if not packet.fingerprint:
        problems.append("packet has no fingerprint")
    if packet.manifest is not None and not packet.manifest.manifest_id:
        problems.append("manifest reference has no id")
    visible = packet.visible_text()
    lost = [t for t in case.retained_text if t not in visible]
    if lost and packet.status == "ready":
        problems.append(f"not retained in the model input: {lost}")
    return Grade(name="traceability", passed=not problems,
                 detail="; ".join(problems) or "sources, fingerprint and retained refs intact")


def expected_exclusions(case: LabCase, sources: dict[str, LabSource], packet: Packet) -> Grade:
    if not case.expected_excluded:
        return Grade(name="expected_exclusions", passed=True, detail="none stated",
                     applicable=False)
    got = {e.id: e.reason for e in packet.excluded}
    wrong = [f"{sid}: expected {want.value}, got {got.get(sid, 'not excluded')}"
             for sid, want in case.expected_excluded.items() if got.get(sid) != want.value]
    return Grade(name="expected_exclusions", passed=not wrong,
                 detail="; ".join(wrong) or f"{len(case.expected_excluded)} exclusions as stated")


def tool_pairing(case: LabCase, sources: dict[str, LabSource], packet: Packet) -> Grade:
    calls = [e for e in packet.tool_events if e.kind == "call"]
    results = [e for e in packet.tool_events if e.kind == "result"]
    recorded = {(a.type, a.call_id) for a in packet.anomalies}
    problems = [f"repair {a.type.value} of {a.call_id} not recorded"
                for a in case.expected_anomalies if (a.type.value, a.call_id) not in recorded]
    if not calls and not results:
        return Grade(name="tool_pairing", passed=not problems,
                     detail="; ".join(problems) or "no tool exchange visible")
    call_count = Counter(e.call_id for e in calls)
    result_count = Counter(e.call_id for e in results)
    problems += [f"call {c} issued {n} times" for c, n in call_count.items() if n > 1]
    problems += [f"call {c} has {result_count[c]} results" for c in call_count
                 if result_count[c] != 1]
    problems += [f"orphan result {c}" for c in result_count if c not in call_count]
    result_messages = {e.message for e in results}
    first_call: dict[str, int] = {}
    for e in calls:
        first_call.setdefault(e.call_id, e.message)
    for e in results:
        start = first_call.get(e.call_id)
        if start is None:
            continue
        between = range(start + 1, e.message)
        if e.message <= start or any(m not in result_messages for m in between):
            problems.append(f"result {e.call_id} is not adjacent to its call")
    return Grade(name="tool_pairing", passed=not problems,
                 detail="; ".join(problems) or f"{len(calls)} calls, each with one adjacent result")


def _untrusted_lines(case: LabCase, sources: dict[str, LabSource]) -> list[tuple[str, str]]:
    texts = [(sid, sources[sid].content) for sid in case.candidate_source_ids
             if is_untrusted(sources[sid])]
    texts += [(f"tool:{e.call_id}", e.content) for e in case.tool_history if e.type == "result"]
    return [(origin, line.strip()) for origin, text in texts for line in text.splitlines()
            if len(line.strip()) >= MIN_SIGNATURE]


def trust_zone(case: LabCase, sources: dict[str, LabSource], packet: Packet) -> Grade:
    signatures = _untrusted_lines(case, sources)
    problems: list[str] = []
    for index, message in enumerate(packet.messages):
        outside = message.text if message.role == "system" else outside_data_blocks(message.text)
        for origin, line in signatures:
            if line in outside:
                where = "a system message" if message.role == "system" else "outside data blocks"
                problems.append(f"text of {origin} in {where} (message {index})")
    problems = sorted(set(problems))
    return Grade(name="trust_zone", passed=not problems,
                 detail="; ".join(problems) or "untrusted text only inside data blocks")


def manifest_complete(case: LabCase, sources: dict[str, LabSource], packet: Packet) -> Grade:
    problems = []
    selected = Counter(packet.selected_ids)
    excluded = Counter(e.id for e in packet.excluded)
    outcome = {a.id: a.outcome for a in packet.acquisitions}
    for sid in case.candidate_source_ids:
        if sid not in outcome:
            problems.append(f"{sid}: no acquisition outcome")
            continue
        placed = selected[sid] + excluded[sid]
        if outcome[sid] == "retrieved" and placed != 1:
            problems.append(f"{sid}: selected {selected[sid]}x, excluded {excluded[sid]}x")
        if outcome[sid] != "retrieved" and excluded[sid]:
            problems.append(f"{sid}: {outcome[sid]} disguised as an exclusion")
    problems += [f"{e.id}: excluded without a reason" for e in packet.excluded if not e.reason]
    m = packet.manifest
    if m is not None:
        if m.status != packet.status:
            problems.append(f"manifest status {m.status} != packet status {packet.status}")
        if m.status == "ready" and not (m.assembly_input_hash and m.serialized_model_input_hash):
            problems.append("ready manifest lacks an input hash")
        if m.status == "ready" and m.blocked_reason:
            problems.append("ready manifest has a blocked_reason")
        if m.status == "blocked" and (not m.blocked_reason or m.assembly_input_hash
                                      or m.serialized_model_input_hash):
            problems.append("blocked manifest needs a reason and no input hashes")
    return Grade(name="manifest_complete", passed=not problems,
                 detail="; ".join(problems) or
                 f"{len(case.candidate_source_ids)} candidates accounted for")


GRADERS: tuple[Grader, ...] = (
    required_evidence, missing_evidence, forbidden_sources, relevance, budget, traceability,
    expected_exclusions, tool_pairing, trust_zone, manifest_complete,
)
GRADER_NAMES: tuple[str, ...] = tuple(g.__name__ for g in GRADERS)


def grade_packet(case: LabCase, sources: dict[str, LabSource], packet: Packet) -> list[Grade]:
    return [g(case, sources, packet) for g in GRADERS]
