"""What the hard gates decided about a candidate, and the record of an admitted item.

These are the per-item records every later stage shares: ``GateOutcome`` is produced by
``context.admission.gates``, ``Admitted`` is created by the assembly state when an item
passes every gate and then carried (and updated in place: load mode, tokens, transform ids)
through ranking, source limits, budget and sealing. They live at the top of the package,
beside the manifest models, so that the state every stage shares imports no stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from context.items import ContextItem
from context.vocabulary import (
    ExclusionReason,
    Freshness,
    Gate,
    GateResult,
    LoadMode,
    Partition,
    Trust,
    Zone,
)


@dataclass
class Redaction:
    original: ContextItem
    kinds: tuple[str, ...]


@dataclass
class GateOutcome:
    """What the gates decided about one candidate (``item`` may be a redacted copy)."""

    item: ContextItem
    results: dict[Gate, GateResult]
    effective_trust: Trust
    freshness: Freshness | None = None
    freshness_waiver: str | None = None  # the age rule waived for a pinned revision: why
    failed_gate: Gate | None = None
    reason: ExclusionReason | None = None
    detail: str = ""
    refresh_condition: str | None = None
    security_assessment: dict[str, str] = field(default_factory=dict)
    instruction_flags: tuple[str, ...] = ()
    redaction: Redaction | None = None

    @property
    def passed(self) -> bool:
        return self.failed_gate is None



@dataclass
class Admitted:
    """An item that passed every gate, as it moves through the later stages."""

    item: ContextItem
    original: ContextItem
    gate: GateOutcome
    load_mode: LoadMode
    zone: Zone
    partition: Partition
    covered: tuple[str, ...] = ()
    admission_reason: str = ""
    transform_ids: list[str] = field(default_factory=list)
    tokens: int = 0
    block_tokens: int = 0
    body_tokens: int = 0
