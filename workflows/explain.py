"""``pressroom explain``: a job's sealed manifests rendered as tables.

Client-side only. Reads the manifests whose ids the job reports (live status, result, or
its latest checkpoint) from the artifact store and shows, per step: status and blocked
reason, whether the stored artifacts it read were signed (``attestation``), included items
with their admission reasons, excluded items with reasons, partition token use, transforms,
tool anomalies and cache status.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def _ref(entry: dict[str, Any]) -> str:
    ref = entry.get("source_ref") or {}
    if ref.get("repo") and ref.get("path"):
        lines = f"#L{ref.get('line_start')}-L{ref.get('line_end')}" if ref.get("line_start") else ""
        return f"{ref['repo']}@{str(ref.get('commit'))[:10]}:{ref['path']}{lines}"
    if ref.get("artifact_id"):
        return f"{ref.get('artifact_kind')}:{ref['artifact_id']}@{ref.get('revision')}"
    return str(ref.get("url") or ref.get("locator") or "")


def attestation_line(manifest: dict[str, Any]) -> str:
    """Whether the step's stored artifacts were signed: the manifest's ``attestation``
    section (written only when the worker had an attestation key)."""
    found = manifest.get("attestation")
    if not isinstance(found, dict):
        return "unsigned (no attestation key configured)"
    verified = found.get("verified") or {}
    keys = ", ".join(f"{key} ({count})" for key, count in sorted(verified.items()))
    line = (f"signed; verified {sum(verified.values())} revisions"
            + (f" by key {keys}" if keys else ""))
    invalid = found.get("invalid") or []
    if invalid:
        line += f"; [red]{len(invalid)} failed attestation[/red] (excluded): " + ", ".join(
            escape(str(entry.get("revision"))) for entry in invalid)
    return line


def render_manifest(console: Console, manifest: dict[str, Any]) -> None:
    status = manifest.get("status")
    head = (f"[bold]{manifest.get('step_id')}[/bold] ({manifest.get('stage')}) — manifest "
            f"{manifest.get('assembly_id')}")
    head += f" — [green]{status}[/green]" if status == "ready" else f" — [red]{status}[/red]"
    if manifest.get("blocked_reason"):
        head += f": {manifest['blocked_reason']} {manifest.get('blocked_detail') or ''}"
    console.print(head)
    policy = manifest.get("policy") or {}
    console.print(f"  policy {policy.get('id')} r{policy.get('revision')} "
                  f"{policy.get('digest', '')[:19]}"
                  f"  serialized input {manifest.get('serialized_model_input_hash') or '-'}")
    console.print(f"  artifacts: {attestation_line(manifest)}")
    if manifest.get("missing_topics"):
        console.print(f"  [yellow]missing topics:[/yellow] {', '.join(manifest['missing_topics'])}")

    inc = Table(title="included", show_lines=False, expand=False)
    for col in ("item", "zone", "trust", "tokens", "admission reason", "source"):
        inc.add_column(col, overflow="fold")
    for e in manifest.get("included", []):
        inc.add_row(e["item_id"], e.get("zone", ""), e.get("trust", ""), str(e.get("tokens", "")),
                    e.get("admission_reason", ""), _ref(e))
    console.print(inc)

    if manifest.get("excluded"):
        exc = Table(title="excluded")
        for col in ("item", "reason", "gate", "detail"):
            exc.add_column(col, overflow="fold")
        for e in manifest["excluded"]:
            exc.add_row(e["item_id"], str(e.get("reason")), str(e.get("hard_gate") or ""),
                        e.get("detail", ""))
        console.print(exc)

    budget = manifest.get("budget") or {}
    part = Table(title=f"partitions (estimator {budget.get('estimator')}, usable "
                       f"{budget.get('usable_input')}, used {budget.get('estimated_used')}, "
                       f"actual {budget.get('actual_input_tokens')})")
    for col in ("partition", "used", "minimum", "maximum", "demand", "eviction"):
        part.add_column(col)
    for name, p in (budget.get("partitions") or {}).items():
        # a demand that includes units evicted on a lower bound is itself a lower bound
        uncounted = p.get("uncounted") or 0
        demand = f"≥ {p.get('demand')} ({uncounted} untokenized)" if uncounted \
            else str(p.get("demand"))
        part.add_row(name, str(p.get("used")), str(p.get("minimum")), str(p.get("maximum")),
                     demand, str(p.get("eviction")))
    console.print(part)

    if manifest.get("transforms"):
        tr = Table(title="transforms")
        for col in ("record", "type", "inputs", "tokens before→after", "assertions"):
            tr.add_column(col, overflow="fold")
        for t in manifest["transforms"]:
            failed = [k for k, v in (t.get("preservation_assertions") or {}).items()
                      if v != "passed"]
            tr.add_row(t["record_id"], t["type"], ", ".join(t.get("input_item_ids", [])[:4]),
                       f"{t.get('token_estimate_before')}→{t.get('token_estimate_after')}",
                       "all passed" if not failed else "failed: " + ", ".join(failed))
        console.print(tr)
    pairs = manifest.get("tool_pairs") or []
    if pairs:
        placed: dict[str, int] = {}
        for pair in pairs:
            placed[str(pair.get("placement", "verbatim"))] = \
                placed.get(str(pair.get("placement", "verbatim")), 0) + 1
        console.print("  tool pairs: " + ", ".join(f"{n} {k}" for k, n in sorted(placed.items())))
    for summary in manifest.get("summaries") or []:
        kept = summary.get("preservation_assertions") or {}
        console.print(f"  [cyan]history summary[/cyan] {summary.get('summary_id')} stands for "
                      f"{len(summary.get('input_item_ids') or [])} items "
                      f"({summary.get('input_range')}); preserved: "
                      + ", ".join(f"{k} {v}" for k, v in sorted(kept.items())))
    for a in manifest.get("tool_anomalies", []):
        console.print(f"  [yellow]anomaly[/yellow] {a['type']} {a['call_id']}: {a['detail']}")
    cache = manifest.get("cache") or {}
    console.print(f"  cache: {cache.get('status')} ({cache.get('reason')})\n")
