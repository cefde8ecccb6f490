"""The tool history a step is assembled from: calls, results, definitions and their pairs.

These are the value objects the request carries (``ToolHistory``, ``ToolDefinition``) and
the pairing produces (``ToolPair``, ``ToolAnomaly``, ``PairingResult``); pairing itself —
one result per call, in call order, every repair typed — is ``context.tools.pairing``
(docs/context-engine.md#structure-trust-zones-and-tool-pairing).

* ``canonical_argument_hash`` = ``sha256`` of canonical JSON of ``[tool_name, arguments]``
  (sorted keys, no whitespace, ``ensure_ascii=False``; NaN/Infinity rejected) — method name
  ``tool_name_plus_canonical_json_args/v1``.
* ``evidence_use`` of a pair: ``confirmed_by_policy`` for ``success`` (and for
  ``partial``/``error`` only when ``allow_partial_evidence``); ``diagnostic_only`` for
  ``partial``/``error`` otherwise and for ``canceled``; ``unavailable`` for ``unknown`` and
  placeholders.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from context.errors import ToolHistoryError
from context.items import sha256_text
from context.tokens import canonical_json
from context.vocabulary import AnomalyType, ToolStatus

__all__ = [
    "CANONICALIZATION",
    "PAIRING_ASSERTION",
    "EvidenceUse",
    "PairingResult",
    "ToolAnomaly",
    "ToolCall",
    "ToolDefinition",
    "ToolHistory",
    "ToolPair",
    "ToolResult",
    "canonical_argument_hash",
    "placeholder_text",
    "result_item_id",
]

CANONICALIZATION = "tool_name_plus_canonical_json_args/v1"
PAIRING_ASSERTION = "exactly_one_result_for_call"
EvidenceUse = Literal["confirmed_by_policy", "diagnostic_only", "unavailable"]



class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def canonical_argument_hash(tool_name: str, arguments: dict[str, Any]) -> str:
    """Identity of a call's intent: tool name plus canonical JSON arguments."""
    try:
        # hashing is inside: a lone surrogate (legal as a JSON escape) serializes but is
        # no UTF-8 (UnicodeEncodeError is a ValueError)
        return sha256_text(canonical_json([tool_name, arguments]))
    except (TypeError, ValueError) as exc:
        raise ToolHistoryError(
            f"arguments of tool {tool_name!r} are not canonical JSON ({exc})"
        ) from exc


class ToolCall(_Frozen):
    """A call as the assistant issued it; ``turn`` is the assistant turn that issued it."""

    call_id: str = Field(min_length=1, max_length=200)
    tool_name: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)
    turn: int = Field(ge=0)
    security_relevant: bool = False

    @model_validator(mode="after")
    def _arguments_are_json(self) -> ToolCall:
        try:
            canonical_json(self.arguments)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"call {self.call_id}: arguments are not JSON-serializable ({exc})"
            ) from exc
        return self

    @property
    def argument_hash(self) -> str:
        return canonical_argument_hash(self.tool_name, self.arguments)


class ToolResult(_Frozen):
    """A result as it arrived; ``arrival`` is an optional sequence number for the record."""

    call_id: str = Field(min_length=1, max_length=200)
    tool_name: str = Field(min_length=1, max_length=200)
    status: ToolStatus
    content: str
    result_hash: str | None = None
    arrival: int | None = Field(default=None, ge=0)
    security_flags: tuple[str, ...] = ()

    @property
    def computed_hash(self) -> str:
        return sha256_text(self.content)


class ToolHistory(_Frozen):
    """Calls in the order issued, results in the order they arrived."""

    calls: tuple[ToolCall, ...] = ()
    results: tuple[ToolResult, ...] = ()

    @field_validator("calls", "results", mode="before")
    @classmethod
    def _as_tuple(cls, value: object) -> object:
        return tuple(value) if isinstance(value, list) else value


class ToolDefinition(_Frozen):
    """A tool the model may call, as offered to the provider."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[a-zA-Z0-9_-]+$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolAnomaly(_Frozen):
    type: AnomalyType
    call_id: str
    detail: str


class ToolPair(_Frozen):
    """A call with exactly one result; dumps as ``tool_pairs`` entries
    (docs/context-engine.md#manifest-fields).

    ``call`` and ``result`` ride along for rendering and are excluded from dumps.
    """

    call_id: str
    tool_name: str
    canonicalization: str = CANONICALIZATION
    canonical_argument_hash: str
    result_item_id: str
    result_hash: str
    status: ToolStatus
    pairing_assertion: str = PAIRING_ASSERTION
    evidence_use: EvidenceUse
    synthesized: bool = False
    turn: int
    call: ToolCall = Field(exclude=True)
    result: ToolResult = Field(exclude=True)


class PairingResult(_Frozen):
    pairs: tuple[ToolPair, ...] = ()
    anomalies: tuple[ToolAnomaly, ...] = ()
    blocked: str | None = None

    @property
    def unresolved_call_ids(self) -> tuple[str, ...]:
        """Calls answered only by a placeholder (they must survive every summary)."""
        return tuple(p.call_id for p in self.pairs if p.synthesized)


def result_item_id(call_id: str) -> str:
    """Item id under which a call's result appears in the manifest."""
    return f"tool-result:{call_id}"


def placeholder_text(call: ToolCall) -> str:
    return (
        f"[TOOL RESULT UNAVAILABLE] No result was recorded for call {call.call_id} "
        f"({call.tool_name}). The outcome is unknown: do not assume it succeeded or failed, "
        "and do not use it as evidence."
    )
