"""The structure stage for tool history: pairing, security of results, compaction.

Structure is built before any transform (seed 000 §9 invariant 3): calls and results are
paired by ``call_id`` first (``context.tool_history``), then results are screened, and only
then are older exchanges compacted. Decisions recorded here:

* An unsafe repair (the pairing module's ``blocked``) blocks the assembly with
  ``unsafe_tool_repair``; the typed anomalies found so far are still recorded.
* Tool results are untrusted data: secrets are redacted (or, under ``deny``, the whole
  result is withheld with a notice); instruction-like text is flagged in the pair's
  ``security_flags`` and, under ``deny``, withheld. Withholding keeps the pair (an
  exchange is never cut) and is recorded as a ``redact`` transform.
* The newest ``keep_recent`` pairs, extended to whole assistant turns, stay verbatim.
  Older ones are compacted (see ``context.tools.compaction``) when the policy allows
  ``summarize``; otherwise they compete for the tool-pair budget, oldest evicted first.
* Topic coverage by tool results (``context.ranking.coverage``): only a verbatim pair whose
  ``evidence_use`` is ``confirmed_by_policy``, not synthesized and not withheld, and only
  through its result *content* — never its arguments, and for JSON results never its
  topic lists (``missing_topics``), identifiers, citations, reasons or warnings, nor an
  echo of an argument. Diagnostic-only results, placeholders and the history summary
  never cover a topic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from context.budget.allocation import Unit, cost_text
from context.budget.costs import pair_cost
from context.errors import ContextError
from context.items import SourceRef
from context.manifest import AnomalyEntry, SummaryEntry, ToolPairEntry, TransformEntry
from context.ranking.coverage import content_topics
from context.seal.manifest_entries import excluded_after_gates, simple_transform
from context.tokens import TokenCounter
from context.tool_history import PairingResult, ToolPair, pair_tool_history, result_item_id
from context.tools.compaction import compact, pair_item
from context.tools.transforms import PreservationFailed, TransformRecord
from context.vocabulary import BlockedReason, ExclusionReason, Partition, SourceType, Zone

if TYPE_CHECKING:
    from context.assembly.pipeline import Pipeline

PAIR_PREFIX = "pair:"
_PAIR_ORDER_BASE = 1000


def transform_entry(rec: TransformRecord) -> TransformEntry:
    data = rec.model_dump(mode="json")
    return TransformEntry.model_validate(data)


class ToolStage:
    def __init__(self, pipeline: Pipeline) -> None:
        self.p = pipeline
        self.pairing = PairingResult()
        self.pairs: list[ToolPair] = []
        self.verbatim: set[str] = set()
        self.placement: dict[str, str] = {}
        self.flags: dict[str, tuple[str, ...]] = {}
        self.withheld: set[str] = set()

    def run(self) -> None:
        p = self.p
        pol = p.policy.tool_pairs
        self.pairing = pair_tool_history(
            p.req.tool_history, allow_partial_evidence=pol.allow_partial_evidence
        )
        if self.pairing.blocked is not None:
            from context.assembly.pipeline import Blocked

            raise Blocked(BlockedReason.UNSAFE_TOOL_REPAIR, self.pairing.blocked)
        self.pairs = [self._screen(pair) for pair in self.pairing.pairs]
        recent = self._recent_turns(pol.keep_recent)
        older = [x for x in self.pairs if x.call_id not in recent]
        self.verbatim = set(recent)
        allowed = "summarize" in p.policy.transforms.allowed
        if older and pol.compact_older and allowed:
            self._compact(older)
        else:
            self.verbatim |= {x.call_id for x in older}
        for x in self.pairs:
            self.placement.setdefault(x.call_id, "verbatim" if x.call_id in self.verbatim
                                      else "not_placed")
        p.stage(
            "structure",
            f"{len(self.pairs)} tool pairs, {len(self.pairing.anomalies)} anomalies, "
            f"{len(older) if older and pol.compact_older and allowed else 0} compacted",
        )

    def _screen(self, pair: ToolPair) -> ToolPair:
        if pair.synthesized:
            return pair
        p, sec = self.p, self.p.policy.security
        secrets, flags = p.runner.detector.assess(pair.result_hash, pair.result.content)
        if flags:
            self.flags[pair.call_id] = flags
        content = pair.result.content
        why = ""
        if secrets is not None:
            if sec.secret_material == "deny":
                why = f"secret material {list(secrets.kinds)}"
            else:
                content = secrets.redacted
        if flags and sec.external_instruction_text == "deny":
            why = why or f"instruction-like text {list(flags)}"
        if why:
            self.withheld.add(pair.call_id)
            content = (
                f"[RESULT WITHHELD by security policy: {why}. The outcome of call "
                f"{pair.call_id} is not available; do not assume it succeeded.]"
            )
        if content == pair.result.content:
            return pair
        result = pair.result.model_copy(update={"content": content})
        new = pair.model_copy(update={"result": result})
        before = pair_item(pair, p.req.scope)
        after = pair_item(new, p.req.scope)
        rec = simple_transform(
            record_id=f"transform-redact-{result_item_id(pair.call_id)}", kind="redact",
            before=before, after=after,
            objective="withhold_tool_result" if why else "remove_secret_material",
            policy_version=p.policy.version_label, transformer_version="secret-redactor/v1",
            assertions={"secrets_removed": "passed" if p.runner.detector.scan_secrets(content)
                        is None else "failed", "pair_kept_whole": "passed"},
            tokens_before=None, tokens_after=None,
        )
        p.transforms.append(rec)
        return new

    def _recent_turns(self, keep: int) -> list[str]:
        turns: list[list[ToolPair]] = []
        for x in self.pairs:
            if turns and turns[-1][0].turn == x.turn:
                turns[-1].append(x)
            else:
                turns.append([x])
        kept: list[str] = []
        for group in reversed(turns):
            if len(kept) >= keep:
                break
            kept += [x.call_id for x in group]
        return kept

    def _compact(self, older: list[ToolPair]) -> None:
        from context.assembly.pipeline import Blocked

        p = self.p
        checkpoints = [a for a in p.admitted.values()
                       if a.item.source_type is SourceType.CHECKPOINT]
        checkpoints.sort(key=lambda a: a.item.item_id)
        try:
            item, rec = compact(
                older, [a.item for a in checkpoints], scope=p.req.scope, step_id=p.req.step_id,
                objective="restore_current_research_state",
                policy_version=p.policy.version_label, preserve=p.policy.transforms.preserve,
                counter=p.counter,
            )
        except PreservationFailed as exc:
            p.transforms.append(transform_entry(exc.record))
            for a in checkpoints:
                p.exclude(a, ExclusionReason.TRANSFORM_BLOCKED, "compaction", str(exc))
            raise Blocked(BlockedReason.TRANSFORM_BLOCKED, str(exc)) from None
        except ContextError as exc:
            raise Blocked(BlockedReason.TRANSFORM_BLOCKED, f"compaction failed: {exc}") from None
        # cite what the summary stands for (its inputs are the compacted calls)
        item = item.model_copy(update={"source_ref": SourceRef(
            locator=f"tool-history:{older[0].call_id}..{older[-1].call_id}")})
        p.transforms.append(transform_entry(rec))
        p.summaries.append(SummaryEntry(
            summary_id=item.item_id, input_item_ids=list(rec.input_item_ids),
            input_range=rec.input_range, input_digest=rec.input_digest,
            transform_record_id=rec.record_id,
            preservation_assertions=dict(rec.preservation_assertions),
        ))
        for a in checkpoints:
            p.exclude(a, ExclusionReason.SUPERSEDED, "compaction",
                      "folded into the history summary", superseded_by=item.item_id)
        out = p.runner.run(item)  # re-admitted like any other item: no inherited pass
        if not out.passed:
            p.excluded.append(
                excluded_after_gates(item, out, out.reason or ExclusionReason.HARD_GATE_REJECTED,
                                     "compaction", out.detail)
            )
            raise Blocked(BlockedReason.TRANSFORM_BLOCKED,
                          f"history summary failed re-admission: {out.detail}")
        a = p.admit(out, item, "compacted_tool_history")
        a.partition = Partition.RECENT_TOOL_PAIRS
        a.transform_ids.append(rec.record_id)
        for x in older:
            self.placement[x.call_id] = "compacted"

    # -- budget & render helpers ------------------------------------------------------
    def units(self, counter: TokenCounter) -> list[Unit]:
        placed = [x for x in self.pairs if x.call_id in self.verbatim]
        out: list[Unit] = []
        seen_turns: set[int] = set()
        for x in placed:
            first = x.turn not in seen_turns
            seen_turns.add(x.turn)
            flags = ("instruction_like_text",) if x.call_id in self.flags else ()
            cost = pair_cost(counter, x, flags, first)
            out.append(Unit(PAIR_PREFIX + x.call_id, Partition.RECENT_TOOL_PAIRS, cost, 0))
        n = len(out)
        # newest first: the budget keeps a contiguous recent tail
        return [Unit(u.unit_id, u.partition, u.cost, _PAIR_ORDER_BASE + n - i)
                for i, u in enumerate(out)]

    def evict(self, unit: Unit, detail: str) -> None:
        call_id = unit.unit_id.removeprefix(PAIR_PREFIX)
        pair = next((x for x in self.pairs if x.call_id == call_id), None)
        if pair is None or call_id not in self.verbatim:
            return
        self.verbatim.discard(call_id)
        self.placement[call_id] = "evicted"
        self.p.excluded.append(excluded_after_gates(
            pair_item(pair, self.p.req.scope), None, ExclusionReason.BUDGET_EVICTED, "budget",
            f"whole tool exchange evicted: {detail} ({cost_text(unit)})",
        ))

    def render_pairs(self) -> list[ToolPair]:
        return [x for x in self.pairs if x.call_id in self.verbatim]

    def covered_topics(self) -> set[str]:
        topics = self.p.req.required_topics
        found: set[str] = set()
        for x in self.render_pairs():
            if (x.evidence_use != "confirmed_by_policy" or x.synthesized
                    or x.call_id in self.withheld):
                continue
            found.update(content_topics(x.result.content, x.call.arguments, topics))
        return found

    def entries(self) -> tuple[list[ToolPairEntry], list[AnomalyEntry]]:
        pairs = [
            ToolPairEntry(
                **x.model_dump(mode="json"), placement=self.placement.get(x.call_id, "not_placed"),
                security_flags=list(self.flags.get(x.call_id, ())),
            )
            for x in self.pairs
        ]
        anomalies = [AnomalyEntry(**a.model_dump(mode="json")) for a in self.pairing.anomalies]
        return pairs, anomalies

    def partition_of(self) -> dict[str, Partition]:
        return {result_item_id(x.call_id): Partition.RECENT_TOOL_PAIRS for x in self.pairs}

    def zone(self) -> Zone:
        return Zone.DATA
