"""The structure stage for tool history: pairing, security of results, compaction.

Structure is built before any transform
(docs/context-engine.md#invariant-3-structure-before-transforms): calls and results are paired
by ``call_id`` first (``context.tool_history``), then results are screened, and only then are
older exchanges compacted. Decisions recorded here:

* An unsafe repair (the pairing module's ``blocked``) blocks the assembly with
  ``unsafe_tool_repair``; the typed anomalies found so far are still recorded.
* Tool results are untrusted data: secrets are redacted (or, under ``deny``, the whole
  result is withheld with a notice); instruction-like text is flagged in the pair's
  ``security_flags`` and, under ``deny``, withheld. Withholding keeps the pair (an
  exchange is never cut) and is recorded as a ``redact`` transform.
* Tool *calls'* arguments are screened for secrets too (a token in a repository URL the
  model or a source spec put there would otherwise go back to the provider every turn):
  redacted, or under ``deny`` replaced by a notice, as a ``redact`` transform of
  ``tool-call:<call_id>``. Every secret found in a pair is in its ``security_flags`` as
  ``secret_material:<kind>@<where>`` (``result`` or ``arguments.<key>…``), never the value.
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

import json
import re

from context.admission.gates import GateRunner
from context.assembly.state import AssemblyState, Blocked
from context.budget.allocation import Unit, cost_text
from context.budget.costs import pair_cost
from context.errors import ContextError
from context.items import SourceRef
from context.manifest import AnomalyEntry, SummaryEntry, ToolPairEntry, TransformEntry
from context.manifest_entries import excluded_after_gates, simple_transform
from context.ranking.coverage import content_topics
from context.ranking.loading import load_mode_for
from context.tokens import TokenCounter
from context.tool_history import (
    PairingResult,
    ToolAnomaly,
    ToolPair,
    canonical_argument_hash,
    result_item_id,
)
from context.tools.aging import aged, folds_history
from context.tools.compaction import compact, pair_item
from context.tools.fold import fold_items, is_note_call, plan_fold
from context.tools.pairing import pair_tool_history
from context.tools.transforms import PreservationFailed, TransformRecord
from context.vocabulary import (
    INSTRUCTION_FLAG,
    SECRET_FLAG,
    AnomalyType,
    BlockedReason,
    ExclusionReason,
    Partition,
    SourceType,
    ToolStatus,
    Trust,
    Zone,
)

PAIR_PREFIX = "pair:"
_ERROR_KIND = re.compile(r"[a-z_]{1,40}")
_PAIR_ORDER_BASE = 1000


def failed_call(pair: ToolPair) -> ToolAnomaly:
    """A ``tool_call_failed`` entry: the tool and the error's kind, never the result's text
    (docs/context-engine.md#tool-pairing-and-anomalies)."""
    kind = ""
    try:
        content = json.loads(pair.result.content)
    except ValueError:
        content = None
    if isinstance(content, dict) and isinstance(content.get("error"), str) \
            and _ERROR_KIND.fullmatch(content["error"]):
        kind = f": {content['error']}"
    return ToolAnomaly(type=AnomalyType.TOOL_CALL_FAILED, call_id=pair.call_id,
                       detail=f"{pair.tool_name} returned status error{kind}")


def transform_entry(rec: TransformRecord) -> TransformEntry:
    data = rec.model_dump(mode="json")
    return TransformEntry.model_validate(data)


class ToolStage:
    """Pairs, screens and (when the policy allows) compacts the tool history; afterwards
    the budget asks it for its units and the seal stage for the pairs to render."""

    def __init__(self, state: AssemblyState, runner: GateRunner) -> None:
        self.state = state
        self.runner = runner
        self.pairing = PairingResult()
        self.pairs: list[ToolPair] = []
        self.verbatim: set[str] = set()
        self.placement: dict[str, str] = {}
        self.flags: dict[str, tuple[str, ...]] = {}
        self.secrets: dict[str, list[str]] = {}
        self.withheld: set[str] = set()

    def run(self) -> None:
        state = self.state
        pair_policy = state.policy.tool_pairs
        self.pairing = pair_tool_history(
            state.request.tool_history,
            allow_partial_evidence=pair_policy.allow_partial_evidence,
        )
        if self.pairing.blocked is not None:
            raise Blocked(BlockedReason.UNSAFE_TOOL_REPAIR, self.pairing.blocked)
        self.pairs = [self._screen(pair) for pair in self.pairing.pairs]
        failed = tuple(failed_call(pair) for pair in self.pairing.pairs
                       if pair.status is ToolStatus.ERROR and not pair.synthesized)
        if failed:
            self.pairing = self.pairing.model_copy(
                update={"anomalies": (*self.pairing.anomalies, *failed)})
        allowed = "summarize" in state.policy.transforms.allowed
        if folds_history(state.policy):
            older = self._fold(pair_policy.keep_recent, pair_policy.fold_every)
        else:
            older = aged(self.pairs, pair_policy.keep_recent, pair_policy.compact_block)
            aged_ids = {x.call_id for x in older}
            self.verbatim = {x.call_id for x in self.pairs if x.call_id not in aged_ids}
            if older and pair_policy.compact_older and allowed:
                self._compact(older)
            else:
                self.verbatim |= {x.call_id for x in older}
        for x in self.pairs:
            self.placement.setdefault(x.call_id, "verbatim" if x.call_id in self.verbatim
                                      else "not_placed")
        compacted = len(older) if older and pair_policy.compact_older and allowed else 0
        state.stage(
            "structure",
            f"{len(self.pairs)} tool pairs, {len(self.pairing.anomalies)} anomalies, "
            f"{compacted} compacted",
        )

    def _screen(self, pair: ToolPair) -> ToolPair:
        pair = self._screen_arguments(pair)
        if pair.synthesized:
            return pair
        state, security = self.state, self.state.policy.security
        detector = self.runner.detector
        secrets, flags = detector.assess(pair.result_hash, pair.result.content)
        content = pair.result.content
        why = ""
        if secrets is not None:
            self._found(pair.call_id, [("result", kind) for kind in secrets.kinds])
            if security.secret_material == "deny":
                why = f"secret material {list(secrets.kinds)}"
            else:
                content = secrets.redacted
            # the flags quote the text: take them from the redacted copy, as the gates do
            flags = detector.instruction_matches(secrets.redacted)
        if flags:
            self.flags[pair.call_id] = flags
        if flags and security.external_instruction_text == "deny":
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
        before = pair_item(pair, state.request.scope)
        after = pair_item(new, state.request.scope)
        rec = simple_transform(
            record_id=f"transform-redact-{result_item_id(pair.call_id)}", kind="redact",
            before=before, after=after,
            objective="withhold_tool_result" if why else "remove_secret_material",
            policy_version=state.policy.version_label, transformer_version="secret-redactor/v1",
            assertions={"secrets_removed": "passed" if detector.scan_secrets(content)
                        is None else "failed", "pair_kept_whole": "passed"},
            tokens_before=None, tokens_after=None,
        )
        state.transforms.append(rec)
        return new

    def _found(self, call_id: str, findings: list[tuple[str, str]]) -> None:
        """Record secrets found in a pair: kind and location, never the value."""
        self.secrets.setdefault(call_id, []).extend(
            f"{SECRET_FLAG}:{kind}@{where}" for where, kind in findings)

    def _screen_arguments(self, pair: ToolPair) -> ToolPair:
        """The call's arguments are the model's output (or, for an acquisition, the job's
        source spec) and go back to the provider with every later request: secrets in
        them are redacted per policy, or under ``deny`` the arguments are withheld; a
        ``redact`` transform records it (the digests and kinds, never the value)."""
        detector = self.runner.detector
        scan = detector.scan_arguments(pair.canonical_argument_hash, pair.call.arguments)
        if scan is None:
            return pair
        self._found(pair.call_id, list(scan.findings))
        withheld = {"withheld": f"[ARGUMENTS WITHHELD by security policy: secret material "
                                f"{list(scan.kinds)}]"}
        arguments = withheld if self.state.policy.security.secret_material == "deny" \
            else scan.arguments
        after = canonical_argument_hash(pair.tool_name, arguments)
        clean = detector.scan_arguments(after, arguments) is None
        if not clean:
            arguments = withheld
            after = canonical_argument_hash(pair.tool_name, arguments)
        call_item = f"tool-call:{pair.call_id}"
        self.state.transforms.append(TransformEntry(
            record_id=f"transform-redact-{call_item}", type="redact",
            input_item_ids=[call_item], input_digest=pair.canonical_argument_hash,
            objective="withhold_tool_arguments" if arguments is withheld
            else "remove_secret_material",
            policy_version=self.state.policy.version_label,
            transformer_version="secret-redactor/v1", output_item_id=call_item,
            output_digest=after,
            preservation_assertions={"secrets_removed": "passed" if clean else "failed",
                                     "pair_kept_whole": "passed"},
            token_estimate_before=None, token_estimate_after=None,
            trust_before=Trust.UNTRUSTED_EXTERNAL_DATA.value,
            trust_after=Trust.UNTRUSTED_EXTERNAL_DATA.value,
        ))
        call = pair.call.model_copy(update={"arguments": arguments})
        return pair.model_copy(update={"call": call})

    def _fold(self, keep: int, every: int) -> list[ToolPair]:
        """The research-log layout (``context.tools.fold``): the last turn verbatim (and
        what a pending note cites), the rest as log lines since the last fold boundary and
        one fold block before it — each block a transform with its assertions, re-admitted
        through the gates like the history summary. Returns the pairs not verbatim."""
        state = self.state
        plan = plan_fold(self.pairs, keep, every)
        self.verbatim = set(plan.verbatim)
        try:
            built = fold_items(self.pairs, plan, scope=state.request.scope,
                               policy_version=state.policy.version_label,
                               counter=state.counter)
        except PreservationFailed as exc:
            state.transforms.append(transform_entry(exc.record))
            raise Blocked(BlockedReason.TRANSFORM_BLOCKED, str(exc)) from None
        for item, rec in built:
            state.transforms.append(transform_entry(rec))
            state.summaries.append(SummaryEntry(
                summary_id=item.item_id, input_item_ids=list(rec.input_item_ids),
                input_range=rec.input_range, input_digest=rec.input_digest,
                transform_record_id=rec.record_id,
                preservation_assertions=dict(rec.preservation_assertions),
            ))
            out = self.runner.run(item)  # re-admitted like any other item
            if not out.passed:
                state.excluded.append(excluded_after_gates(
                    item, out, out.reason or ExclusionReason.HARD_GATE_REJECTED,
                    "compaction", out.detail))
                raise Blocked(BlockedReason.TRANSFORM_BLOCKED,
                              f"research log failed re-admission: {out.detail}")
            a = state.admit(out, item, load_mode_for(out.item, state.policy),
                            "compacted_tool_history")
            a.partition = Partition.RECENT_TOOL_PAIRS
            a.transform_ids.append(rec.record_id)
        for x in plan.logged:
            self.placement[x.call_id] = "logged"
        for x in plan.folded:
            self.placement[x.call_id] = "folded"
        return [*plan.folded, *plan.logged]

    def _compact(self, older: list[ToolPair]) -> None:
        state = self.state
        checkpoints = [a for a in state.admitted.values()
                       if a.item.source_type is SourceType.CHECKPOINT]
        checkpoints.sort(key=lambda a: a.item.item_id)
        try:
            item, rec = compact(
                older, [a.item for a in checkpoints], scope=state.request.scope,
                step_id=state.request.step_id, objective="restore_current_research_state",
                policy_version=state.policy.version_label,
                preserve=state.policy.transforms.preserve, counter=state.counter,
            )
        except PreservationFailed as exc:
            state.transforms.append(transform_entry(exc.record))
            for a in checkpoints:
                state.exclude(a, ExclusionReason.TRANSFORM_BLOCKED, "compaction", str(exc))
            raise Blocked(BlockedReason.TRANSFORM_BLOCKED, str(exc)) from None
        except ContextError as exc:
            raise Blocked(BlockedReason.TRANSFORM_BLOCKED, f"compaction failed: {exc}") from None
        # cite what the summary stands for (its inputs are the compacted calls)
        item = item.model_copy(update={"source_ref": SourceRef(
            locator=f"tool-history:{older[0].call_id}..{older[-1].call_id}")})
        state.transforms.append(transform_entry(rec))
        state.summaries.append(SummaryEntry(
            summary_id=item.item_id, input_item_ids=list(rec.input_item_ids),
            input_range=rec.input_range, input_digest=rec.input_digest,
            transform_record_id=rec.record_id,
            preservation_assertions=dict(rec.preservation_assertions),
        ))
        for a in checkpoints:
            state.exclude(a, ExclusionReason.SUPERSEDED, "compaction",
                      "folded into the history summary", superseded_by=item.item_id)
        out = self.runner.run(item)  # re-admitted like any other item: no inherited pass
        if not out.passed:
            state.excluded.append(
                excluded_after_gates(item, out, out.reason or ExclusionReason.HARD_GATE_REJECTED,
                                     "compaction", out.detail)
            )
            raise Blocked(BlockedReason.TRANSFORM_BLOCKED,
                          f"history summary failed re-admission: {out.detail}")
        a = state.admit(out, item, load_mode_for(out.item, state.policy),
                        "compacted_tool_history")
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
            flags = (INSTRUCTION_FLAG,) if x.call_id in self.flags else ()
            cost = pair_cost(counter, x, flags, first)
            out.append(Unit(PAIR_PREFIX + x.call_id, Partition.RECENT_TOOL_PAIRS, cost, 0))
        n = len(out)
        # newest first: the budget keeps a contiguous recent tail
        ranked = [Unit(u.unit_id, u.partition, u.cost, _PAIR_ORDER_BASE + n - i)
                  for i, u in enumerate(out)]
        if not folds_history(self.state.policy):
            return ranked
        # under the research log the verbatim turn is the only place an accepted note of
        # that turn is stated (context.tools.fold): a note's exchange, a few tokens, is kept
        # before the turn's reads, so a budget too small for every read drops a read
        notes = {x.call_id for x in placed if is_note_call(x)}
        return [Unit(u.unit_id, u.partition, u.cost, _PAIR_ORDER_BASE - n + i)
                if u.unit_id.removeprefix(PAIR_PREFIX) in notes else u
                for i, u in enumerate(ranked)]

    def evict(self, unit: Unit, detail: str) -> None:
        call_id = unit.unit_id.removeprefix(PAIR_PREFIX)
        pair = next((x for x in self.pairs if x.call_id == call_id), None)
        if pair is None or call_id not in self.verbatim:
            return
        self.verbatim.discard(call_id)
        self.placement[call_id] = "evicted"
        self.state.excluded.append(excluded_after_gates(
            pair_item(pair, self.state.request.scope), None, ExclusionReason.BUDGET_EVICTED,
            "budget",
            f"whole tool exchange evicted: {detail} ({cost_text(unit)})",
        ))

    def render_pairs(self) -> list[ToolPair]:
        return [x for x in self.pairs if x.call_id in self.verbatim]

    def covered_topics(self) -> set[str]:
        topics = self.state.request.required_topics
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
                security_flags=[*self.flags.get(x.call_id, ()),
                                *self.secrets.get(x.call_id, ())],
            )
            for x in self.pairs
        ]
        anomalies = [AnomalyEntry(**a.model_dump(mode="json")) for a in self.pairing.anomalies]
        return pairs, anomalies

    def partition_of(self) -> dict[str, Partition]:
        return {result_item_id(x.call_id): Partition.RECENT_TOOL_PAIRS for x in self.pairs}

    def zone(self) -> Zone:
        return Zone.DATA
