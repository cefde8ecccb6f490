"""Rendering, serialization, the exact-count check and sealing of the manifest.

After allocation the admitted set is rendered (``context.seal.render``), serialized and
validated by the provider adapter, and counted exactly. If the exact count overshoots
``usable``, a partition maximum or the evidence cap — possible only through tokenizer
boundary effects the estimate's slack did not cover — the lowest-priority evictable unit
is given up (``budget_evicted``) and the input is rendered again; the loop ends when the
request fits or nothing evictable is left (``minimums_exceed_budget``). The budget is thus
never exceeded on the real count of what is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from context.admitted import Admitted
from context.assembly.state import AssemblyState, Blocked
from context.budget.allocation import Unit, pick_victim, release
from context.budget.costs import attribute
from context.budget.stage import BudgetStage
from context.items import ContextItem, sha256_text
from context.limits.block_store import BlockStore
from context.manifest import (
    AdapterRef,
    BudgetEntry,
    ContextAssemblyManifest,
    ModelRef,
    PartitionEntry,
    PolicyRef,
    TransformEntry,
    canonical,
    seal,
)
from context.manifest_entries import artifact_refs, checkpoint_ref, included_entry
from context.memo import ItemMemo
from context.seal.adapters import CacheRequest, SerializationError, SerializedRequest, get_adapter
from context.seal.cache import cache_entry, prefix_values, prompt_cache_key, requested
from context.seal.render import (
    AssemblyInput,
    RenderedMessage,
    missing_evidence_section,
    render_control,
    render_missing_evidence,
    render_tool_pairs,
    render_trusted,
)
from context.tokens import ESTIMATOR
from context.tools.aging import folds_history
from context.tools.stage import ToolStage
from context.vocabulary import INSTRUCTION_FLAG, AttestationStatus, BlockedReason, Partition, Zone

_ZONE_ORDER = {z: i for i, z in enumerate(Zone)}


_EPOCH = datetime.min.replace(tzinfo=UTC)


def _oldest_first(members: Sequence[Admitted]) -> list[Admitted]:
    """Data items in the order they were observed (then by id): what a later step adds
    comes after what an earlier one showed, so consecutive requests share their prefix
    (docs/context-engine.md#order-for-the-prompt-cache). Which items are included is the
    budget's decision; this is only where they stand."""
    return sorted(members, key=lambda a: (a.item.observed_at or _EPOCH, a.item.item_id))


@dataclass
class Outcome:
    """What one assembly produced: the sealed manifest, and for a ready one the request."""

    manifest: ContextAssemblyManifest
    blocked_reason: BlockedReason | None
    serialized: SerializedRequest | None = None
    assembly_input: AssemblyInput | None = None
    rendered_evidence: str = ""


_MESSAGES = ItemMemo()
_FILLED = ItemMemo()


def _trusted(item: ContextItem, zone: Literal[Zone.TASK, Zone.STATE]) -> RenderedMessage:
    found: RenderedMessage | None = _MESSAGES.get(item, zone)
    if found is None:
        found = render_trusted(item, zone)
        _MESSAGES.put(item, zone, found)
    return found


def _data(blocks: BlockStore, item: ContextItem, flags: tuple[str, ...], derived: bool
          ) -> RenderedMessage:
    key = (flags, derived)
    found: RenderedMessage | None = _MESSAGES.get(item, key)
    if found is None:
        # the layout of render.render_data, with the block the costing already built
        found = RenderedMessage(role="user", zone=Zone.DERIVED if derived else Zone.DATA,
                                content=blocks.block(item, flags), item_ids=(item.item_id,))
        _MESSAGES.put(item, key, found)
    return found


def clear_memo() -> None:
    _MESSAGES.clear()
    _FILLED.clear()


def _candidate_identity(item: ContextItem) -> list[str]:
    """What of a candidate names the assembly (and so its manifest id): id, content hash,
    revision, and the verdict on its stored revision's signature when one was checked (with
    its key id and detail) —
    the same revisions admitted or refused are two different assemblies, never one
    manifest sealed twice with different bodies. An item without a checked signature
    (``unsigned``, or not read from the store) keeps the identity it always had."""
    row = [item.item_id, item.content_hash, item.revision or ""]
    attested = item.attestation
    if attested is not None and attested.status is not AttestationStatus.UNSIGNED:
        row += [attested.status.value, attested.key_id or "", attested.detail]
    return row


class Finisher:
    """Renders, serializes, checks the exact count and seals; sees the state, the tool
    stage's pairs, the block store's blocks and the budget stage's allocation."""

    def __init__(self, state: AssemblyState, tools: ToolStage, blocks: BlockStore,
                 budget: BudgetStage) -> None:
        self.state = state
        self.tools = tools
        self.blocks = blocks
        self.budget = budget

    # -- identity ----------------------------------------------------------------------
    def candidate_set_digest(self) -> str:
        rows = sorted(_candidate_identity(i) for i in self.state.request.candidates)
        return sha256_text(canonical(rows))

    def assembly_id(self, candidate_digest: str) -> str:
        request = self.state.request
        identity = {
            "run_id": request.run_id, "step_id": request.step_id, "stage": request.stage,
            "as_of": request.as_of.isoformat(), "policy": request.policy.digest,
            "model": request.model.model_dump(mode="json"), "adapter": request.adapter,
            "candidates": candidate_digest, "question": request.question,
            "decision": request.decision,
            "topics": [t.model_dump(mode="json") for t in request.required_topics],
            "revisions": dict(sorted(request.required_revisions.items())),
            "tools": request.tool_history.model_dump(mode="json"),
            "tool_definitions": [t.model_dump(mode="json") for t in request.tool_definitions],
            "acquisitions": sorted(
                (a.model_dump(mode="json") for a in request.acquisitions),
                key=lambda a: str(a["source_request_id"]),
            ),
            "evidence_budget": request.evidence_budget,
            "principal": request.principal.model_dump(mode="json"),
            # the cache status depends on it, so it is part of what the manifest records
            "previous": (request.previous_manifest.assembly_id
                         if request.previous_manifest else None),
        }
        return "assembly-" + sha256_text(canonical(identity))[7:31]

    # -- render loop -------------------------------------------------------------------
    def render(self) -> AssemblyInput:
        state = self.state
        # Blocks carry flag *labels*; the matched text itself stays in the manifest only,
        # so no untrusted phrase is echoed outside a block body.
        flags: dict[str, tuple[str, ...]] = {
            a.item.item_id: (INSTRUCTION_FLAG,) for a in state.admitted.values()
            if a.gate.instruction_flags
        }
        flags.update({cid: (INSTRUCTION_FLAG,) for cid in self.tools.flags})
        # evidence and background first; the history summary (rewritten at every
        # compaction) last, next to the tool turns it stands for
        # (docs/context-engine.md#order-for-the-prompt-cache)
        data = [*_oldest_first(state.ordered(Zone.DATA, Partition.DIRECT_EVIDENCE)),
                *_oldest_first(state.ordered(Zone.DATA, Partition.BACKGROUND)),
                *_oldest_first(state.ordered(Zone.DATA, Partition.RECENT_TOOL_PAIRS))]
        if folds_history(state.policy):
            # the research-log layout: the fold (changes every K turns) and the log blocks
            # (one per turn, never rewritten) right after the stable prefix, in turn
            # order; what changes every turn (notes, plan, checkpoint) after them
            # (context.tools.fold)
            log = sorted(state.ordered(Zone.DATA, Partition.RECENT_TOOL_PAIRS),
                         key=lambda a: a.item.item_id)
            data = [*log, *(a for a in data if a not in log)]
        blocking = [t.name for t in state.request.required_topics if t.blocking]
        # The layout of render.assemble_messages (control, task, MISSING EVIDENCE, state,
        # data, derived, tool turns), with each item's message memoized: a warm assembly
        # re-renders only what changed. tests/context/test_engine.py checks the equality.
        msgs: list[RenderedMessage] = [
            render_control([a.item for a in state.ordered(Zone.CONTROL)])]
        msgs += [_trusted(a.item, Zone.TASK) for a in state.ordered(Zone.TASK)]
        if state.missing:
            msgs.append(render_missing_evidence(state.missing, blocking))
        msgs += [_trusted(a.item, Zone.STATE) for a in state.ordered(Zone.STATE)]
        msgs += [_data(self.blocks, a.item, flags.get(a.item.item_id, ()), False)
                 for a in data]
        msgs += [_data(self.blocks, a.item, flags.get(a.item.item_id, ()), True)
                 for a in state.ordered(Zone.DERIVED)]
        msgs += render_tool_pairs(self.tools.render_pairs(), flags)
        return AssemblyInput(messages=tuple(msgs),
                             tool_definitions=tuple(state.request.tool_definitions))

    def _prefix(self, assembly: AssemblyInput) -> tuple[str, str] | None:
        """The stable prefix's identity, when it is cache-eligible."""
        state, request = self.state, self.state.request
        control_items = [a.item for a in state.ordered(Zone.CONTROL)]
        stable = set(state.policy.cache.stable_prefix_sources)
        if control_items and all(i.source_type in stable for i in control_items):
            return prefix_values(assembly, control_items, state.policy, request.adapter,
                                 request.model.name)
        return None

    def _cache_request(self, assembly: AssemblyInput) -> CacheRequest | None:
        """What to ask the provider to cache (docs/context-engine.md#prompt-cache-identity):
        nothing without an eligible stable prefix; else a breakpoint at its end, one at the
        last compaction boundary of the history (the end of the history summary), and a
        per-job cache key."""
        prefix = self._prefix(assembly)
        if prefix is None:
            return None
        summaries = {s.summary_id for s in self.state.summaries}
        boundary = [i for i, m in enumerate(assembly.messages)
                    if m.item_ids and m.item_ids[0] in summaries]
        return CacheRequest(stable_prefix=True, boundaries=tuple(boundary[-1:]),
                            key=prompt_cache_key(self.state.request.run_id, prefix[1]))

    def ready(self) -> Outcome:
        state, counter = self.state, self.state.counter
        adapter = get_adapter(state.request.adapter)
        allocation = self.budget.allocation
        assert allocation is not None
        while True:
            assembly = self.render()
            try:
                serialized = adapter.serialize(
                    assembly, state.request.model.name, state.policy.budget.response_reserve,
                    self._cache_request(assembly),
                )
            except SerializationError as exc:
                raise Blocked(BlockedReason.SERIALIZATION_INVALID, str(exc)) from None
            total = adapter.count_tokens(serialized.payload, counter)
            partition_of = {a.item.item_id: a.partition for a in state.admitted.values()}
            partition_of.update(self.tools.partition_of())
            per_part, per_item = attribute(counter, assembly, partition_of)
            evidence = sum(
                counter.count_text(m.content or "") for m in assembly.messages
                if m.role == "user" and m.item_ids
                and partition_of.get(m.item_ids[0]) is Partition.DIRECT_EVIDENCE
            )
            victim = self._overshoot(total, per_part, evidence)
            if victim is None:
                break
            release(allocation, victim)
            self.budget.evict(victim, "exact count of the serialized request overshoots the budget")
            self.budget.check_required()
        state.stage("render", f"{len(assembly.messages)} messages, exact {total} tokens")
        return self._ready(assembly, serialized, total, per_part, per_item, evidence)

    def _overshoot(self, total: int, per_part: dict[Partition, int], evidence: int) -> Unit | None:
        allocation, usable = self.budget.allocation, self.budget.usable
        assert allocation is not None
        cap = self.state.request.evidence_budget
        need: Partition | None = None
        if cap is not None and evidence > cap:
            need = Partition.DIRECT_EVIDENCE
        for part, used in per_part.items():
            maximum = allocation.partitions[part].maximum
            if maximum is not None and used > maximum:
                need = part
        if need is None and total <= usable and sum(per_part.values()) <= usable:
            return None
        if need is not None:
            cands = [u for u in allocation.admitted if u.partition is need and not u.required]
            if cands:
                return max(cands, key=lambda u: (u.order, u.unit_id))
        victim = pick_victim(allocation)
        if victim is None:
            raise Blocked(
                BlockedReason.MINIMUMS_EXCEED_BUDGET,
                f"exact request count {total} exceeds usable {usable} and nothing "
                "evictable is left",
            )
        return victim

    # -- sealing -----------------------------------------------------------------------
    def _common(self) -> dict[str, Any]:
        state, request = self.state, self.state.request
        digest = self.candidate_set_digest()
        pairs, anomalies = self.tools.entries()
        order = state.unit_order
        included = sorted(
            state.admitted.values(),
            key=lambda a: (_ZONE_ORDER[a.zone], order.get(a.item.item_id, 0), a.item.item_id),
        )
        adapter = get_adapter(request.adapter)
        return {
            "assembly_id": self.assembly_id(digest),
            "run_id": request.run_id,
            "step_id": request.step_id,
            "stage": request.stage,
            "policy": PolicyRef(id=request.policy.id, revision=request.policy.revision,
                                digest=request.policy.digest),
            "model": ModelRef(provider=request.model.provider, name=request.model.name,
                              api_version=request.model.api_version,
                              context_limit=request.model.context_limit),
            "adapter": AdapterRef(name=adapter.name, version=adapter.version,
                                  serialization_policy_version=adapter.serialization_policy_version),
            "candidate_set_digest": digest,
            "created_at": request.as_of.isoformat(),
            "source_acquisition": state.acquisitions,
            "candidate_items": state.candidate_entries,
            "excluded": sorted(state.excluded, key=lambda e: (e.item_id, e.stage)),
            "transforms": self._transforms(),
            "tool_pairs": pairs,
            "tool_anomalies": anomalies,
            "summaries": state.summaries,
            "missing_topics": state.missing,
            "artifact_refs": artifact_refs(included),
            "checkpoint_ref": checkpoint_ref(included),
            "stages": state.stages,
            "_included": included,
        }

    def _transforms(self) -> list[TransformEntry]:
        """The records, with each excerpt's ``token_estimate_after`` — the tokens of its data
        block as sent — filled in where the budget costed it (it stays null for an excerpt
        evicted on a lower bound, never tokenized)."""
        out = []
        costed = self.blocks.costed
        for t in self.state.transforms:
            # keyed by the excerpt's own digest too: an excerpt later disclosed as an index
            # entry was costed as that entry, which is not the excerpt's size
            tokens = costed.get((t.output_item_id or "", t.output_digest or ""))
            if t.type == "excerpt" and t.token_estimate_after is None and tokens is not None:
                # memoized: a warm assembly reuses the filled record (and so its JSON)
                filled: TransformEntry | None = _FILLED.get(t, tokens)
                if filled is None:
                    filled = t.model_copy(update={"token_estimate_after": tokens})
                    _FILLED.put(t, tokens, filled)
                t = filled
            out.append(t)
        return out

    def _budget(self, per_part: dict[Partition, int] | None, total: int | None,
                evidence: int) -> BudgetEntry:
        state, b, allocation = self.state, self.state.policy.budget, self.budget.allocation
        parts: dict[str, PartitionEntry] = {}
        for part in Partition:
            rule = b.partitions[part]
            use = allocation.partitions[part] if allocation is not None else None
            parts[part.value] = PartitionEntry(
                used=(per_part or {}).get(part, use.used if use else 0),
                minimum=use.minimum if use else rule.minimum,
                maximum=rule.maximum, demand=use.demand if use else 0, eviction=rule.eviction,
                uncounted=use.uncounted if use else 0,
            )
        return BudgetEntry(
            estimator=ESTIMATOR, model_context_limit=state.request.model.context_limit,
            response_reserve=b.response_reserve, protocol_overhead=b.protocol_overhead,
            safety_margin=b.safety_margin, usable_input=self.budget.usable,
            estimated_used=total, evidence_budget=state.request.evidence_budget,
            evidence_block_tokens=evidence,
            partitions=parts,
        )

    def _ready(self, assembly: AssemblyInput, serialized: SerializedRequest, total: int,
               per_part: dict[Partition, int], per_item: dict[str, int],
               evidence: int) -> Outcome:
        state, request = self.state, self.state.request
        fields = self._common()
        included = fields.pop("_included")
        for a in included:
            a.tokens = per_item.get(a.item.item_id, a.tokens)
        prefix = self._prefix(assembly)
        adapter = get_adapter(request.adapter)
        cache = cache_entry(run_id=request.run_id, policy=state.policy,
                            previous=request.previous_manifest, prefix=prefix, blocked=False)
        cache = cache.model_copy(update=requested(serialized.payload, adapter, state.counter))
        fields.update(
            status="ready", blocked_reason=None, blocked_detail=None,
            assembly_input_hash=assembly.digest(),
            serialized_model_input_hash=serialized.hash,
            budget=self._budget(per_part, total, evidence),
            included=[included_entry(a) for a in included],
            cache=cache,
        )
        manifest = seal(fields)
        blocks = [m.content or "" for m in assembly.messages
                  if m.role == "user" and m.zone is Zone.DATA and m.item_ids
                  and state.admitted[m.item_ids[0]].partition in
                  (Partition.DIRECT_EVIDENCE, Partition.BACKGROUND)]
        blocking = [t.name for t in request.required_topics if t.blocking]
        head = [missing_evidence_section(state.missing, blocking)] if state.missing else []
        return _outcome(manifest, None, serialized, assembly, "\n\n".join([*head, *blocks]))

    def blocked(self, reason: BlockedReason, detail: str) -> Outcome:
        state, request = self.state, self.state.request
        fields = self._common()
        included = fields.pop("_included")
        allocation = self.budget.allocation
        used = allocation.used if allocation is not None else None
        fields.update(
            status="blocked", blocked_reason=reason, blocked_detail=detail,
            assembly_input_hash=None, serialized_model_input_hash=None,
            # a blocked request is never rendered, so no evidence block was counted
            budget=self._budget(None, used, 0),
            included=[included_entry(a) for a in included],
            cache=cache_entry(run_id=request.run_id, policy=state.policy,
                              previous=request.previous_manifest, prefix=None, blocked=True),
        )
        return _outcome(seal(fields), reason, None, None, "")


def _outcome(manifest: ContextAssemblyManifest, reason: BlockedReason | None,
             serialized: SerializedRequest | None, assembly: AssemblyInput | None,
             evidence: str) -> Outcome:
    return Outcome(manifest=manifest, blocked_reason=reason, serialized=serialized,
                   assembly_input=assembly, rendered_evidence=evidence)
