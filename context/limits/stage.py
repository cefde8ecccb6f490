"""The source-limits stage: every data and derived item gets its policy's source limit
(docs/context-engine.md#source-limits).

An oversized item is cut to an excerpt with its line range (or disclosed as an index entry)
under checked preservation assertions; each change is an ``excerpt`` / ``disclose``
transform record. An item whose limit cannot be applied safely is excluded
``transform_blocked``. The shaping itself is memoized per item in the block store.
"""

from __future__ import annotations

from context.assembly.state import AssemblyState
from context.limits.block_store import BlockStore
from context.vocabulary import ExclusionReason, LoadMode, Zone

__all__ = ["apply_source_limits"]


def apply_source_limits(state: AssemblyState, blocks: BlockStore) -> None:
    limited = disclosed = 0
    shaped = blocks.shape_all(state.admitted.values())
    for admitted in list(state.admitted.values()):
        if admitted.zone not in (Zone.DATA, Zone.DERIVED):
            continue
        after, records, failed, body, mode = shaped[admitted.item.item_id]
        limited += any(record.type == "excerpt" for record in records)
        disclosed += mode is LoadMode.DISCLOSE
        state.transforms.extend(records)
        admitted.transform_ids.extend(record.record_id for record in records)
        admitted.body_tokens, admitted.load_mode = body, mode
        if failed:
            state.exclude(admitted, ExclusionReason.TRANSFORM_BLOCKED, "source_limits", failed)
        else:
            admitted.item = after
    state.stage("source_limits",
                f"{limited} limited, {disclosed} disclosed as index entries")
