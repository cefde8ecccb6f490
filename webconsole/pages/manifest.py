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
from webconsole.pages.common import Deps, render, signed_in


def plain(value: Any) -> str:
    """A manifest value as a reader reads it — never a Python repr: ``None`` is "—", a
    number has thousands separators, a list is comma-separated and a mapping is
    ``key: value`` pairs (nested the same way)."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    if isinstance(value, dict):
        return ", ".join(f"{str(k).replace('_', ' ')}: {plain(v)}"
                         for k, v in value.items()) or "—"
    if isinstance(value, list | tuple):
        return ", ".join(plain(v) for v in value) or "—"
    return str(value)


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


__all__ = ["by_zone", "manifest_page", "partitions", "plain"]
