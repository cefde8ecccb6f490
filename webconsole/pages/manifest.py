"""What the model saw: one manifest as a page — every item its security screening flagged,
wherever it entered (sources, workspace, tool results, review comments: the reader
``pressroom explain`` uses, ``presentation.explain.flagged_items``), included items by zone
with tokens per partition, exclusions with gate, reason and detail, transforms and what
their preservation assertions kept, tool-pair anomalies, cache status, both input hashes,
and the exact serialized request (collapsed)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from presentation.explain import attestation_line, flagged_items
from webconsole.backend import NotVisible
from webconsole.pages.common import Deps, render, signed_in


def partitions(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Each partition with its share of the usable input, for the bar chart: exact token
    numbers beside each bar (a ``<progress>`` of the usable input, so 0 and 1,098 never
    draw the same)."""
    budget = manifest.get("budget") or {}
    usable = max(int(budget.get("usable_input") or 0), 1)
    rows = []
    for name, part in (budget.get("partitions") or {}).items():
        used = int(part.get("used") or 0)
        rows.append({"name": name, "used": used, "usable": usable,
                     "minimum": part.get("minimum"),
                     "maximum": part.get("maximum"), "demand": part.get("demand"),
                     "eviction": part.get("eviction"),
                     "percent": min(100.0, round(100.0 * used / usable, 1))})
    return rows


def by_zone(manifest: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    zones: dict[str, list[dict[str, Any]]] = {}
    for entry in manifest.get("included") or []:
        zones.setdefault(str(entry.get("zone", "?")), []).append(entry)
    return zones


async def manifest_page(request: Request, deps: Deps) -> Response:
    session = signed_in(request, deps)
    job_id, manifest_id = request.path_params["job_id"], request.path_params["manifest_id"]
    manifest = await deps.backend.manifest(job_id, session.reviewer, manifest_id)
    verified = manifest.pop("_request_verified", False)
    pretty = manifest.pop("_request_pretty", None)
    texts: dict[str, str] = manifest.pop("_item_texts", None) or {}
    plain = attestation_line(manifest).replace("[red]", "").replace("[/red]", "")
    return render(request, deps, "manifest.html", {
        "job_id": job_id, "manifest_id": manifest_id, "m": manifest,
        "zones": by_zone(manifest), "partitions": partitions(manifest),
        "texts": texts, "request_readable": bool(texts),
        "flagged": flagged_items(manifest),
        "attestation": plain, "request_verified": verified, "request_pretty": pretty,
    }, session=session)


def _turn(value: str | None, name: str) -> int | None:
    """A turn number from the query string: ``None`` when absent, ``NotVisible`` when it
    is not a positive whole number (no job has such a turn)."""
    if value is None or value == "":
        return None
    if not value.isdigit() or int(value) < 1 or len(value) > 6:
        raise NotVisible(f"{name} must be a research turn's number, not {value[:20]!r}")
    return int(value)


async def compare_page(request: Request, deps: Deps) -> Response:
    """Two sealed research requests, item by item: what entered, left or changed zone,
    with the gate or transform that decided it, and the token and cost difference — the
    console's ``pressroom explain --diff``. ``/jobs/B/compare?turn=M`` compares B's turn M
    with its turn M-1, or, for a fork's first own turn, with its parent's same turn;
    ``against=A&against_turn=N`` names the other side."""
    session = signed_in(request, deps)
    job_b = request.path_params["job_id"]
    turn_b = _turn(request.query_params.get("turn"), "turn")
    if turn_b is None:
        raise NotVisible("say which research turn to compare: ?turn=N")
    spec_b = await deps.backend.spec(job_b, session.reviewer)
    lineage = spec_b.lineage
    first_own = lineage.turn + 1 if lineage is not None else 1
    against = request.query_params.get("against") or (
        lineage.parent_job if lineage is not None and turn_b == first_own else job_b)
    turn_a = _turn(request.query_params.get("against_turn"), "against_turn") or (
        turn_b if against != job_b else max(turn_b - 1, 1))
    diff = await deps.backend.compare(job_b, turn_b, against, turn_a, session.reviewer)
    return render(request, deps, "compare.html", {
        "a": {"job_id": against, "turn": turn_a, "manifest_id": diff.a,
              "tokens": diff.tokens_a, "cost": diff.cost_a},
        "b": {"job_id": job_b, "turn": turn_b, "manifest_id": diff.b,
              "tokens": diff.tokens_b, "cost": diff.cost_b},
        "diff": diff, "changes": {c: sum(1 for i in diff.items if i.change == c)
                                  for c in ("entered", "left", "changed")},
    }, session=session)


__all__ = ["by_zone", "compare_page", "manifest_page", "partitions"]
