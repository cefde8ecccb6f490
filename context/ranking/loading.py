"""Load modes (docs/context-engine.md#load-modes): resident, retrieve, or progressive disclosure.

* ``resident`` items are placed by the policy whatever the step's topics (task contract,
  control rules, runtime state, the latest checkpoint).
* ``retrieve`` items load their body and must earn their place: they compete on topic
  coverage, rank and budget.
* ``disclose`` items enter as an **index entry** — id, summary, revision, source ref,
  content hash and size — instead of the body, so the model knows the object exists and
  how to ask for it without paying for it.

The mode comes from the item (``load_mode``) if set, else the policy's
``load_modes.default_by_source``, else ``retrieve``; an item whose completeness is
``index`` is always disclosed. With ``disclose_over_tokens`` a retrieve item larger than
the threshold is disclosed instead of loaded (a production choice: a huge object should
become a pointer, not silently evict everything else).

The index entry is derived deterministically (the summary is the item's own ``summary``
or ``claim``, else its first non-empty line, cut at 200 characters); its trust equals the
item's (a pointer never gains authority) and its lineage records the disclosure step.
"""

from __future__ import annotations

from context.items import ContextItem, LineageNode, sha256_text
from context.policy import ContextPolicy
from context.vocabulary import Completeness, LoadMode

_SUMMARY_MAX = 200


def load_mode_for(item: ContextItem, policy: ContextPolicy) -> LoadMode:
    if item.completeness is Completeness.INDEX:
        return LoadMode.DISCLOSE
    if item.load_mode is not None:
        return item.load_mode
    return policy.load_modes.default_by_source.get(item.source_type, LoadMode.RETRIEVE)


def too_large(tokens: int, policy: ContextPolicy) -> bool:
    limit = policy.load_modes.disclose_over_tokens
    return limit is not None and tokens > limit


def index_summary(item: ContextItem) -> str:
    text = item.summary or item.claim
    if not text:
        text = next((ln.strip() for ln in item.content.splitlines() if ln.strip()), "")
    text = " ".join(text.split())
    return text if len(text) <= _SUMMARY_MAX else text[: _SUMMARY_MAX - 1] + "…"


def index_entry(item: ContextItem, body_tokens: int) -> ContextItem:
    """The progressive-disclosure stand-in for ``item`` (same id, same or lower trust)."""
    lines = [
        "INDEX ENTRY (body not loaded; request it by id if the step needs it)",
        f"id: {item.item_id}",
        f"summary: {index_summary(item)}",
        f"revision: {item.revision or 'unversioned'}",
        f"source: {item.source_ref.citation()}",
        f"content_hash: {item.content_hash}",
        f"body_tokens: {body_tokens}",
    ]
    if item.topics:
        lines.append(f"topics: {', '.join(item.topics)}")
    content = "\n".join(lines)
    base = item.source_lineage or (
        LineageNode(node_id=item.item_id, type=item.source_type.value, digest=item.content_hash),
    )
    node = LineageNode(
        node_id=f"{item.item_id}#index",
        type="disclose",
        input_node_ids=(base[-1].node_id,),
        digest=sha256_text(content),
    )
    return item.model_copy(
        update={
            "content": content,
            "content_hash": sha256_text(content),
            "completeness": Completeness.INDEX,
            "load_mode": LoadMode.DISCLOSE,
            "source_lineage": (*base, node),
        }
    )
