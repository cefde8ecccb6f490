"""``ContextPolicy``: the versioned rules an assembly runs under
(docs/context-engine.md#the-policy).

A policy is data: YAML under ``context/policies/`` validated strictly into frozen pydantic
models. Every key is known (``extra="forbid"``), every value typed, every budget
non-negative; an invalid file raises ``PolicyError`` naming the key path. The policy's
``digest`` is ``sha256`` over the canonical JSON of the validated model (sorted keys, no
whitespace), so two YAML files that differ only in layout or comments have one digest,
and any semantic change changes it. Every manifest names id, revision and digest.

Choices the design leaves open (written down here so reviews can argue with them):

* ``trust.default_by_source`` is a **ceiling**, not only a default: an item's effective
  trust is the lower of what it claims and what its source type may carry, so a web page
  that labels itself ``control_authority`` is still ``untrusted_external_data``.
* Freshness is per source type: ``refresh_after`` (age at which the item must be
  refreshed) and ``expire_after`` (age at which it is expired). A source type without an
  entry does not age (pinned commits, task contracts); ``valid_until`` always wins.
* ``role_limits`` names every trust label. The one exception is
  ``unvetted_external_data`` (added in policy revision 3): a policy written before it
  existed gives it no role (it is refused at the trust-role gate). It may at most be
  ``untrusted_data`` — quoted data that never answers a required topic — and a policy
  giving it any other role is invalid.
* ``protocol_overhead`` is a reservation for provider-side wrapping Pressroom cannot
  measure; the message framing and tool definitions Pressroom *does* serialize are counted
  for real and must fit inside the usable budget.
* ``transforms.allowed`` gates the optional shortenings: without ``excerpt`` no source
  limit applies (an oversized item competes whole), without ``summarize`` older tool
  exchanges are not compacted (they compete for the budget, oldest evicted first), and
  ``secret_material: redact`` requires ``redact``. Eviction of whole units is not a
  transform and is always possible.
* ``serialization.policy_version`` names the policy's serialization expectations and is
  part of the digest; the manifest records the adapter's own version and
  serialization-policy version, which are what shaped the bytes.
* ``blocking.block_timeout`` belongs to the policy (docs/architecture.md#blocked-steps): how
  long a job whose assembly is blocked waits for a ``resolve`` before it ends ``failed``. It
  is a strictly positive duration (``"24h"``, ``"30m"`` or whole seconds; ``0``, negatives,
  booleans and fractions are errors) and, like every field, part of the digest. The engine
  itself never waits; the runtime reads it from the policy the step ran under.
* ``load_policy`` is the one function in ``context/`` that reads a file; everything else
  in the package is pure. A worker reads a job's policy file itself, inside its source
  roots (``activities.job_policy``), and parses the text with ``policy_from_text``.
* An error about a policy *file* names the file, the line and the key path, never a value
  or a key the file holds (``context.file_errors``): a job's policy path may point at any
  file by mistake — credentials included — and the error becomes a workflow failure and
  log line. An unknown key is named by its line (with the closest known key as a hint).
  ``policy_from_mapping`` on a mapping built in code names keys and values as before.
"""

from __future__ import annotations

import hashlib
import json
import re
import reprlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from context.errors import PolicyError
from context.file_errors import (
    Position,
    file_problems,
    load_yaml,
    one_line,
    schema_words,
    yaml_positions,
    yaml_problem,
)
from context.vocabulary import (
    NEVER_EVIDENCE,
    PRESERVE_KEYS,
    LoadMode,
    Partition,
    Role,
    SourceType,
    Trust,
)

POLICY_SCHEMA_VERSION = "context-policy/v1"
POLICY_DIR = Path(__file__).parent / "policies"
_DURATION = re.compile(r"^(\d+)([smhd])$")
_NAME = re.compile(r"[A-Za-z0-9_-]+")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}
DEFAULT_BLOCK_TIMEOUT = 24 * 3600


def parse_duration(value: object) -> int:
    """``"7d"``, ``"12h"``, ``"30m"``, ``"45s"`` or an int number of seconds → seconds."""
    if isinstance(value, bool):
        raise ValueError(f"duration must be like '7d' or seconds, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"duration must not be negative, got {value}")
        return value
    if isinstance(value, str):
        m = _DURATION.match(value.strip())
        if m:
            return int(m.group(1)) * _UNIT[m.group(2)]
    raise ValueError(f"duration must be like '7d', '12h', '30m', '45s' or seconds, got {value!r}")


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PolicyIdentity(_Strict):
    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    revision: int = Field(ge=1)
    digest: str | None = None  # optional in YAML; when given it must match the computed one


class FreshnessRule(_Strict):
    refresh_after: int
    expire_after: int

    @field_validator("refresh_after", "expire_after", mode="before")
    @classmethod
    def _duration(cls, value: object) -> int:
        return parse_duration(value)

    @model_validator(mode="after")
    def _ordered(self) -> FreshnessRule:
        if self.expire_after < self.refresh_after:
            raise ValueError("expire_after must be >= refresh_after")
        return self


class FreshnessPolicy(_Strict):
    max_age: dict[SourceType, FreshnessRule] = Field(default_factory=dict)
    on_refresh_required: Literal["reject", "admit"] = "reject"
    on_unverifiable: Literal["reject", "admit"] = "reject"


class TrustPolicy(_Strict):
    default_by_source: dict[SourceType, Trust]

    @model_validator(mode="after")
    def _complete(self) -> TrustPolicy:
        missing = [s.value for s in SourceType if s not in self.default_by_source]
        if missing:
            raise ValueError(f"default_by_source misses source types: {missing}")
        return self


class SecurityPolicy(_Strict):
    external_instruction_text: Literal["isolate_as_data", "deny"] = "isolate_as_data"
    secret_material: Literal["redact", "deny"] = "redact"
    cross_scope_data: Literal["deny"] = "deny"
    extra_secret_patterns: tuple[str, ...] = ()
    extra_instruction_patterns: tuple[str, ...] = ()

    @field_validator("extra_secret_patterns", "extra_instruction_patterns")
    @classmethod
    def _compiles(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"pattern {p!r} does not compile: {exc}") from exc
        return patterns


class LoadModePolicy(_Strict):
    default_by_source: dict[SourceType, LoadMode] = Field(default_factory=dict)
    disclose_over_tokens: int | None = Field(default=None, ge=1)


class PlacementPolicy(_Strict):
    topic_exempt_roles: tuple[Role, ...] = (Role.CONTROL, Role.TASK_INTENT, Role.STATE)
    background_source_types: tuple[SourceType, ...] = ()
    # Rank cap: at most this many direct-evidence items compete for the budget; the rest
    # are excluded ``ranking_lost`` whatever the free budget (None: no cap).
    max_evidence_items: int | None = Field(default=None, ge=1)


class SourceLimit(_Strict):
    mode: Literal[
        "excerpt_with_line_range", "failures_plus_artifact_ref", "relevant_sections_plus_hash"
    ]
    max_lines: int = Field(default=200, ge=1)
    max_sections: int = Field(default=5, ge=1)


class PartitionBudget(_Strict):
    minimum: int = Field(default=0, ge=0)
    maximum: int | None = Field(default=None, ge=0)
    eviction: Literal[
        "never", "structured_summary", "reduce_candidates", "complete_pair_only", "first"
    ]

    @model_validator(mode="after")
    def _min_le_max(self) -> PartitionBudget:
        if self.maximum is not None and self.maximum < self.minimum:
            raise ValueError(f"maximum {self.maximum} is below minimum {self.minimum}")
        return self


class BudgetPolicy(_Strict):
    model_context_limit: int | None = Field(default=None, ge=1)
    response_reserve: int = Field(ge=0)
    protocol_overhead: int = Field(ge=0)
    safety_margin: int = Field(ge=0)
    partitions: dict[Partition, PartitionBudget]
    borrowing: Literal["preserve_all_minimums"] = "preserve_all_minimums"

    @model_validator(mode="after")
    def _all_partitions(self) -> BudgetPolicy:
        missing = [p.value for p in Partition if p not in self.partitions]
        if missing:
            raise ValueError(f"partitions misses: {missing}")
        return self


class ToolPairPolicy(_Strict):
    allow_partial_evidence: bool = False
    keep_recent: int = Field(default=4, ge=0)
    compact_older: bool = True
    #: compact older pairs in blocks of this many (whole turns), so the summary changes
    #: only every ``compact_block`` pairs and consecutive requests share their prefix
    #: (docs/context-engine.md#order-for-the-prompt-cache); 1 compacts every older pair
    compact_block: int = Field(default=1, ge=1)
    #: > 0: the research-log layout (``context.tools.fold``): older pairs become one log
    #: line each, folded every ``fold_every`` turns at fixed boundaries, instead of one
    #: history summary; ``compact_block`` then has no effect
    fold_every: int = Field(default=0, ge=0)


class TransformPolicy(_Strict):
    allowed: tuple[Literal["truncate_item", "summarize", "excerpt", "redact"], ...] = (
        "truncate_item",
        "summarize",
        "excerpt",
        "redact",
    )
    preserve: tuple[str, ...] = ()

    @field_validator("preserve")
    @classmethod
    def _known_keys(cls, keys: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(keys) - set(PRESERVE_KEYS))
        if unknown:
            raise ValueError(f"unknown preservation keys {unknown}; known: {list(PRESERVE_KEYS)}")
        return keys


class BlockingPolicy(_Strict):
    required_partitions: tuple[Partition, ...] = (Partition.CONTROL, Partition.TASK)
    #: seconds a job blocked by this policy waits for a ``resolve`` before it fails
    #: (docs/architecture.md#blocked-steps); written like ``"24h"``, strictly positive.
    block_timeout: int = DEFAULT_BLOCK_TIMEOUT

    @field_validator("block_timeout", mode="before")
    @classmethod
    def _positive_duration(cls, value: object) -> int:
        seconds = parse_duration(value)
        if seconds <= 0:
            raise ValueError(f"block_timeout must be a positive duration, got {value!r}")
        return seconds


class CachePolicy(_Strict):
    stable_prefix_sources: tuple[SourceType, ...] = (SourceType.SYSTEM_POLICY,)


class SerializationPolicy(_Strict):
    policy_version: str = Field(default="serialization/v1", min_length=1)


class ContextPolicy(_Strict):
    """The validated policy. ``digest`` is computed, never trusted from the file."""

    policy_schema_version: Literal["context-policy/v1"]
    policy: PolicyIdentity
    description: str = ""
    freshness: FreshnessPolicy = FreshnessPolicy()
    trust: TrustPolicy
    role_limits: dict[Trust, tuple[Role, ...]]
    security: SecurityPolicy = SecurityPolicy()
    load_modes: LoadModePolicy = LoadModePolicy()
    placement: PlacementPolicy = PlacementPolicy()
    source_limits: dict[SourceType, SourceLimit] = Field(default_factory=dict)
    budget: BudgetPolicy
    tool_pairs: ToolPairPolicy = ToolPairPolicy()
    transforms: TransformPolicy = TransformPolicy()
    blocking: BlockingPolicy = BlockingPolicy()
    cache: CachePolicy = CachePolicy()
    serialization: SerializationPolicy = SerializationPolicy()
    _digest: str | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _redaction_allowed(self) -> ContextPolicy:
        if self.security.secret_material == "redact" and "redact" not in self.transforms.allowed:
            raise ValueError(
                "security.secret_material is 'redact' but transforms.allowed lacks 'redact'"
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _unvetted_has_no_role_unless_given(cls, data: Any) -> Any:
        """A policy from before ``unvetted_external_data`` gives it no role."""
        limits = data.get("role_limits") if isinstance(data, dict) else None
        if isinstance(limits, dict) and Trust.UNVETTED_EXTERNAL_DATA.value not in limits \
                and Trust.UNVETTED_EXTERNAL_DATA not in limits:
            return {**data, "role_limits": {**limits, Trust.UNVETTED_EXTERNAL_DATA.value: []}}
        return data

    @model_validator(mode="after")
    def _role_limits_complete(self) -> ContextPolicy:
        missing = [t.value for t in Trust if t not in self.role_limits]
        if missing:
            raise ValueError(f"role_limits misses trust labels: {missing}")
        for trust in NEVER_EVIDENCE:
            beyond = [r.value for r in self.role_limits[trust] if r is not Role.UNTRUSTED_DATA]
            if beyond:
                raise ValueError(
                    f"role_limits.{trust.value} may at most be [untrusted_data] (quoted data, "
                    f"never evidence), got {beyond}"
                )
        return self

    @property
    def id(self) -> str:
        return self.policy.id

    @property
    def revision(self) -> int:
        return self.policy.revision

    @property
    def digest(self) -> str:
        return policy_digest(self)

    @property
    def version_label(self) -> str:
        """``<id>/<revision>`` as written into transform records."""
        return f"{self.policy.id}/{self.policy.revision}"


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def policy_digest(policy: ContextPolicy) -> str:
    """sha256 of the canonical JSON of the policy without its (optional) claimed digest."""
    if policy._digest is not None:
        return policy._digest
    data = policy.model_dump(mode="json")
    data["policy"].pop("digest", None)
    digest = "sha256:" + hashlib.sha256(_canonical(data).encode("utf-8")).hexdigest()
    policy._digest = digest  # frozen fields are untouched; this only memoizes
    return digest


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 80


def _shown(value: object) -> str:
    """A bad value of a mapping built in code, quoted within bounds (a whole nested
    section is not repeated; an integer too long to print is named by its type)."""
    try:
        return _SHOWN.repr(value)
    except ValueError:
        return f"<{type(value).__name__}>"


def _loc(err: Any) -> str:
    return ".".join(str(p) for p in err["loc"]) or "<root>"


def is_policy_name(value: str) -> bool:
    """Whether a job's ``policy`` names a shipped policy (``default``) rather than a file."""
    return bool(_NAME.fullmatch(value))


def policy_from_mapping(data: object, *, origin: str = "<mapping>",
                        positions: Mapping[Position, int] | None = None) -> ContextPolicy:
    """Validate a parsed mapping into a ``ContextPolicy`` or raise ``PolicyError``.

    ``positions`` (``context.file_errors.yaml_positions`` of the file's text) says the
    mapping was read from a file: errors then name lines and quote nothing from it.
    """
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise PolicyError(f"policy {origin}: top level must be a mapping, got {kind}")
    from_file = positions is not None
    try:
        policy = ContextPolicy.model_validate(data)
    except ValidationError as exc:
        if from_file:
            problems = file_problems(exc, data=data, positions=positions or {},
                                     model=ContextPolicy)
        else:
            problems = []
            for err in exc.errors():
                if err["type"] == "extra_forbidden":
                    problems.append(f"unknown key '{_loc(err)}'")
                else:
                    problems.append(f"'{_loc(err)}': {err['msg']} "
                                    f"(got {_shown(err.get('input'))})")
        raise PolicyError(one_line(f"policy {origin} is invalid: " + "; ".join(problems))
                          ) from None
    claimed = policy.policy.digest
    if claimed is not None and claimed != policy_digest(policy):
        shown = "" if from_file else f" {claimed}"
        raise PolicyError(
            f"policy {origin}: claimed digest{shown} does not match computed "
            f"{policy_digest(policy)}"
        )
    return policy


def policy_from_text(text: str, *, origin: str) -> ContextPolicy:
    """Parse a policy file's text (YAML or JSON); ``PolicyError`` names ``origin``, the
    line and the key, never what the text holds."""
    try:
        data = load_yaml(text, vocabulary=schema_words(ContextPolicy)[0])
    except yaml.YAMLError as exc:
        raise PolicyError(f"policy {origin} is not valid YAML: {yaml_problem(exc)}") from None
    return policy_from_mapping(data, origin=origin, positions=yaml_positions(text))


def load_policy(path_or_name: str | Path) -> ContextPolicy:
    """Load ``"default"``, ``"strict"`` (shipped) or a YAML file path into a ``ContextPolicy``."""
    path = Path(path_or_name)
    if isinstance(path_or_name, str) and is_policy_name(path_or_name):
        path = POLICY_DIR / f"{path_or_name}.yaml"
        if not path.is_file():
            known = sorted(p.stem for p in POLICY_DIR.glob("*.yaml"))
            raise PolicyError(f"unknown policy name {path_or_name!r}; shipped: {known}")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(f"cannot read policy {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise PolicyError(f"cannot read policy {str(path)!r}: not UTF-8 text (byte "
                          f"{exc.start})") from None
    return policy_from_text(text, origin=repr(str(path)))
