"""Source limits and progressive disclosure of one admitted item, with checked records.

``shape_item`` applies, in order, the policy's source limit for the item's type (an
excerpt, see ``context.limits.source_limits``) and — for ``disclose`` items, or items above
``disclose_over_tokens`` — the index entry of ``context.ranking.loading``. Each step writes a
``TransformEntry`` whose preservation assertions are checked here; the first failure
stops shaping and is returned so the pipeline excludes the item ``transform_blocked``.
The result is a pure function of the item, the policy and the topic terms, which is what
lets the pipeline memoize it per item.
"""

from __future__ import annotations

from types import EllipsisType

from context.items import ContextItem, sha256_text
from context.limits.source_limits import LimitApplied, apply_source_limit
from context.manifest import TransformEntry
from context.manifest_entries import simple_transform
from context.policy import ContextPolicy
from context.ranking.loading import index_entry, too_large
from context.tokens import TokenCounter
from context.vocabulary import LoadMode

# (shaped item, transform records, failure detail or None, body tokens, final load mode)
LimitMemo = tuple[ContextItem, list[TransformEntry], str | None, int, LoadMode]


def _failed(rec: TransformEntry) -> str | None:
    bad = [k for k, v in rec.preservation_assertions.items() if v != "passed"]
    return f"{rec.type} failed assertions {bad}" if bad else None


def source_limit_of(policy: ContextPolicy, item: ContextItem, mode: LoadMode,
                    terms: tuple[str, ...]) -> LimitApplied | None:
    """The policy's source limit applied to ``item`` (``None``: none applies)."""
    if mode is LoadMode.DISCLOSE or "excerpt" not in policy.transforms.allowed:
        return None
    return apply_source_limit(item, policy.source_limits.get(item.source_type), terms)


def shape_item(policy: ContextPolicy, counter: TokenCounter, item: ContextItem, mode: LoadMode,
               terms: tuple[str, ...],
               applied: LimitApplied | EllipsisType | None = ...) -> LimitMemo:
    """Source limit, then disclosure; stops at the first failed assertion.

    ``applied`` is :func:`source_limit_of` when the caller computed it already.
    """
    recs: list[TransformEntry] = []
    if applied is ...:
        applied = source_limit_of(policy, item, mode, terms)
    if applied is not None:
        rec = _limit_record(policy, item, applied.item, applied.mode, applied.detail)
        recs.append(rec)
        failed = _failed(rec)
        if failed:
            return item, recs, failed, 0, mode
        item = applied.item
    if mode is not LoadMode.DISCLOSE and policy.load_modes.disclose_over_tokens is None:
        return item, recs, None, 0, mode  # the body is counted once, as its data block
    body = counter.count_text(item.content)
    if mode is LoadMode.DISCLOSE or too_large(body, policy):
        rec, after = _disclose(policy, counter, item, body)
        recs.append(rec)
        failed = _failed(rec)
        if failed:
            return item, recs, failed, body, mode
        return after, recs, None, body, LoadMode.DISCLOSE
    return item, recs, None, body, mode

def _limit_record(policy: ContextPolicy, before: ContextItem,
                  after: ContextItem, mode: str, detail: str) -> TransformEntry:
    ref = after.source_ref
    checks = {
        "source_ref_present": "passed" if ref.citation() != "unknown-source" else "failed",
        "content_hash_bound": "passed" if after.content_hash == sha256_text(after.content)
        else "failed",
    }
    if mode == "excerpt_with_line_range":
        checks["line_range_present"] = "passed" if ref.line_start else "failed"
        checks["revision_present"] = "passed" if ref.commit else "failed"
    return simple_transform(
        record_id=f"transform-excerpt-{before.item_id}", kind="excerpt", before=before,
        after=after, objective=f"{mode} ({detail})",
        policy_version=policy.version_label, transformer_version="source-limits/v1",
        # The original is never sent, so it is never tokenized (that would cost the
        # tokenizer pass over the whole source the excerpt exists to avoid): "before" is
        # the source's own estimate when it gave one. "After" is the excerpt's data block
        # as sent, filled in by the engine once the budget costs it (context.seal.finish).
        assertions=checks, tokens_before=before.estimated_tokens, tokens_after=None,
    )

def _disclose(policy: ContextPolicy, counter: TokenCounter, before: ContextItem,
              body: int) -> tuple[TransformEntry, ContextItem]:
    after = index_entry(before, body)
    checks = {
        key: "passed" if needle in after.content else "failed"
        for key, needle in (
            ("id_present", before.item_id),
            ("revision_present", before.revision or "unversioned"),
            ("source_ref_present", before.source_ref.citation()),
            ("content_hash_present", before.content_hash),
        )
    }
    rec = simple_transform(
        record_id=f"transform-disclose-{before.item_id}", kind="disclose", before=before,
        after=after, objective="progressive_disclosure_index_entry",
        policy_version=policy.version_label, transformer_version="index-entry/v1",
        assertions=checks, tokens_before=body,
        tokens_after=counter.count_text(after.content),
    )
    return rec, after
