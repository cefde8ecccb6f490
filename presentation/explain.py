"""``pressroom explain``: a job's sealed manifests rendered as tables.

Client-side only. Reads the manifests whose ids the job reports (live status, result, or
its latest checkpoint) from the artifact store and shows, per step: status and blocked
reason, whether the stored artifacts it read were signed (``attestation``), included items
with their admission reasons, excluded items with reasons, partition token use, transforms,
tool anomalies and cache status. Each item's security handling is a column of its own
(``security_line``: instruction-like text found and treated as data, secrets redacted,
what a security gate refused); a tool result the tool-history stage flagged gets a line of
its own under the tool pairs. ``flagged_items`` is the one reader of every flagged item of
a manifest, wherever it entered (sources, workspace, tool results, review comments), for
``--json`` and the review console's manifest page. Over several manifests
(``render_manifests``) a note that repeats — the same cache line on every step, the same
reordered parallel tool result in every manifest after it — is printed once at the end,
with how many manifests carry it. A fork's manifest (its ``inherited`` section) gets an
``inherited from`` column and a line of the items and tool calls that came from its parent
(``inherited_entries`` is the one reader of that section, for ``--json`` too).
``plain_value`` is how a manifest value reads in a cell, here and on the console's
manifest page: words and numbers, never a Python repr.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from context import FOLD_PREFIX, LOG_PREFIX


def plain_value(value: Any) -> str:
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
        return ", ".join(f"{str(k).replace('_', ' ')}: {plain_value(v)}"
                         for k, v in value.items()) or "—"
    if isinstance(value, list | tuple):
        return ", ".join(plain_value(v) for v in value) or "—"
    return str(value)


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


_INSTRUCTIONS = {"flagged": "instruction-like text found, treated as data",
                 "failed": "instruction-like text: refused"}
_SECRETS = {"redacted": "secrets redacted", "failed": "secret material: refused"}


def security_flags(entry: dict[str, Any]) -> list[str]:
    """What the security gate did to a manifest entry (included or excluded), from its
    ``security_assessment`` and ``security_flags``: empty when every check passed."""
    found = entry.get("security_assessment") or {}
    if not isinstance(found, dict):  # an exclusion before the gate ran: a plain status
        return []
    flags: list[str] = []
    if found.get("cross_scope_check") == "failed":
        flags.append("derived from another scope: refused")
    secrets = _SECRETS.get(str(found.get("secret_handling")))
    if secrets:
        kinds = found.get("secret_kinds")
        flags.append(f"{secrets} ({kinds})" if kinds else secrets)
    instructions = _INSTRUCTIONS.get(str(found.get("external_instruction_isolation")))
    if instructions:
        matched = [str(f) for f in entry.get("security_flags") or []]
        flags.append(f"{instructions} ({', '.join(matched)})" if matched else instructions)
    return flags


#: where an item entered the model's request, by its item id's prefix (``activities.
#: candidates`` names them; a tool result is ``context.tool_history.result_item_id``'s)
_ENTERED_BY_PREFIX = (("tool-result:", "tool_result"), ("workspace:", "workspace"),
                      ("review_comments:", "review_comment"), ("notes:", "notes"),
                      ("notes-index:", "notes"), ("mcp:", "mcp_result"))
#: … or by its source type, for an item the prefixes do not name
_ENTERED_BY_SOURCE = {"repository_source": "source", "official_document": "source",
                      "web_page": "source", "test_log": "source",
                      "editable_project_file": "workspace", "tool_result": "tool_result",
                      "agent_output": "notes"}
#: how ``entered`` reads in a line or a table
ENTERED_LABELS = {"tool_result": "tool result", "review_comment": "review comment",
                  "mcp_result": "MCP result"}


@dataclass(frozen=True)
class FlaggedItem:
    """One item of a manifest the security screening flagged, wherever it entered:
    a source, the workspace, a tool result, a review comment (``flagged_items``)."""

    step_id: str
    item_id: str
    #: ``source``, ``workspace``, ``tool_result``, ``review_comment``, ``notes``,
    #: ``mcp_result``, or the item's source type when it is none of those
    entered: str
    #: whether the model was shown it (a tool result: placed verbatim or compacted)
    included: bool
    flags: list[str]
    #: a tool result's tool and research turn, e.g. ``search, turn 9`` ("" otherwise)
    detail: str = ""

    @property
    def where(self) -> str:
        """``entered`` as people read it (``tool result``)."""
        return ENTERED_LABELS.get(self.entered, self.entered)


def _entered(entry: dict[str, Any]) -> str:
    item_id = str(entry.get("item_id", ""))
    for prefix, entered in _ENTERED_BY_PREFIX:
        if item_id.startswith(prefix):
            return entered
    found = _ENTERED_BY_SOURCE.get(str(entry.get("source_type", "")))
    if found:
        return found
    ref = entry.get("source_ref") or {}
    if ref.get("repo") or ref.get("url") or ref.get("path") or ref.get("locator"):
        return "source"
    return str(entry.get("source_type") or "other")


def tool_pair_flags(manifest: dict[str, Any], pair: dict[str, Any]) -> list[str]:
    """What the tool-history stage found in one tool exchange (``tool_pairs[].
    security_flags``: instruction-like phrases, ``secret_material:<kind>@<where>``) as
    ``security_flags`` words it for other items; a result withheld under a ``deny``
    policy (its ``redact`` transform's objective is ``withhold_tool_result``) says so."""
    found = [str(f) for f in pair.get("security_flags") or []]
    if not found:
        return []
    record = f"transform-redact-tool-result:{pair.get('call_id')}"
    withheld = any(t.get("record_id") == record and t.get("objective") == "withhold_tool_result"
                   for t in manifest.get("transforms") or [])
    secrets = [f.split(":", 1)[1] for f in found if f.startswith("secret_material:")]
    matched = [f for f in found if not f.startswith("secret_material:")]
    flags: list[str] = []
    if secrets:
        flags.append(f"{_SECRETS['failed'] if withheld else _SECRETS['redacted']} "
                     f"({', '.join(secrets)})")
    if matched:
        how = "instruction-like text: withheld" if withheld else _INSTRUCTIONS["flagged"]
        flags.append(f"{how} ({', '.join(matched)})")
    return flags


def flagged_items(manifest: dict[str, Any]) -> list[FlaggedItem]:
    """Every item of ``manifest`` its security screening flagged, in the order the
    manifest lists them — included items, excluded ones, then tool results (which the
    manifest keeps in ``tool_pairs``, not among the items). ``pressroom explain`` (text and
    ``--json``) and the review console's manifest page both read them here."""
    step = str(manifest.get("step_id"))
    found: list[FlaggedItem] = []
    for where in ("included", "excluded"):
        for entry in manifest.get(where) or []:
            flags = security_flags(entry)
            if flags:
                found.append(FlaggedItem(step_id=step, item_id=str(entry.get("item_id")),
                                         entered=_entered(entry),
                                         included=where == "included", flags=flags))
    for pair in manifest.get("tool_pairs") or []:
        flags = tool_pair_flags(manifest, pair)
        if flags:
            found.append(FlaggedItem(
                step_id=step, item_id=str(pair.get("result_item_id")
                                          or f"tool-result:{pair.get('call_id')}"),
                entered="tool_result",
                included=pair.get("placement") in ("verbatim", "compacted"), flags=flags,
                detail=f"{pair.get('tool_name')}, turn {pair.get('turn')}"))
    return found


def security_line(entry: dict[str, Any]) -> str:
    """``security_flags`` as one line ("" when every check passed)."""
    return "; ".join(security_flags(entry))


def security_cell(entry: dict[str, Any]) -> str:
    """``security_flags`` in a word or two, for a table cell (the full line follows it)."""
    return ", ".join(flag.split(" (")[0].split(":")[0].replace(
        "instruction-like text found, treated as data", "instructions as data")
        for flag in security_flags(entry))


def _security_lines(console: Console, entries: list[dict[str, Any]], what: str) -> None:
    for e in entries:
        line = security_line(e)
        if line:
            console.print(f"  [yellow]security[/yellow] {what} {escape(str(e['item_id']))}: "
                          f"{escape(line)}", soft_wrap=True, highlight=False)


def _tool_security_lines(console: Console, manifest: dict[str, Any]) -> None:
    for item in flagged_items(manifest):
        if item.entered != "tool_result":
            continue
        shown = "" if item.included else ", not shown"
        console.print(f"  [yellow]security[/yellow] tool result {escape(item.item_id)} "
                      f"({escape(item.detail)}{shown}): {escape('; '.join(item.flags))}",
                      soft_wrap=True, highlight=False)


@dataclass
class Notes:
    """Lines that repeat across manifests, each kept once with the steps that carry it."""

    seen: dict[str, tuple[str, list[str]]] = field(default_factory=dict)

    def add(self, step: str, markup: str, plain: str) -> None:
        _, steps = self.seen.setdefault(plain, (markup, []))
        steps.append(step)

    def render(self, console: Console) -> None:
        if not self.seen:
            return
        console.print("[bold]notes[/bold] (each once; how many manifests carry it)")
        for markup, steps in self.seen.values():
            named = list(dict.fromkeys(steps))
            shown = ", ".join(named[:6]) + (", …" if len(named) > 6 else "")
            where = f"{len(steps)} manifests: {shown}" if len(steps) > 1 else steps[0]
            console.print(f"  {markup} — {escape(where)}")


def _span(call_ids: list[str]) -> str:
    if not call_ids:
        return "-"
    return call_ids[0] if len(call_ids) == 1 else f"{call_ids[0]}..{call_ids[-1]}"


def layout_lines(manifest: dict[str, Any]) -> list[str]:
    """Which zone of the request each item and tool exchange sat in, in request order
    (docs/context-engine.md#order-for-the-prompt-cache): the stable prefix (control and
    task — the first cache breakpoint), the research fold, the log blocks (one per
    turn), the rest of the data (what may change every turn), then the verbatim tool
    turns; with the older layout, the history summary and the exchanges it compacted."""
    included = manifest.get("included") or []
    pairs = manifest.get("tool_pairs") or []
    if not included and not pairs:
        return []
    ids = [str(e.get("item_id")) for e in included]
    prefix = [str(e.get("item_id")) for e in included if e.get("zone") in ("control", "task")]
    fold = [i for i in ids if i.startswith(FOLD_PREFIX)]
    log = [i for i in ids if i.startswith(LOG_PREFIX)]
    placed: dict[str, list[str]] = {}
    logged: dict[int, list[str]] = {}
    for pair in pairs:
        placement = str(pair.get("placement", "verbatim"))
        placed.setdefault(placement, []).append(str(pair.get("call_id")))
        if placement == "logged":
            logged.setdefault(int(pair.get("turn") or 0), []).append(str(pair.get("call_id")))
    summaries = {str(s.get("summary_id")) for s in manifest.get("summaries") or []} \
        - set(fold) - set(log)
    tail = [i for i in ids if i not in prefix and i not in fold and i not in log
            and i not in summaries and not i.startswith("tool-result:")]
    lines = ["layout (request order):", f"  stable prefix: {', '.join(prefix) or '-'}"]
    if fold:
        lines.append(f"  fold: {', '.join(fold)} ({len(placed.get('folded', []))} calls)")
    if log:
        lines.append("  log: " + ", ".join(
            f"{LOG_PREFIX}t{turn:04d} ({_span(calls)})" for turn, calls in sorted(logged.items())))
    if summaries:
        lines.append(f"  history summary: {', '.join(sorted(summaries))} "
                     f"({len(placed.get('compacted', []))} calls)")
    lines.append(f"  data: {', '.join(tail) or '-'}")
    verbatim = placed.get("verbatim", [])
    lines.append(f"  verbatim: {_span(verbatim)} ({len(verbatim)} calls)")
    if placed.get("evicted"):
        lines.append(f"  evicted: {', '.join(placed['evicted'])}")
    return lines


@dataclass(frozen=True)
class InheritedEntry:
    """One item or tool call of a fork's manifest that came from its parent (the
    manifest's ``inherited`` section): ``kind`` is ``item`` or ``tool_call``; ``placed``
    says where it is in this request (``included <zone>``, ``excluded <reason>``,
    ``candidate`` or, for a tool call, its placement)."""

    step_id: str
    kind: str
    item_id: str
    inherited_from: str
    placed: str


def inherited_marks(manifest: dict[str, Any]) -> dict[str, str]:
    """item id -> ``<parent>@turn N`` for a fork's manifest (empty for any other)."""
    section = manifest.get("inherited") or {}
    items = section.get("items") or {}
    return {str(k): str(v) for k, v in items.items()} if isinstance(items, dict) else {}


def inherited_entries(manifest: dict[str, Any]) -> list[InheritedEntry]:
    """Every inherited item, then every inherited tool call, of one manifest."""
    section = manifest.get("inherited") or {}
    if not section:
        return []
    step = str(manifest.get("step_id"))
    label = str(section.get("inherited_from") or "")
    included = {str(e.get("item_id")): e for e in manifest.get("included") or []}
    excluded = {str(e.get("item_id")): e for e in manifest.get("excluded") or []}
    out = []
    for item_id, mark in sorted(inherited_marks(manifest).items()):
        if item_id in included:
            placed = f"included {included[item_id].get('zone')}"
        elif item_id in excluded:
            placed = f"excluded {excluded[item_id].get('reason')}"
        else:
            placed = "candidate"
        out.append(InheritedEntry(step, "item", item_id, mark, placed))
    pairs = {str(p.get("call_id")): p for p in manifest.get("tool_pairs") or []}
    for call_id in section.get("tool_calls") or []:
        pair = pairs.get(str(call_id)) or {}
        out.append(InheritedEntry(step, "tool_call", str(call_id), label,
                                  f"tool pair {pair.get('placement', 'verbatim')}"))
    return out


def inherited_lines(manifest: dict[str, Any]) -> list[str]:
    """A fork's manifest: where it came from, and its inherited items and tool calls
    (each marked with its origin when that is not the manifest's own parent)."""
    section = manifest.get("inherited") or {}
    if not section:
        return []
    label = str(section.get("inherited_from") or "")
    entries = inherited_entries(manifest)

    def show(e: InheritedEntry) -> str:
        return e.item_id if e.inherited_from == label else f"{e.item_id} ({e.inherited_from})"

    items = [show(e) for e in entries if e.kind == "item"]
    calls = [show(e) for e in entries if e.kind == "tool_call"]
    return [f"inherited from {label}: {len(items)} item{'' if len(items) == 1 else 's'}"
            + (f" ({', '.join(items)})" if items else ""),
            f"inherited tool calls from {label}: " + (", ".join(calls) or "none")]


def render_manifests(console: Console, manifests: list[dict[str, Any]]) -> Notes:
    """Several manifests: each with its tables, the notes they share once at the end."""
    notes = Notes()
    for manifest in manifests:
        render_manifest(console, manifest, notes)
    notes.render(console)
    return notes


def render_manifest(console: Console, manifest: dict[str, Any],
                    notes: Notes | None = None) -> None:
    """One manifest; its anomaly and cache lines go to ``notes`` when given (printed once
    by the caller), else right here."""
    step = str(manifest.get("step_id"))

    def note(markup: str, plain: str) -> None:
        if notes is None:
            console.print(f"  {markup}")
        else:
            notes.add(step, markup, plain)

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

    # a fork's manifest: one more column, where each inherited item came from
    marks = inherited_marks(manifest) if manifest.get("inherited") else None
    inc = Table(title="included", show_lines=False, expand=False)
    for col in ("item", "zone", "trust", "tokens", "admission reason", "security", "source"):
        inc.add_column(col, overflow="fold")
    if marks is not None:
        inc.add_column("inherited from", overflow="fold")
    for e in manifest.get("included", []):
        sec = security_cell(e)
        row = [escape(str(e["item_id"])), e.get("zone", ""), e.get("trust", ""),
               str(e.get("tokens", "")), e.get("admission_reason", ""),
               f"[yellow]{escape(sec)}[/yellow]" if sec else "", _ref(e)]
        if marks is not None:
            row.append(escape(marks.get(str(e["item_id"]), "")))
        inc.add_row(*row)
    console.print(inc)
    _security_lines(console, manifest.get("included", []), "included")

    if manifest.get("excluded"):
        exc = Table(title="excluded")
        for col in ("item", "reason", "gate", "security", "detail"):
            exc.add_column(col, overflow="fold")
        if marks is not None:
            exc.add_column("inherited from", overflow="fold")
        for e in manifest["excluded"]:
            row = [escape(str(e["item_id"])), plain_value(e.get("reason")),
                   str(e.get("hard_gate") or ""), escape(security_cell(e)),
                   e.get("detail", "")]
            if marks is not None:
                row.append(escape(marks.get(str(e["item_id"]), "")))
            exc.add_row(*row)
        console.print(exc)
        _security_lines(console, manifest["excluded"], "excluded")
    for line in inherited_lines(manifest):
        console.print(f"  {escape(line)}", soft_wrap=True)

    budget = manifest.get("budget") or {}
    v = plain_value
    part = Table(title=f"partitions (estimator {v(budget.get('estimator'))}, usable "
                       f"{v(budget.get('usable_input'))}, used "
                       f"{v(budget.get('estimated_used'))}, actual "
                       f"{v(budget.get('actual_input_tokens'))})")
    for col in ("partition", "used", "minimum", "maximum", "demand", "eviction"):
        part.add_column(col)
    for name, p in (budget.get("partitions") or {}).items():
        # a demand that includes units evicted on a lower bound is itself a lower bound
        uncounted = p.get("uncounted") or 0
        demand = f"≥ {v(p.get('demand'))} ({v(uncounted)} untokenized)" if uncounted \
            else v(p.get("demand"))
        part.add_row(name, v(p.get("used")), v(p.get("minimum")), v(p.get("maximum")),
                     demand, v(p.get("eviction")))
    console.print(part)

    if manifest.get("transforms"):
        tr = Table(title="transforms")
        for col in ("record", "type", "inputs", "tokens before→after", "assertions"):
            tr.add_column(col, overflow="fold")
        for t in manifest["transforms"]:
            failed = [k for k, v in (t.get("preservation_assertions") or {}).items()
                      if v != "passed"]
            tr.add_row(t["record_id"], t["type"], ", ".join(t.get("input_item_ids", [])[:4]),
                       f"{plain_value(t.get('token_estimate_before'))}→"
                       f"{plain_value(t.get('token_estimate_after'))}",
                       "all passed" if not failed else "failed: " + ", ".join(failed))
        console.print(tr)
    for line in layout_lines(manifest):
        console.print(f"  {escape(line)}")
    pairs = manifest.get("tool_pairs") or []
    if pairs:
        placed: dict[str, int] = {}
        for pair in pairs:
            placed[str(pair.get("placement", "verbatim"))] = \
                placed.get(str(pair.get("placement", "verbatim")), 0) + 1
        console.print("  tool pairs: " + ", ".join(f"{n} {k}" for k, n in sorted(placed.items())))
        _tool_security_lines(console, manifest)
    for summary in manifest.get("summaries") or []:
        kept = summary.get("preservation_assertions") or {}
        console.print(f"  [cyan]history summary[/cyan] {summary.get('summary_id')} stands for "
                      f"{len(summary.get('input_item_ids') or [])} items "
                      f"({summary.get('input_range')}); preserved: "
                      + ", ".join(f"{k} {v}" for k, v in sorted(kept.items())))
    for a in manifest.get("tool_anomalies", []):
        plain = f"anomaly {a['type']} {a['call_id']}: {a['detail']}"
        note(f"[yellow]anomaly[/yellow] {escape(plain.removeprefix('anomaly '))}", plain)
    cache = manifest.get("cache") or {}
    plain = f"cache: {cache.get('status')} ({cache.get('reason')})"
    note(escape(plain), plain)
    console.print()
