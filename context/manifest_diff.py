"""The difference between two sealed requests, item by item (``pressroom explain --diff``).

A pure function over two stored manifest bodies (``ContextAssemblyManifest`` dumps, as the
store holds them): which items entered the request, left it, or changed zone, partition,
content or load mode between A and B, each with the gate, exclusion reason or transform
that decided it on the side where it is not included — and the difference in estimated
input tokens and in the turns' recorded cost. The tool calls of the two requests' tool
histories are compared too, by their result item (``tool-result:<call id>``). An item of
a fork's manifest that came from its parent carries its ``inherited_from`` mark.

Two jobs' requests (a parent's and its fork's) name their job-owned items by their own job
ids (``notes:<job>:001``, ``checkpoint:<job>-cp-0002-research``); given both job ids, each
side's own id in an item id reads ``{job}``, so the same item of both jobs pairs up and only
what really differs is listed.

The current state is one checkpoint a stage (``checkpoint:<job>-cp-<n>-<stage>``), and a
later request — or a fork, whose copy of its parent's checkpoint is its own first — reads a
newer one under another number: the one checkpoint that left and the one that entered for
a stage pair up as one "changed" row (under B's id, A's named in the detail), so a diff
shows the state as the one item it is rather than as an unrelated exit and entry.

A manifest is sealed before the model is called, so it carries no cost: the caller passes
each turn's cost from its stored reply (``cost_a``/``cost_b``), when the worker priced it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

Change = Literal["entered", "left", "changed"]


@dataclass(frozen=True)
class ItemDiff:
    item_id: str
    change: Change
    zone_a: str | None
    zone_b: str | None
    #: what decided it: the exclusion (reason and hard gate) or transform on the side it is
    #: not included, else the admission reason of the side it is included
    decided_by: str
    tokens_a: int
    tokens_b: int
    detail: str = ""
    inherited_from: str | None = None


@dataclass(frozen=True)
class ManifestDiff:
    a: str
    b: str
    items: list[ItemDiff] = field(default_factory=list)
    tokens_a: int = 0
    tokens_b: int = 0
    cost_a: int | None = None
    cost_b: int | None = None

    @property
    def token_delta(self) -> int:
        return self.tokens_b - self.tokens_a

    @property
    def cost_delta(self) -> int | None:
        if self.cost_a is None or self.cost_b is None:
            return None
        return self.cost_b - self.cost_a


def _tokens(manifest: dict[str, Any]) -> int:
    value = (manifest.get("budget") or {}).get("estimated_used")
    return int(value) if isinstance(value, int) else 0


def _cost(manifest: dict[str, Any]) -> int | None:
    value = manifest.get("cost_micro_usd")
    return int(value) if isinstance(value, int) else None


def _exclusion(entry: dict[str, Any]) -> str:
    gate = f" (gate {entry['hard_gate']})" if entry.get("hard_gate") else ""
    return f"excluded: {entry.get('reason')}{gate}"


def _transforms(manifest: dict[str, Any]) -> dict[str, str]:
    """item id -> the transform that consumed it (``<type> <record id>``)."""
    out: dict[str, str] = {}
    for record in manifest.get("transforms") or []:
        for item in record.get("input_item_ids") or []:
            out[str(item)] = f"transform {record.get('type')} {record.get('record_id')}"
        for item in record.get("dropped_item_ids") or []:
            out[str(item)] = f"dropped by transform {record.get('type')} {record.get('record_id')}"
    return out


def _not_included(manifest: dict[str, Any], item_id: str,
                  excluded: dict[str, dict[str, Any]], transforms: dict[str, str],
                  candidates: set[str]) -> str:
    if item_id in excluded:
        return _exclusion(excluded[item_id])
    if item_id in transforms:
        return transforms[item_id]
    if item_id not in candidates:
        return "not a candidate"
    return "not placed"


def _inherited(manifest: dict[str, Any]) -> dict[str, str]:
    section = manifest.get("inherited") or {}
    items = section.get("items") or {}
    return {str(k): str(v) for k, v in items.items()} if isinstance(items, dict) else {}


def _inherited_calls(manifest: dict[str, Any]) -> dict[str, str]:
    section = manifest.get("inherited") or {}
    label = str(section.get("inherited_from") or "")
    return {str(c): label for c in section.get("tool_calls") or []}


def _tool_pairs(a: dict[str, Any], b: dict[str, Any], inherited: set[str]) -> list[ItemDiff]:
    """The tool calls of the two requests' histories, by their result item
    (``tool-result:<call id>``): a call one history has and the other not, or whose
    placement (verbatim, logged, folded…), status, arguments or result differ. A pair
    carries no token count of its own (its text is counted in the items that place it)."""
    pairs_a = {str(p.get("call_id")): p for p in a.get("tool_pairs") or []}
    pairs_b = {str(p.get("call_id")): p for p in b.get("tool_pairs") or []}
    label = str((b.get("inherited") or {}).get("inherited_from") or "") or None
    out: list[ItemDiff] = []
    for call in sorted(set(pairs_a) | set(pairs_b)):
        pa, pb = pairs_a.get(call), pairs_b.get(call)
        item = f"tool-result:{call}"
        mark = label if call in inherited else None
        if pa is None and pb is not None:
            out.append(ItemDiff(item, "entered", None, f"tool {pb.get('placement')}",
                                f"in the tool history ({pb.get('tool_name')})", 0, 0,
                                inherited_from=mark))
        elif pb is None and pa is not None:
            out.append(ItemDiff(item, "left", f"tool {pa.get('placement')}", None,
                                f"not in the tool history ({pa.get('tool_name')})", 0, 0))
        elif pa is not None and pb is not None:
            changed = [f"{key} {pa.get(key)} → {pb.get(key)}"
                       for key in ("placement", "status", "canonical_argument_hash",
                                   "result_hash") if pa.get(key) != pb.get(key)]
            if changed:
                out.append(ItemDiff(item, "changed", f"tool {pa.get('placement')}",
                                    f"tool {pb.get('placement')}", "tool-history stage", 0, 0,
                                    detail="; ".join(changed), inherited_from=mark))
    return out


#: what a job's own id reads as in the item ids of a diff between two jobs
JOB_PLACEHOLDER = "{job}"

#: a checkpoint item's number, the part two requests' current states differ by
_CHECKPOINT_NUMBER = re.compile(r"^(checkpoint:.*-cp-)\d+(-[\w-]+)$")


def _checkpoint_pairs(ids_a: set[str], ids_b: set[str]) -> dict[str, str]:
    """A's included checkpoint id -> B's, where for a stage exactly one checkpoint is only
    in A and exactly one only in B: the current state read under a newer number (see the
    module docstring)."""
    def slots(ids: set[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for item_id in ids:
            m = _CHECKPOINT_NUMBER.match(item_id)
            if m:
                out.setdefault(f"{m.group(1)}*{m.group(2)}", []).append(item_id)
        return out

    only_a, only_b = slots(ids_a - ids_b), slots(ids_b - ids_a)
    return {olds[0]: only_b[key][0] for key, olds in only_a.items()
            if len(olds) == 1 and len(only_b.get(key, [])) == 1}


def _renamer(job: str | None) -> Any:
    """``{job}`` for ``job`` where it stands as a whole name in an item id (after a
    separator such as ``:``, not inside a word: a job ``p`` leaves ``job_spec`` alone)."""
    if not job:
        return str
    own = re.compile(r"(?<![\w.-])" + re.escape(job) + r"(?!\w)")
    return lambda item_id: own.sub(JOB_PLACEHOLDER, str(item_id))


def diff_manifests(a: dict[str, Any], b: dict[str, Any], *,
                   jobs: tuple[str, str] | None = None, cost_a: int | None = None,
                   cost_b: int | None = None) -> ManifestDiff:
    """What changed from request ``a`` to request ``b``, item by item, sorted by item id.
    ``jobs``: the two requests' job ids, when they differ (each reads ``{job}`` in its
    own item ids); ``cost_a``/``cost_b``: the turns' recorded cost, micro-USD."""
    same = jobs is None or jobs[0] == jobs[1]
    na = _renamer(None if same or jobs is None else jobs[0])
    nb = _renamer(None if same or jobs is None else jobs[1])
    inc_a = {na(e["item_id"]): e for e in a.get("included") or []}
    inc_b = {nb(e["item_id"]): e for e in b.get("included") or []}
    exc_a = {na(e["item_id"]): e for e in a.get("excluded") or []}
    exc_b = {nb(e["item_id"]): e for e in b.get("excluded") or []}
    tr_a = {na(k): v for k, v in _transforms(a).items()}
    tr_b = {nb(k): v for k, v in _transforms(b).items()}
    cand_a = {na(e["item_id"]) for e in a.get("candidate_items") or []}
    cand_b = {nb(e["item_id"]) for e in b.get("candidate_items") or []}
    marks = {nb(k): v for k, v in _inherited(b).items()}
    renamed = _checkpoint_pairs(set(inc_a), set(inc_b))
    inc_a = {renamed.get(k, k): v for k, v in inc_a.items()}
    was_of = {new: old for old, new in renamed.items()}
    items: list[ItemDiff] = []
    for item_id in sorted(set(inc_a) | set(inc_b)):
        ea, eb = inc_a.get(item_id), inc_b.get(item_id)
        was = was_of.get(item_id)
        if ea is None and eb is not None:
            items.append(ItemDiff(item_id, "entered", None, str(eb.get("zone")),
                                  _not_included(a, item_id, exc_a, tr_a, cand_a)
                                  + f" → {eb.get('admission_reason')}",
                                  0, int(eb.get("tokens") or 0),
                                  inherited_from=marks.get(item_id)))
        elif eb is None and ea is not None:
            items.append(ItemDiff(item_id, "left", str(ea.get("zone")), None,
                                  _not_included(b, item_id, exc_b, tr_b, cand_b),
                                  int(ea.get("tokens") or 0), 0,
                                  inherited_from=marks.get(item_id)))
        elif ea is not None and eb is not None:
            changed = [f"{key} {ea.get(key)} → {eb.get(key)}"
                       for key in ("zone", "partition", "content_hash", "load_mode")
                       if ea.get(key) != eb.get(key)]
            if was is not None:
                changed.insert(0, f"the current state, was {was}")
            if changed:
                items.append(ItemDiff(item_id, "changed", str(ea.get("zone")),
                                      str(eb.get("zone")), str(eb.get("admission_reason")),
                                      int(ea.get("tokens") or 0), int(eb.get("tokens") or 0),
                                      detail="; ".join(changed),
                                      inherited_from=marks.get(item_id)))
    items += _tool_pairs(a, b, set(_inherited_calls(b)))
    items.sort(key=lambda d: d.item_id)
    return ManifestDiff(a=str(a.get("assembly_id") or a.get("step_id")),
                        b=str(b.get("assembly_id") or b.get("step_id")), items=items,
                        tokens_a=_tokens(a), tokens_b=_tokens(b),
                        cost_a=cost_a if cost_a is not None else _cost(a),
                        cost_b=cost_b if cost_b is not None else _cost(b))


__all__ = ["JOB_PLACEHOLDER", "ItemDiff", "ManifestDiff", "diff_manifests"]
