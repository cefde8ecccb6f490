"""The research-log layout: older tool exchanges as one line per call, folded at fixed turns.

A provider caches a request's *prefix*: everything after the first changed byte is paid in
full (docs/context-engine.md#order-for-the-prompt-cache). With ``tool_pairs.fold_every``
= K > 0 the tool stage lays the history out so that it only grows at its tail:

* **verbatim**: the last turn's exchanges (``keep_recent`` pairs extended to whole turns),
  plus every result a *pending* note cites — a note call whose result is not a success
  (refused, or still unknown), which the model may have to make again from those lines;
* **log**: every other exchange after the last fold boundary, one line per call, one data
  block per turn (``research-log:t<turn>``): a turn's block never changes once written, so
  consecutive requests share everything up to the newest line;
* **fold**: every exchange at or before the boundary — the highest multiple of K below
  the newest turn — as one block per K turns (``research-fold:<first>..<last>``), never
  rewritten once written: the calls as id
  ranges, the queries searched per source and the line ranges read (so a folded search
  is not made again), the accepted notes by topic, each with its claim (clipped) and its
  full citation. Every K turns the last K turns' log blocks become one more fold block.

A line keeps what finds the exchange again and what the model acted on: the call id, the
tool, its arguments (long strings clipped; a note's citations never: source@revision,
path, lines and the call it cites) and the outcome. The result bodies stay in the store,
each resolvable by its call id.

Like compaction, this is a transform with preservation assertions, checked against the
inputs (``check_fold``), never taken from the renderer's word:

* ``note_citations_verbatim``: every accepted note's citations appear verbatim in the log
  or the fold (or the note is itself verbatim); a fold block states each cited source's
  commit once (``Commits: source@revision``) and its citations as
  ``source:path#La-Lb via <call id>`` — complete only together with that line;
* ``call_ids_exactly_once``: every call id is in exactly one place — verbatim, a log line,
  or a folded range;
* ``pending_citations_verbatim``: every result a pending note cites stays verbatim.

A failed assertion raises ``PreservationFailed`` and the engine blocks with
``transform_blocked``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from context.items import ContextItem, LineageNode, ScopeRef, SourceRef, sha256_text
from context.tokens import TokenCounter
from context.tool_history import ToolPair, result_item_id
from context.tools.compaction import ref_from_args
from context.tools.pairing import recent_call_ids
from context.tools.transforms import Assertion, PreservationFailed, TransformRecord
from context.vocabulary import Completeness, Role, SourceType, ToolStatus, Trust

__all__ = ["FOLD_PREFIX", "LOG_PREFIX", "FoldPlan", "check_fold", "citation_text", "fold_items",
           "is_note_call", "log_line", "plan_fold", "short_citation"]

FOLD_VERSION = "research-log/v1"
FOLD_PREFIX = "research-fold:"
LOG_PREFIX = "research-log:"
#: a string argument is shown up to this many characters on its log line
MAX_ARG_CHARS = 120
#: a note's claim is shown up to this many characters in a fold (its citation in full)
FOLD_CLAIM_CHARS = 80
#: a fold block's line naming each cited source's commit once
COMMITS_PREFIX = "Commits: "
FOLD_HEADER = "Research log folded: "
_CALL = re.compile(r"^(?P<stem>.*?)(?P<n>\d+)$")


@dataclass(frozen=True)
class FoldPlan:
    """Where each pair sits: verbatim, logged (by turn) or folded."""

    verbatim: tuple[str, ...] = ()
    logged: tuple[ToolPair, ...] = ()
    folded: tuple[ToolPair, ...] = ()
    boundary: int = 0
    pending_cited: frozenset[str] = field(default_factory=frozenset)
    #: the fold period K: the folded pairs make one block per K turns
    every: int = 0

    def periods(self) -> list[tuple[ToolPair, ...]]:
        """The folded pairs, one group per K turns (each a block of its own)."""
        groups: dict[int, list[ToolPair]] = {}
        for p in self.folded:
            groups.setdefault((p.turn - 1) // self.every if self.every > 0 else 0, []).append(p)
        return [tuple(g) for _k, g in sorted(groups.items())]


def _citations(pair: ToolPair) -> list[Mapping[str, Any]]:
    raw = pair.call.arguments.get("citations")
    return [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else []


def short_citation(citation: Mapping[str, Any]) -> str:
    """``source:path#La-Lb via <call id>``: a citation in a fold block that states its
    source's commit once (``Commits:``)."""
    return (f"{citation.get('source')}:{citation.get('path')}"
            f"#L{citation.get('start_line')}-L{citation.get('end_line')} "
            f"via {citation.get('call_id')}")


def citation_text(citation: Mapping[str, Any]) -> str:
    """``source@revision:path#La-Lb via <call id>``: a note citation as every line shows it."""
    return (f"{citation.get('source')}@{citation.get('revision')}:{citation.get('path')}"
            f"#L{citation.get('start_line')}-L{citation.get('end_line')} "
            f"via {citation.get('call_id')}")


def is_note_call(pair: ToolPair) -> bool:
    """A call that notes a finding (it carries citations), accepted or not."""
    return bool(_citations(pair))


def _accepted_note(pair: ToolPair) -> bool:
    return bool(_citations(pair)) and pair.status is ToolStatus.SUCCESS and not pair.synthesized


def _pending_note(pair: ToolPair) -> bool:
    return bool(_citations(pair)) and not _accepted_note(pair)


def plan_fold(pairs: Sequence[ToolPair], keep: int, every: int) -> FoldPlan:
    """Which pairs stay verbatim, which are logged and which are folded (``every`` > 0)."""
    verbatim = list(recent_call_ids(pairs, keep))
    pending_cited = frozenset(str(c.get("call_id")) for p in pairs if _pending_note(p)
                              for c in _citations(p))
    verbatim += [p.call_id for p in pairs if p.call_id in pending_cited
                 and p.call_id not in verbatim]
    keep_ids = set(verbatim)
    newest = max((p.turn for p in pairs), default=0)
    boundary = (newest - 1) // every * every if every > 0 and newest else 0
    older = [p for p in pairs if p.call_id not in keep_ids]
    return FoldPlan(
        verbatim=tuple(p.call_id for p in pairs if p.call_id in keep_ids),
        logged=tuple(p for p in older if p.turn > boundary),
        folded=tuple(p for p in older if p.turn <= boundary),
        boundary=boundary, pending_cited=pending_cited, every=every)


def _clip(value: Any, limit: int = MAX_ARG_CHARS) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit - 1] + "…"
    if isinstance(value, list):
        return [_clip(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: _clip(v, limit) for k, v in value.items()}
    return value


def hit_count(pair: ToolPair) -> int | None:
    """A successful result's own ``hit_count`` (a search's), when it states one: whether
    the results a log line stands for held anything worth asking for again."""
    if pair.synthesized or pair.status is not ToolStatus.SUCCESS:
        return None
    try:
        body = json.loads(pair.result.content)
    except ValueError:
        return None
    count = body.get("hit_count") if isinstance(body, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def log_line(pair: ToolPair) -> str:
    """``<call id> <tool> <arguments> -> <status> [(N hits)]``; a note's citations in
    full."""
    args = {k: v for k, v in pair.call.arguments.items() if k != "citations"}
    shown = json.dumps(_clip(args), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    cites = "; ".join(citation_text(c) for c in _citations(pair))
    status = "unknown (no result)" if pair.synthesized else pair.status.value
    hits = hit_count(pair)
    ref = arguments_ref(pair)
    return (f"{pair.call_id} {pair.tool_name} {shown}"
            + (f" cites {cites}" if cites else "") + (f" ref {ref}" if ref else "")
            + f" -> {status}" + (f" ({hits} hits)" if hits is not None else ""))


def arguments_ref(pair: ToolPair) -> str | None:
    """The source reference a call's arguments name with a line range
    (``repo@commit:path#La-Lb``, as the history summary states it), kept with the call:
    the policy's ``preserve: source_refs``."""
    ref = ref_from_args(dict(pair.call.arguments)).citation()
    return ref if "#L" in ref else None


def _ranges(ids: Sequence[str]) -> list[str]:
    """Consecutive call ids of one turn (``t0003-1``, ``t0003-2``) as ``first..last``, in
    call order; ids are listed as issued, so the fold states each exactly once."""
    out: list[list[str]] = []
    for call_id in ids:
        m, last = _CALL.match(call_id), out[-1][-1] if out else None
        lm = _CALL.match(last) if last else None
        if m and lm and m.group("stem") == lm.group("stem") \
                and int(m.group("n")) == int(lm.group("n")) + 1:
            out[-1].append(call_id)
        else:
            out.append([call_id])
    return [run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}" for run in out]


def fold_text(folded: Sequence[ToolPair]) -> str:
    """The fold: every call as id ranges (failed calls named), accepted notes by topic."""
    lines = [f"{FOLD_HEADER}{len(folded)} calls {folded[0].call_id} .. "
             f"{folded[-1].call_id} (each exchange is stored under its call id)",
             "Calls: " + ", ".join(_ranges([p.call_id for p in folded]))]
    failed = [f"{p.call_id} {p.tool_name} {p.status.value}" for p in folded
              if p.status is not ToolStatus.SUCCESS or p.synthesized]
    if failed:
        lines.append("Not successful: " + ", ".join(failed))
    searched: dict[str, list[str]] = {}
    read: dict[str, list[str]] = {}
    for p in folded:
        args = p.call.arguments
        if p.tool_name == "search" and p.status is ToolStatus.SUCCESS and not p.synthesized:
            queries = searched.setdefault(str(args.get("source")), [])
            entry = json.dumps(_clip(str(args.get("query"))), ensure_ascii=False) + (
                f" ({hits} hits)" if (hits := hit_count(p)) is not None else "")
            if entry not in queries:
                queries.append(entry)
        elif p.tool_name == "read" and p.status is ToolStatus.SUCCESS and not p.synthesized:
            ranges = read.setdefault(f"{args.get('source')}:{args.get('path')}", [])
            if (span := f"L{args.get('start_line')}-L{args.get('end_line')}") not in ranges:
                ranges.append(span)
    # what was searched and read, so a folded search is not made again (the results
    # themselves stay in the store under their call ids)
    lines += [f"Searched in {source}: " + " | ".join(queries)
              for source, queries in searched.items()]
    refs = [ref for p in folded if (ref := arguments_ref(p))]
    if refs:
        lines.append("Refs: " + ", ".join(dict.fromkeys(refs)))
    # the ranges read, per file (the file named once)
    lines += [f"Read {where}: {', '.join(ranges)}" for where, ranges in read.items()]
    # each source's commit once per block (40 hex digits a note otherwise); a citation of
    # another revision of it (a refreshed source) keeps its own
    commits: dict[str, str] = {}
    for p in folded:
        if _accepted_note(p):
            for c in _citations(p):
                commits.setdefault(str(c.get("source")), str(c.get("revision")))

    def cited(c: Mapping[str, Any]) -> str:
        same = commits.get(str(c.get("source"))) == str(c.get("revision"))
        return short_citation(c) if same else citation_text(c)

    by_topic: dict[str, list[str]] = {}
    for p in folded:
        if _accepted_note(p):
            topic = str(p.call.arguments.get("topic", "-"))
            claim = json.dumps(_clip(str(p.call.arguments.get("claim", "")), FOLD_CLAIM_CHARS),
                               ensure_ascii=False)
            by_topic.setdefault(topic, []).append(
                f"{p.call_id} {claim} ({'; '.join(cited(c) for c in _citations(p))})")
    if commits:
        lines.append(COMMITS_PREFIX + ", ".join(f"{k}@{v}" for k, v in commits.items()))
    if by_topic:
        lines.append("Notes by topic:")
        # a line per note: a claim may hold any punctuation
        lines += [f"- {topic}: {note}" for topic, notes in by_topic.items() for note in notes]
    return "\n".join(lines)


def _expand(text: str, order: Sequence[str]) -> list[str]:
    """Every call id the folds' ``Calls:`` lines name, ranges expanded along ``order``."""
    position = {cid: i for i, cid in enumerate(order)}
    parts = [part for ln in text.split("\n") if ln.startswith("Calls: ")
             for part in ln.removeprefix("Calls: ").split(", ")]
    found: list[str] = []
    for part in parts:
        first, _, last = part.partition("..")
        if not first:
            continue
        if last and first in position and last in position:
            found += list(order[position[first]:position[last] + 1])
        else:
            found.append(first)
    return found


def check_fold(pairs: Sequence[ToolPair], verbatim: Sequence[str], logs: Mapping[int, str],
               fold: str | None) -> dict[str, Assertion]:
    """The three preservation assertions, against the inputs (see the module docstring)."""
    order = [p.call_id for p in pairs]
    places: dict[str, int] = {cid: 0 for cid in order}
    for cid in verbatim:
        places[cid] = places.get(cid, 0) + 1
    for text in logs.values():
        for line in text.split("\n"):
            if line:
                cid = line.split(" ", 1)[0]
                places[cid] = places.get(cid, 0) + 1
    for cid in _expand(fold, order) if fold else []:
        places[cid] = places.get(cid, 0) + 1
    shown = "\n".join([*logs.values(), fold or ""])
    kept = set(verbatim)
    blocks = [FOLD_HEADER + b for b in (fold or "").split(FOLD_HEADER) if b]

    def stated(c: Mapping[str, Any]) -> bool:
        if citation_text(c) in shown:
            return True
        # the short form, in a block whose ``Commits:`` line names the source's commit
        commit = f"{c.get('source')}@{c.get('revision')}"
        return any(short_citation(c) in b and any(
            line.startswith(COMMITS_PREFIX) and commit in line.removeprefix(
                COMMITS_PREFIX).split(", ") for line in b.split("\n")) for b in blocks)

    cites_ok = all(p.call_id in kept or stated(c)
                   for p in pairs if _accepted_note(p) for c in _citations(p))
    pending = {str(c.get("call_id")) for p in pairs if _pending_note(p) for c in _citations(p)}
    known = set(order)

    def ok(flag: bool) -> Assertion:
        return "passed" if flag else "failed"

    return {
        "note_citations_verbatim": ok(cites_ok),
        "call_ids_exactly_once": ok(all(n == 1 for n in places.values())
                                    and set(places) == known),
        "pending_citations_verbatim": ok(all(cid in kept for cid in pending if cid in known)),
    }


def _item(item_id: str, text: str, pairs: Sequence[ToolPair], scope: ScopeRef,
          counter: TokenCounter, rec_id: str) -> ContextItem:
    digest = sha256_text(text)
    return ContextItem.build(
        item_id=item_id, source_type=SourceType.MODEL_SUMMARY, producer=FOLD_VERSION,
        content=text, content_hash=digest, scope=scope,
        # tool output it stands for is untrusted data: a log never ranks above it
        trust=Trust.UNTRUSTED_EXTERNAL_DATA, intended_role=Role.UNTRUSTED_DATA,
        completeness=Completeness.SUMMARY, estimated_tokens=counter.count_text(text),
        # the only place its calls and notes are stated: a budget that cannot hold it
        # blocks the assembly (required_evidence_missing), it is never dropped silently
        required=True,
        source_ref=SourceRef(locator=f"tool-history:{pairs[0].call_id}..{pairs[-1].call_id}"),
        source_lineage=(
            *(LineageNode(node_id=result_item_id(p.call_id), type=str(SourceType.TOOL_RESULT),
                          digest=p.result_hash) for p in pairs),
            LineageNode(node_id=item_id, type="summarize",
                        input_node_ids=tuple(result_item_id(p.call_id) for p in pairs),
                        digest=digest)),
        metadata={"transform_record_id": rec_id},
    )


def _record(rec_id: str, item: ContextItem, pairs: Sequence[ToolPair], objective: str,
            policy_version: str, assertions: dict[str, Assertion],
            counter: TokenCounter) -> TransformRecord:
    inputs = tuple(result_item_id(p.call_id) for p in pairs)
    digest = "sha256:" + hashlib.sha256(json.dumps(
        [[p.call_id, p.canonical_argument_hash, p.result_hash] for p in pairs]
    ).encode("utf-8")).hexdigest()
    return TransformRecord(
        record_id=rec_id, type="summarize", input_item_ids=inputs,
        input_range={"start_item_id": inputs[0], "end_item_id": inputs[-1]},
        input_digest=digest, objective=objective, policy_version=policy_version,
        transformer_version=FOLD_VERSION, output_item_id=item.item_id,
        output_digest=item.content_hash, preservation_assertions=assertions,
        token_estimate_before=sum(counter.count_text(p.result.content) for p in pairs),
        token_estimate_after=counter.count_text(item.content),
        trust_before=str(Trust.UNTRUSTED_EXTERNAL_DATA),
        trust_after=str(Trust.UNTRUSTED_EXTERNAL_DATA))


def fold_items(pairs: Sequence[ToolPair], plan: FoldPlan, *, scope: ScopeRef,
               policy_version: str, counter: TokenCounter
               ) -> list[tuple[ContextItem, TransformRecord]]:
    """The fold block (if anything is folded) and one log block per turn, each with its
    transform record; ``PreservationFailed`` when the layout loses what it must keep."""
    turns: dict[int, list[ToolPair]] = {}
    for p in plan.logged:
        turns.setdefault(p.turn, []).append(p)
    logs = {turn: "\n".join(log_line(p) for p in group) for turn, group in turns.items()}
    periods = plan.periods()
    folds = [fold_text(group) for group in periods]
    assertions = check_fold(pairs, plan.verbatim, logs, "\n".join(folds) if folds else None)
    out: list[tuple[ContextItem, TransformRecord]] = []
    for period, text in zip(periods, folds, strict=True):
        # one block per K turns, named by the range it stands for: once written it is never
        # rewritten, so a fold boundary rewrites only the last K turns' log blocks
        fold_id = f"{FOLD_PREFIX}{period[0].call_id}..{period[-1].call_id}"[:200]
        rec_id = f"transform-fold-{period[0].call_id}..{period[-1].call_id}"[:200]
        item = _item(fold_id, text, period, scope, counter, rec_id)
        out.append((item, _record(rec_id, item, period, "fold_research_log",
                                  policy_version, assertions, counter)))
    for turn, group in sorted(turns.items()):
        log_id = f"{LOG_PREFIX}t{turn:04d}"
        rec_id = f"transform-log-t{turn:04d}"
        item = _item(log_id, logs[turn], group, scope, counter, rec_id)
        out.append((item, _record(rec_id, item, group, "research_log_lines",
                                  policy_version, assertions, counter)))
    failed = next((rec for _i, rec in out if not rec.passed), None)
    if failed is None and any(v != "passed" for v in assertions.values()):
        failed = TransformRecord(
            record_id="transform-fold-check", type="summarize",
            input_item_ids=tuple(result_item_id(p.call_id) for p in pairs) or ("none",),
            input_digest="sha256:" + "0" * 64, objective="fold_research_log",
            policy_version=policy_version, transformer_version=FOLD_VERSION,
            output_item_id=None, output_digest="sha256:" + "0" * 64,
            preservation_assertions=assertions, token_estimate_before=0,
            token_estimate_after=0, trust_before=str(Trust.UNTRUSTED_EXTERNAL_DATA),
            trust_after=str(Trust.UNTRUSTED_EXTERNAL_DATA))
    if failed is not None:
        raise PreservationFailed(failed)
    return out
