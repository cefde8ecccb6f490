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

from typing import TYPE_CHECKING, Any, Literal

from context.budget.allocation import Unit, pick_victim, release
from context.budget.costs import attribute
from context.items import ContextItem, sha256_text
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
from context.memo import ItemMemo
from context.seal.adapters import SerializationError, SerializedRequest, get_adapter
from context.seal.cache import cache_entry, prefix_values
from context.seal.manifest_entries import artifact_refs, checkpoint_ref, included_entry
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
from context.vocabulary import BlockedReason, Partition, Zone

if TYPE_CHECKING:
    from context.assembly.pipeline import Outcome, Pipeline

_ZONE_ORDER = {z: i for i, z in enumerate(Zone)}
INSTRUCTION_FLAG = "instruction_like_text"


_MESSAGES = ItemMemo()
_FILLED = ItemMemo()


def _trusted(item: ContextItem, zone: Literal[Zone.TASK, Zone.STATE]) -> RenderedMessage:
    found: RenderedMessage | None = _MESSAGES.get(item, zone)
    if found is None:
        found = render_trusted(item, zone)
        _MESSAGES.put(item, zone, found)
    return found


def _data(p: Pipeline, item: ContextItem, flags: tuple[str, ...], derived: bool
          ) -> RenderedMessage:
    key = (flags, derived)
    found: RenderedMessage | None = _MESSAGES.get(item, key)
    if found is None:
        # the layout of render.render_data, with the block the costing already built
        found = RenderedMessage(role="user", zone=Zone.DERIVED if derived else Zone.DATA,
                                content=p.blocks.block(item, flags), item_ids=(item.item_id,))
        _MESSAGES.put(item, key, found)
    return found


def clear_memo() -> None:
    _MESSAGES.clear()
    _FILLED.clear()


class Finisher:
    def __init__(self, pipeline: Pipeline) -> None:
        self.p = pipeline

    # -- identity ----------------------------------------------------------------------
    def candidate_set_digest(self) -> str:
        rows = sorted([i.item_id, i.content_hash, i.revision or ""] for i in self.p.req.candidates)
        return sha256_text(canonical(rows))

    def assembly_id(self, candidate_digest: str) -> str:
        r = self.p.req
        identity = {
            "run_id": r.run_id, "step_id": r.step_id, "stage": r.stage,
            "as_of": r.as_of.isoformat(), "policy": r.policy.digest,
            "model": r.model.model_dump(mode="json"), "adapter": r.adapter,
            "candidates": candidate_digest, "question": r.question, "decision": r.decision,
            "topics": [t.model_dump(mode="json") for t in r.required_topics],
            "revisions": dict(sorted(r.required_revisions.items())),
            "tools": r.tool_history.model_dump(mode="json"),
            "tool_definitions": [t.model_dump(mode="json") for t in r.tool_definitions],
            "acquisitions": sorted(
                (a.model_dump(mode="json") for a in r.acquisitions),
                key=lambda a: str(a["source_request_id"]),
            ),
            "evidence_budget": r.evidence_budget,
            "principal": r.principal.model_dump(mode="json"),
            # the cache status depends on it, so it is part of what the manifest records
            "previous": r.previous_manifest.assembly_id if r.previous_manifest else None,
        }
        return "assembly-" + sha256_text(canonical(identity))[7:31]

    # -- render loop -------------------------------------------------------------------
    def render(self) -> AssemblyInput:
        p = self.p
        # Blocks carry flag *labels*; the matched text itself stays in the manifest only,
        # so no untrusted phrase is echoed outside a block body.
        flags: dict[str, tuple[str, ...]] = {
            a.item.item_id: (INSTRUCTION_FLAG,) for a in p.admitted.values()
            if a.gate.instruction_flags
        }
        flags.update({cid: (INSTRUCTION_FLAG,) for cid in p.tools.flags})
        data = [*p.ordered(Zone.DATA, Partition.RECENT_TOOL_PAIRS),
                *p.ordered(Zone.DATA, Partition.DIRECT_EVIDENCE),
                *p.ordered(Zone.DATA, Partition.BACKGROUND)]
        blocking = [t.name for t in p.req.required_topics if t.blocking]
        # The layout of render.assemble_messages (control, task, MISSING EVIDENCE, state,
        # derived, data, tool turns), with each item's message memoized: a warm assembly
        # re-renders only what changed. tests/context/test_engine.py checks the equality.
        msgs: list[RenderedMessage] = [render_control([a.item for a in p.ordered(Zone.CONTROL)])]
        msgs += [_trusted(a.item, Zone.TASK) for a in p.ordered(Zone.TASK)]
        if p.missing:
            msgs.append(render_missing_evidence(p.missing, blocking))
        msgs += [_trusted(a.item, Zone.STATE) for a in p.ordered(Zone.STATE)]
        msgs += [_data(p, a.item, flags.get(a.item.item_id, ()), True)
                 for a in p.ordered(Zone.DERIVED)]
        msgs += [_data(p, a.item, flags.get(a.item.item_id, ()), False) for a in data]
        msgs += render_tool_pairs(p.tools.render_pairs(), flags)
        return AssemblyInput(messages=tuple(msgs), tool_definitions=tuple(p.req.tool_definitions))

    def ready(self) -> Outcome:
        from context.assembly.pipeline import Blocked

        p = self.p
        adapter = get_adapter(p.req.adapter)
        assert p.alloc is not None
        while True:
            assembly = self.render()
            try:
                serialized = adapter.serialize(
                    assembly, p.req.model.name, p.policy.budget.response_reserve
                )
            except SerializationError as exc:
                raise Blocked(BlockedReason.SERIALIZATION_INVALID, str(exc)) from None
            total = adapter.count_tokens(serialized.payload, p.counter)
            partition_of = {a.item.item_id: a.partition for a in p.admitted.values()}
            partition_of.update(p.tools.partition_of())
            per_part, per_item = attribute(p.counter, assembly, partition_of)
            evidence = sum(
                p.counter.count_text(m.content or "") for m in assembly.messages
                if m.role == "user" and m.item_ids
                and partition_of.get(m.item_ids[0]) is Partition.DIRECT_EVIDENCE
            )
            victim = self._overshoot(total, per_part, evidence)
            if victim is None:
                break
            release(p.alloc, victim)
            p.evict(victim, "exact count of the serialized request overshoots the budget")
            p.check_required()
        p.stage("render", f"{len(assembly.messages)} messages, exact {total} tokens")
        return self._ready(assembly, serialized, total, per_part, per_item, evidence)

    def _overshoot(self, total: int, per_part: dict[Partition, int], evidence: int) -> Unit | None:
        from context.assembly.pipeline import Blocked

        p = self.p
        assert p.alloc is not None
        cap = p.req.evidence_budget
        need: Partition | None = None
        if cap is not None and evidence > cap:
            need = Partition.DIRECT_EVIDENCE
        for part, used in per_part.items():
            maximum = p.alloc.partitions[part].maximum
            if maximum is not None and used > maximum:
                need = part
        if need is None and total <= p.usable and sum(per_part.values()) <= p.usable:
            return None
        if need is not None:
            cands = [u for u in p.alloc.admitted if u.partition is need and not u.required]
            if cands:
                return max(cands, key=lambda u: (u.order, u.unit_id))
        victim = pick_victim(p.alloc)
        if victim is None:
            raise Blocked(
                BlockedReason.MINIMUMS_EXCEED_BUDGET,
                f"exact request count {total} exceeds usable {p.usable} and nothing "
                "evictable is left",
            )
        return victim

    # -- sealing -----------------------------------------------------------------------
    def _common(self) -> dict[str, Any]:
        p, r = self.p, self.p.req
        digest = self.candidate_set_digest()
        pairs, anomalies = p.tools.entries()
        included = sorted(
            p.admitted.values(),
            key=lambda a: (_ZONE_ORDER[a.zone], p.units[a.item.item_id].order
                           if a.item.item_id in p.units else 0, a.item.item_id),
        )
        adapter = get_adapter(r.adapter)
        return {
            "assembly_id": self.assembly_id(digest),
            "run_id": r.run_id,
            "step_id": r.step_id,
            "stage": r.stage,
            "policy": PolicyRef(id=r.policy.id, revision=r.policy.revision,
                                digest=r.policy.digest),
            "model": ModelRef(provider=r.model.provider, name=r.model.name,
                              api_version=r.model.api_version,
                              context_limit=r.model.context_limit),
            "adapter": AdapterRef(name=adapter.name, version=adapter.version,
                                  serialization_policy_version=adapter.serialization_policy_version),
            "candidate_set_digest": digest,
            "created_at": r.as_of.isoformat(),
            "source_acquisition": p.acquisitions,
            "candidate_items": p.candidate_entries,
            "excluded": sorted(p.excluded, key=lambda e: (e.item_id, e.stage)),
            "transforms": self._transforms(),
            "tool_pairs": pairs,
            "tool_anomalies": anomalies,
            "summaries": p.summaries,
            "missing_topics": p.missing,
            "artifact_refs": artifact_refs(included),
            "checkpoint_ref": checkpoint_ref(included),
            "stages": p.stages,
            "_included": included,
        }

    def _transforms(self) -> list[TransformEntry]:
        """The records, with each excerpt's ``token_estimate_after`` — the tokens of its data
        block as sent — filled in where the budget costed it (it stays null for an excerpt
        evicted on a lower bound, never tokenized)."""
        out = []
        costed = self.p.blocks.costed
        for t in self.p.transforms:
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
        p, b = self.p, self.p.policy.budget
        parts: dict[str, PartitionEntry] = {}
        for part in Partition:
            rule = b.partitions[part]
            use = p.alloc.partitions[part] if p.alloc is not None else None
            parts[part.value] = PartitionEntry(
                used=(per_part or {}).get(part, use.used if use else 0),
                minimum=use.minimum if use else rule.minimum,
                maximum=rule.maximum, demand=use.demand if use else 0, eviction=rule.eviction,
                uncounted=use.uncounted if use else 0,
            )
        return BudgetEntry(
            estimator=ESTIMATOR, model_context_limit=p.req.model.context_limit,
            response_reserve=b.response_reserve, protocol_overhead=b.protocol_overhead,
            safety_margin=b.safety_margin, usable_input=p.usable, estimated_used=total,
            evidence_budget=p.req.evidence_budget, evidence_block_tokens=evidence,
            partitions=parts,
        )

    def _ready(self, assembly: AssemblyInput, serialized: SerializedRequest, total: int,
               per_part: dict[Partition, int], per_item: dict[str, int],
               evidence: int) -> Outcome:

        p = self.p
        fields = self._common()
        included = fields.pop("_included")
        for a in included:
            a.tokens = per_item.get(a.item.item_id, a.tokens)
        control_items = [a.item for a in p.ordered(Zone.CONTROL)]
        prefix = None
        stable = set(p.policy.cache.stable_prefix_sources)
        if control_items and all(i.source_type in stable for i in control_items):
            prefix = prefix_values(assembly, control_items, p.policy, p.req.adapter,
                                   p.req.model.name)
        fields.update(
            status="ready", blocked_reason=None, blocked_detail=None,
            assembly_input_hash=assembly.digest(),
            serialized_model_input_hash=serialized.hash,
            budget=self._budget(per_part, total, evidence),
            included=[included_entry(a) for a in included],
            cache=cache_entry(run_id=p.req.run_id, policy=p.policy,
                              previous=p.req.previous_manifest, prefix=prefix, blocked=False),
        )
        manifest = seal(fields)
        blocks = [m.content or "" for m in assembly.messages
                  if m.role == "user" and m.zone is Zone.DATA and m.item_ids
                  and p.admitted[m.item_ids[0]].partition in
                  (Partition.DIRECT_EVIDENCE, Partition.BACKGROUND)]
        blocking = [t.name for t in p.req.required_topics if t.blocking]
        head = [missing_evidence_section(p.missing, blocking)] if p.missing else []
        return _outcome(manifest, None, serialized, assembly, "\n\n".join([*head, *blocks]))

    def blocked(self, reason: BlockedReason, detail: str) -> Outcome:
        p = self.p
        fields = self._common()
        included = fields.pop("_included")
        used = p.alloc.used if p.alloc is not None else None
        fields.update(
            status="blocked", blocked_reason=reason, blocked_detail=detail,
            assembly_input_hash=None, serialized_model_input_hash=None,
            budget=self._budget(None, used, p.evidence_block_tokens),
            included=[included_entry(a) for a in included],
            cache=cache_entry(run_id=p.req.run_id, policy=p.policy,
                              previous=p.req.previous_manifest, prefix=None, blocked=True),
        )
        return _outcome(seal(fields), reason, None, None, "")


def _outcome(manifest: ContextAssemblyManifest, reason: BlockedReason | None,
             serialized: SerializedRequest | None, assembly: AssemblyInput | None,
             evidence: str) -> Outcome:
    from context.assembly.pipeline import Outcome

    return Outcome(manifest=manifest, blocked_reason=reason, serialized=serialized,
                   assembly_input=assembly, rendered_evidence=evidence)
