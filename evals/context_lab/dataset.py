"""The lab's dataset: sources and cases as JSON Lines, loaded strictly.

Other tools write these files, so every problem is reported as a ``DatasetError`` naming
the file, the 1-based line and the field (``candidate_source_ids[2]``), never as a crash
later in the run. Unknown keys are errors too: a misspelt optional field would otherwise
silently switch a check off.

Dates (``updated_at``, ``valid_until``, ``observed_at``, ``as_of``) are ISO dates
(midnight UTC) or ISO datetimes; a datetime without an offset is read as UTC. A source's
``updated_at`` is the document's own date; its optional ``observed_at`` says when it was
read (default: the case's ``as_of``), which is what freshness ages (``mapping``).
``tool_history`` is a list of events in arrival order (``{"type": "call"|"result",
"call_id", "tool_name", ...}``) or the engine's ``{"calls": [...], "results": [...]}``.
Three lab extensions beyond the base field list, all optional and all graded:
``forbidden_text`` (strings that must not appear anywhere in the model-visible input, e.g.
a secret that should have been redacted), ``retained_text`` (strings that must still be
visible, e.g. call ids and line ranges a compaction has to keep) and
``expected_anomalies`` (``[{"type", "call_id"}]``, tool-history repairs that must be
recorded).

Two fields say how a case's required topics are recognised in content (the
``--topics`` modes, ``evals.context_lab.topics``): ``topic_terms`` (``{topic: [term,
...]}``, words besides the topic's name that show a source covers it — the engine's
``TopicSpec.terms``) and ``needs_label`` (``{topic: why}``, a topic no content can name,
so that only a declared label can show coverage; in ``content`` mode such a topic is
expected to be reported missing).
"""

from __future__ import annotations

import json
import reprlib
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from context import AnomalyType, ExclusionReason, Role, ScopeRef, SourceType, ToolStatus, Trust
from evals.context_lab.errors import DatasetError

LAB_TRUST = ("trusted", "untrusted")
#: how a wrong value is quoted in an error: bounded, however long or deep the value is
_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother = 3, 80, 80
_SHOWN.maxlist = _SHOWN.maxdict = 6
MAX_LEVEL = 4  # SecurityClass.SECRET; sensitivity and clearance are levels 0..4


def parse_when(value: object) -> datetime:
    """ISO date (→ midnight UTC) or ISO datetime (naive → UTC) → aware datetime."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if not isinstance(value, str):
        raise ValueError("expected an ISO date string")  # the error quotes the value
    text = value.strip()
    try:
        if len(text) == 10:
            d = date.fromisoformat(text)
            return datetime(d.year, d.month, d.day, tzinfo=UTC)
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("not an ISO date or datetime") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _scope(value: object) -> ScopeRef | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("scope must be 'tenant/project[/task]'")
    try:
        return ScopeRef.parse(value)
    except ValueError:  # its message repeats the value; the error quotes it once, bounded
        raise ValueError("scope must be 'tenant/project' or 'tenant/project/task'") from None


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


class LabSource(_Record):
    """One candidate source (docs/context-engine.md#dataset plus the optional ContextItem
    fields)."""

    id: str = Field(min_length=1, max_length=200)
    kind: str = Field(min_length=1)
    title: str
    content: str
    locator: str = Field(min_length=1)
    trust: str
    authority: int
    updated_at: datetime  # the document's own date (never when it was read)
    valid_until: datetime | None
    topics: list[str]
    sensitivity: int = Field(ge=0, le=MAX_LEVEL)
    canonical_key: str | None = None
    scope: ScopeRef | None = None
    revision: str | None = None
    content_hash: str | None = None
    intended_role: Role | None = None
    source_type: SourceType | None = None
    observed_at: datetime | None = None  # when it was read; default: the case's as_of

    @field_validator("updated_at", "valid_until", "observed_at", mode="before")
    @classmethod
    def _when(cls, value: object) -> datetime | None:
        return None if value is None else parse_when(value)

    @field_validator("scope", mode="before")
    @classmethod
    def _scope_ref(cls, value: object) -> ScopeRef | None:
        return _scope(value)

    @field_validator("trust")
    @classmethod
    def _trust(cls, value: str) -> str:
        if value not in LAB_TRUST and value not in {t.value for t in Trust}:
            raise ValueError(
                f"trust must be 'trusted', 'untrusted' or an engine trust label "
                f"({', '.join(t.value for t in Trust)})"
            )
        return value

    @field_validator("revision", mode="before")
    @classmethod
    def _revision(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @property
    def key(self) -> str:
        return self.canonical_key or self.id


class ToolEventSpec(_Record):
    """A tool call or result as it arrived (the order of the list is arrival order)."""

    type: Literal["call", "result"]
    call_id: str = Field(min_length=1)
    tool_name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    turn: int = Field(default=0, ge=0)
    status: ToolStatus = ToolStatus.SUCCESS
    content: str = ""


class AnomalySpec(_Record):
    """A tool-history repair the case expects the assembler to record
    (docs/context-engine.md#tool-pairing-and-anomalies)."""

    type: AnomalyType
    call_id: str = Field(min_length=1)


class LabCase(_Record):
    """One fixed case: a question, its contract and its candidate sources."""

    id: str = Field(min_length=1, max_length=200)
    question: str = Field(min_length=1)
    as_of: datetime
    budget: int = Field(ge=1)
    clearance: int = Field(ge=0, le=MAX_LEVEL)
    required_topics: list[str]
    expected_missing_topics: list[str] = Field(default_factory=list)
    forbidden_source_ids: list[str] = Field(default_factory=list)
    candidate_source_ids: list[str] = Field(min_length=1)
    required_revisions: dict[str, str] = Field(default_factory=dict)
    scope: ScopeRef | None = None
    principal: str | None = None  # the principal id; clearance and scope come from the case
    policy: dict[str, Any] = Field(default_factory=dict)
    tool_history: list[ToolEventSpec] = Field(default_factory=list)
    expected_excluded: dict[str, ExclusionReason] = Field(default_factory=dict)
    forbidden_text: list[str] = Field(default_factory=list)
    retained_text: list[str] = Field(default_factory=list)
    expected_anomalies: list[AnomalySpec] = Field(default_factory=list)
    topic_terms: dict[str, list[str]] = Field(default_factory=dict)
    needs_label: dict[str, str] = Field(default_factory=dict)

    @field_validator("topic_terms")
    @classmethod
    def _terms(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for topic, terms in value.items():
            if not terms:
                raise ValueError(f"topic {topic!r} has an empty list of terms")
            blank = [t for t in terms if not t.strip()]
            if blank:
                raise ValueError(f"topic {topic!r} has a blank term")
        return value

    @field_validator("needs_label")
    @classmethod
    def _why(cls, value: dict[str, str]) -> dict[str, str]:
        for topic, why in value.items():
            if not why.strip():
                raise ValueError(f"topic {topic!r} needs a label: say why (got an empty "
                                 f"string)")
        return value

    @field_validator("as_of", mode="before")
    @classmethod
    def _when(cls, value: object) -> datetime:
        return parse_when(value)

    @field_validator("scope", mode="before")
    @classmethod
    def _scope_ref(cls, value: object) -> ScopeRef | None:
        return _scope(value)

    @field_validator("tool_history", mode="before")
    @classmethod
    def _history(cls, value: object) -> object:
        """Accept the engine's ``{calls, results}`` shape too (calls first, then results)."""
        if isinstance(value, dict):
            extra = set(value) - {"calls", "results"}
            if extra:
                raise ValueError(f"tool_history has unknown keys {sorted(extra)}")
            events = []
            for part, kind in (("calls", "call"), ("results", "result")):
                listed = value.get(part, [])
                if not isinstance(listed, list) or not all(isinstance(e, dict)
                                                           for e in listed):
                    raise ValueError(f"tool_history.{part} must be a list of objects")
                events += [{**event, "type": kind} for event in listed]
            return events
        return value


def _field_name(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "<record>"


def _read_records(path: Path, kind: str) -> list[tuple[int, dict[str, Any]]]:
    if not path.exists():
        raise DatasetError(path, f"{kind} file not found")
    if not path.is_file():
        raise DatasetError(path, f"{kind} path is not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(path, f"cannot read {kind} file: {exc}") from None
    records: list[tuple[int, dict[str, Any]]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DatasetError(path, f"not valid JSON ({exc.msg} at column {exc.colno})",
                               line=number) from None
        except ValueError:  # an integer past Python's digit limit
            raise DatasetError(path, "not usable JSON (a number too long to read)",
                               line=number) from None
        except RecursionError:
            raise DatasetError(path, "not usable JSON (nested too deeply)",
                               line=number) from None
        if not isinstance(data, dict):
            raise DatasetError(path, f"a {kind} record must be a JSON object", line=number)
        records.append((number, data))
    if not records:
        raise DatasetError(path, f"{kind} file has no records")
    return records


def _validate(model: type[_Record], path: Path, number: int, data: dict[str, Any]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = _field_name(tuple(err["loc"]))
        if err["type"] == "missing":
            message = "required field is missing"
        elif err["type"] == "extra_forbidden":
            message = "unknown field"
        else:
            message = f"{err['msg']} (got {_SHOWN.repr(err.get('input'))})"
        raise DatasetError(path, message, line=number, field=field) from None


def _check_unique(path: Path, records: list[tuple[int, dict[str, Any]]], kind: str) -> None:
    seen: dict[str, int] = {}
    for number, data in records:
        ident = data.get("id")
        if isinstance(ident, str) and ident in seen:
            raise DatasetError(path, f"duplicate {kind} id {ident!r} (first on line "
                               f"{seen[ident]})", line=number, field="id")
        if isinstance(ident, str):
            seen[ident] = number


def load_sources(path: Path | str) -> dict[str, LabSource]:
    """Load and validate the sources file; returns sources by id in file order."""
    path = Path(path)
    records = _read_records(path, "sources")
    _check_unique(path, records, "source")
    return {s.id: s for s in (_validate(LabSource, path, n, d) for n, d in records)}


def load_cases(path: Path | str, sources: dict[str, LabSource]) -> list[LabCase]:
    """Load the cases file and check every reference against ``sources``."""
    path = Path(path)
    records = _read_records(path, "cases")
    _check_unique(path, records, "case")
    cases = []
    for number, data in records:
        case: LabCase = _validate(LabCase, path, number, data)
        _check_references(path, number, case, sources)
        cases.append(case)
    return cases


def _check_references(path: Path, number: int, case: LabCase,
                      sources: dict[str, LabSource]) -> None:
    def fail(field: str, message: str) -> DatasetError:
        return DatasetError(path, message, line=number, field=field)

    seen: set[str] = set()
    for i, sid in enumerate(case.candidate_source_ids):
        if sid not in sources:
            raise fail(f"candidate_source_ids[{i}]", f"unknown source id {sid!r}")
        if sid in seen:
            raise fail(f"candidate_source_ids[{i}]", f"source id {sid!r} listed twice")
        seen.add(sid)
    for i, sid in enumerate(case.forbidden_source_ids):
        if sid not in sources:
            raise fail(f"forbidden_source_ids[{i}]", f"unknown source id {sid!r}")
    for sid in case.expected_excluded:
        if sid not in seen:
            raise fail(f"expected_excluded.{sid}",
                       f"source id {sid!r} is not one of this case's candidate_source_ids")
    for i, topic in enumerate(case.expected_missing_topics):
        if topic not in case.required_topics:
            raise fail(f"expected_missing_topics[{i}]",
                       f"topic {topic!r} is not one of required_topics")
    if len(set(case.required_topics)) != len(case.required_topics):
        raise fail("required_topics", "a topic is listed twice")
    for topic in case.topic_terms:
        if topic not in case.required_topics:
            raise fail(f"topic_terms.{topic}", f"topic {topic!r} is not one of required_topics")
    for topic in case.needs_label:
        if topic not in case.required_topics:
            raise fail(f"needs_label.{topic}", f"topic {topic!r} is not one of required_topics")
        if topic in case.expected_missing_topics:
            raise fail(f"needs_label.{topic}", f"topic {topic!r} is expected missing anyway: "
                       "no label can cover it")
