"""The job spec: what a user asks Pressroom to research, and under which rules.

A job spec is validated completely before anything starts (``load_job_spec`` raises
``JobSpecError`` naming the offending field), so a typo never becomes a half-run job. It is
the workflow's input and the first artifact a job writes; it is small by construction
(paths and pins, never source content), which keeps workflow history reference-sized.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from context.file_errors import (
    Position,
    file_problems,
    load_yaml,
    one_line,
    schema_words,
    yaml_positions,
    yaml_problem,
)
from context.policy import is_policy_name
from context.vocabulary import AdapterName, SecurityClass
from contracts.errors import JobSpecError
from contracts.identifiers import StoreName
from contracts.lineage import ForkLineage
from contracts.mcp_servers import ToolGrant
from contracts.signing import SignatureError, normalize_name, parse_public_key
from contracts.source_specs import SourceSpec

_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_TIMEDELTA: TypeAdapter[timedelta] = TypeAdapter(timedelta)
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}
_MAX_SECONDS = timedelta.max.total_seconds()


def parse_duration(value: object) -> timedelta:
    """``30``, ``"30s"``, ``"10m"``, ``"2h"``, ``"7d"`` or a timedelta → timedelta > 0."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value) if abs(value) <= _MAX_SECONDS else math.inf
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
    elif isinstance(value, str) and value.strip().upper().startswith("P"):
        # ISO 8601 ("PT30S"): how pydantic serializes a timedelta in JSON payloads
        try:
            seconds = _TIMEDELTA.validate_python(value.strip()).total_seconds()
        except ValidationError:
            raise ValueError(f"not a duration: {value!r}") from None
    else:
        raise ValueError(f"not a duration: {value!r} (use seconds or e.g. '30s', '10m', '7d')")
    if seconds <= 0:
        raise ValueError(f"duration must be positive, got {value!r}")
    if not math.isfinite(seconds) or seconds > _MAX_SECONDS:
        raise ValueError("duration is out of range (at most 999999999 days)")
    return timedelta(seconds=seconds)


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


#: text that must say something: not empty, not only whitespace
_Text = Annotated[str, AfterValidator(_not_blank)]


class TopicSpec(_Spec):
    """A topic the article must cover; its terms drive relevance and ``missing_topics``.

    The name and every term must say something: a blank term matches everything (or
    nothing) and used to fail research on every retry."""

    name: _Text = Field(min_length=1)
    terms: list[_Text] = Field(min_length=1)
    blocking: bool = False


#: a topic name written as an identifier (``backoff_formula``, ``rate-limits``)
_IDENTIFIER = re.compile(r"^[a-z0-9]+(?:[_-][a-z0-9]+)*$")


def topic_heading(name: str) -> str:
    """A topic name as a reader's heading: an identifier as words (``backoff_formula`` →
    "Backoff formula"), any other name as written ("Retry-After header" keeps its hyphen).
    The draft's sections carry it (``activities.providers.extractive``) and the review page
    shows a model's bare-identifier heading through it (``webconsole.draft_html``)."""
    if not _IDENTIFIER.match(name):
        return name
    text = " ".join(name.replace("_", " ").replace("-", " ").split())
    return text[:1].upper() + text[1:]


class PrincipalSpec(_Spec):
    """The identity the job acts as. It may never approve its own draft."""

    principal_id: StoreName = Field(min_length=1)
    clearance: SecurityClass = SecurityClass.INTERNAL


class ScopeSpec(_Spec):
    """Where the job's records live; each part is a store identifier (``StoreName``)."""

    tenant: StoreName = Field(min_length=1)
    project: StoreName = Field(min_length=1)
    task: StoreName = Field(min_length=1)


class ReviewerSpec(_Spec):
    """A reviewer (or operator): a name and the Ed25519 public key that proves it.

    ``public_key`` is ``ed25519:<base64>`` as ``pressroom reviewer keygen`` prints it. A spec
    file may give the name alone; ``pressroom run`` then pins the key from the operator's
    reviewer registry (``$PRESSROOM_HOME/reviewers/NAME.pub``) into the spec it submits, and
    a job is never started with a reviewer whose key is unknown (SECURITY.md). The name is
    the principal of the decisions the reviewer records, so the store's rule applies
    (``StoreName``: no ``/``, no surrounding whitespace, …).
    """

    name: StoreName = Field(min_length=1, max_length=200)
    public_key: str | None = Field(default=None, max_length=100)

    @field_validator("name")
    @classmethod
    def _printable(cls, value: str) -> str:
        if not value.strip() or any(not c.isprintable() for c in value):
            raise ValueError("a reviewer name must be printable text")
        return value

    @field_validator("public_key")
    @classmethod
    def _key_shape(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_public_key(value)
            except SignatureError as exc:
                raise ValueError(str(exc)) from None
        return value


def _repeated(names: list[str]) -> tuple[int, int] | None:
    """The positions of the first name listed twice, or ``None``."""
    first: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in first:
            return first[name], index
        first[name] = index
    return None


def _reviewer_shorthand(value: object) -> object:
    """``[alice, {name: bob, public_key: ...}]``: a bare string is a name to resolve."""
    if isinstance(value, list):
        return [{"name": item} if isinstance(item, str) else item for item in value]
    return value


class ReviewSpec(_Spec):
    """Who may review, how long the job waits, and how many revise rounds are allowed.

    ``reviewers`` may approve, request changes, reject and resolve; ``operators`` may only
    resolve and cancel. Each signs with the key listed here (contracts/signing.py).
    """

    reviewers: list[ReviewerSpec] = Field(min_length=1)
    operators: list[ReviewerSpec] = Field(default_factory=list)
    timeout: timedelta = timedelta(days=7)
    max_revisions: int = Field(default=3, ge=0, le=50)

    @field_validator("timeout", mode="before")
    @classmethod
    def _duration(cls, value: object) -> timedelta:
        return parse_duration(value)

    @field_validator("reviewers", "operators", mode="before")
    @classmethod
    def _names(cls, value: object) -> object:
        return _reviewer_shorthand(value)

    @model_validator(mode="after")
    def _distinct(self) -> ReviewSpec:
        for field, people in (("reviewers", self.reviewers), ("operators", self.operators)):
            names = [normalize_name(person.name) for person in people]
            twice = _repeated(names)
            if twice:
                # by position: the names may come from a file, and their normalized form
                # is not what the file holds (the file error scrubber would miss it)
                raise ValueError(f"{field}: the same name listed twice (entries {twice[0]} "
                                 f"and {twice[1]}; names are compared case-folded)")
        return self

    def reviewer_names(self) -> list[str]:
        return [person.name for person in self.reviewers]

    def unpinned(self) -> list[str]:
        """Names listed without a public key (``pressroom run`` pins them from the registry)."""
        return [p.name for p in (*self.reviewers, *self.operators) if p.public_key is None]

    def signers(self, *, operators: bool) -> dict[str, list[str]]:
        """Normalized name → listed public keys: reviewers, plus operators if asked."""
        allowed: dict[str, list[str]] = {}
        for person in (*self.reviewers, *(self.operators if operators else ())):
            if person.public_key is not None:
                allowed.setdefault(normalize_name(person.name), []).append(person.public_key)
        return allowed


class ModelSpecInput(_Spec):
    """Which provider drafts; ``extractive`` is the offline deterministic default."""

    provider: str = "extractive"
    name: str = "extractive-v1"
    context_limit: int = Field(default=32_000, gt=0)
    adapter: AdapterName = "openai_chat"
    #: attempts of one research turn's model call (a rate limit's ``Retry-After`` sets the
    #: wait between them); when they are used up the job blocks (``model_call_failed``)
    #: until ``resolve`` retries, instead of retrying for ever
    max_attempts: int = Field(default=5, ge=1, le=50)
    #: an OpenAI-compatible server for this job (provider ``openai``): one the operator
    #: lists in ``PRESSROOM_MODEL_ENDPOINTS`` (``contracts.model_endpoints``), never an
    #: arbitrary URL; ``None``: the worker's default endpoint
    base_url: str | None = Field(default=None, min_length=1, max_length=2000)

    @field_validator("base_url")
    @classmethod
    def _url_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^\s/?#]+(?:/[^\s?#]*)?$",
                                              value.strip(), re.IGNORECASE):
            raise ValueError("must be an http:// or https:// URL without a query")
        return value

    @model_serializer(mode="wrap")
    def _omit_unset_url(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A spec without a base_url serializes exactly as before the field existed: the
        # stored spec's hash is checked on every continued run (activities.store_activities)
        data: dict[str, Any] = handler(self)
        if data.get("base_url") is None:
            data.pop("base_url", None)
        return data


class RuntimeSpec(_Spec):
    """Knobs for the durable runtime; defaults suit production, tests shorten them."""

    heartbeat_timeout: timedelta = timedelta(seconds=20)
    activity_timeout: timedelta = timedelta(minutes=10)
    #: continue-as-new once history holds this many events (Temporal's hard limit is
    #: 51,200; the server also suggests it earlier, which is honoured too).
    continue_as_new_events: int = Field(default=10_000, ge=50)

    @field_validator("heartbeat_timeout", "activity_timeout", mode="before")
    @classmethod
    def _duration(cls, value: object) -> timedelta:
        return parse_duration(value)


#: the longest ``search`` query the research tools take (``activities.research_tools``): a
#: topic term longer than this cannot be searched for (``contracts.spec_check``)
MAX_SEARCH_QUERY_CHARS = 200

#: the validation context key under which a spec is checked for submission
#: (``parse_job_spec``, ``recheck_job_spec``): what only a new job is refused — a retired
#: research mode — is refused there, while a workflow's own input, read back from its
#: history, is not
SUBMITTING = "submitting"

#: the most turns a job may ask for (a job past it is a runaway, not research)
MAX_RESEARCH_TURNS = 1000


class ResearchSpec(_Spec):
    """How the research stage runs (docs/architecture.md#the-research-loop).

    A loop of model turns — assemble, decide, run the tool calls the model asked for,
    record — until the model calls ``finish`` (checked against the notes), the turn limit,
    or the token budget. ``mode`` is ``agent``, the only mode a job may be submitted with:
    ``acquire`` (one batch acquisition of every source, the runtime before the loop) was
    retired, and is still read only so that the histories of jobs started with it replay
    (``SUBMITTING``; README.md, "Upgrading").
    """

    mode: Literal["agent", "acquire"] = "agent"
    max_turns: int = Field(default=40, ge=1, le=MAX_RESEARCH_TURNS)
    @field_validator("mode")
    @classmethod
    def _acquire_is_retired(cls, value: str, info: ValidationInfo) -> str:
        if value == "acquire" and (info.context or {}).get(SUBMITTING):
            raise ValueError(
                "research.mode 'acquire' was retired: research runs as the loop of tool "
                "calls (list, search, read, note); remove `mode:` from the spec")
        return value

    #: input + output tokens across every research turn; exhausting it blocks the job
    #: (``budget_exhausted``) until ``resolve`` raises it or accepts what was gathered
    token_budget: int = Field(default=2_000_000, ge=1)
    #: USD across every research turn's model calls, priced by the worker's price table
    #: (contracts/pricing.py; docs/configuration.md#cost-in-money); exhausting it blocks the
    #: job like the token budget. ``None``: no money limit. A model without a known price is
    #: refused at submit when it is set
    cost_budget_usd: Decimal | None = Field(default=None, gt=0, le=1_000_000,
                                            decimal_places=6)
    #: continue-as-new after this many turns, so history per run stays flat
    turns_per_run: int = Field(default=20, ge=1, le=MAX_RESEARCH_TURNS)
    #: a checkpoint every this many turns (and whenever history is cleared or compacted)
    checkpoint_every: int = Field(default=5, ge=1)
    #: a model reply asking for more calls than this gets the rest refused
    max_calls_per_turn: int = Field(default=8, ge=1, le=32)


class JobSpec(_Spec):
    """A research job. ``job_id`` is also the Temporal workflow id."""

    job_id: StoreName = Field(pattern=_ID)
    question: _Text = Field(min_length=1)
    topics: list[TopicSpec] = Field(min_length=1)
    principal: PrincipalSpec
    scope: ScopeSpec
    sources: list[SourceSpec] = Field(min_length=1)
    forbidden_actions: list[str] = Field(default_factory=list)
    destination: str = Field(min_length=1)
    policy: str = "default"
    review: ReviewSpec
    #: Optional override of the policy's ``blocking.block_timeout``; it can only shorten
    #: the wait (the shorter of the two applies), never extend what the policy allows.
    block_timeout: timedelta | None = None
    workspace: str | None = None
    model: ModelSpecInput = ModelSpecInput()
    runtime: RuntimeSpec = RuntimeSpec()
    research: ResearchSpec = ResearchSpec()
    #: the operator-defined MCP servers and tools the job may call (``contracts.mcp_servers``)
    tools: list[ToolGrant] = Field(default_factory=list, max_length=20)
    #: a forked job's origin and signed edits (``pressroom fork``; contracts/lineage.py);
    #: set only by ``contracts.fork.fork_spec``, never in a submitted spec
    lineage: ForkLineage | None = None

    @model_serializer(mode="wrap")
    def _omit_no_lineage(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a job that is no fork serializes exactly as before the field existed (its stored
        # spec's hash is checked on every continued run, as for ``model.base_url``)
        data: dict[str, Any] = handler(self)
        if data.get("lineage") is None:
            data.pop("lineage", None)
        return data

    @field_validator("block_timeout", mode="before")
    @classmethod
    def _duration(cls, value: object) -> timedelta | None:
        return None if value is None else parse_duration(value)

    @field_validator("principal", mode="before")
    @classmethod
    def _principal_shorthand(cls, value: object) -> object:
        return {"principal_id": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _consistent(self) -> JobSpec:
        principal = normalize_name(self.principal.principal_id)
        reviewers = [normalize_name(name) for name in self.review.reviewer_names()]
        if principal in reviewers:
            raise ValueError(
                f"review.reviewers: entry {reviewers.index(principal)} is the job's own "
                "principal, which can never review its own draft (names are compared "
                "case-folded)"
            )
        twice = _repeated([s.name for s in self.sources])
        if twice:
            raise ValueError(f"sources: duplicate source names (entries {twice[0]} and "
                             f"{twice[1]})")
        topics = [t.name for t in self.topics]
        if len(set(topics)) != len(topics):
            raise ValueError("topics: duplicate topic names")
        return self

    def source_named(self, name: str) -> Any:
        for source in self.sources:
            if source.name == name:
                return source
        raise KeyError(f"no source named {name!r} in job {self.job_id}")


def yaml_error_line(exc: yaml.YAMLError) -> str:
    """A YAML error as one line: the problem and where (PyYAML's own text spans lines),
    quoting nothing from the document (``context.file_errors.yaml_problem``)."""
    return yaml_problem(exc)


def _error_parts(exc: ValidationError, *, data: object = None,
                 positions: Mapping[Position, int] | None = None) -> list[str]:
    """One entry per error; read from a file (``positions`` given), each names its field
    and line and quotes no value or key of the file (``context.file_errors``)."""
    if positions is not None:
        return list(file_problems(exc, data=data, positions=positions, model=JobSpec))
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "<root>"
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(one_line(f"field '{field}': {msg}"))
    return parts


def _format_error(exc: ValidationError, origin: str, *, data: object = None,
                  positions: Mapping[Position, int] | None = None) -> JobSpecError:
    """The errors as one ``JobSpecError`` line, with each one in its ``problems``."""
    parts = _error_parts(exc, data=data, positions=positions)
    return JobSpecError(one_line(f"invalid job spec {origin}: " + "; ".join(parts)),
                        problems=tuple(parts))


def _absolutize(raw: dict[str, Any], base: Path) -> dict[str, Any]:
    """Resolve relative local paths against the spec file's folder (URLs are left alone)."""

    def fix(value: object) -> object:
        if not isinstance(value, str) or value.startswith("git@") or any(
            marker in value for marker in ("://", "${")
        ):
            return value
        path = Path(value).expanduser()
        return str(path if path.is_absolute() else (base / path).resolve())

    out = dict(raw)
    for key in ("destination", "workspace"):
        if key in out:
            out[key] = fix(out[key])
    if isinstance(out.get("policy"), str) and not is_policy_name(out["policy"]):
        out["policy"] = fix(out["policy"])  # a policy file, not a shipped policy's name
    if isinstance(out.get("sources"), list):
        fixed = []
        for src in out["sources"]:
            if isinstance(src, dict):
                src = dict(src)
                for key in ("path", "repo"):
                    if key in src:
                        src[key] = fix(src[key])
            fixed.append(src)
        out["sources"] = fixed
    return out


def parse_job_spec(
    data: object, *, origin: str = "<input>", base_dir: Path | None = None,
    positions: Mapping[Position, int] | None = None,
) -> JobSpec:
    """Validate a mapping into a ``JobSpec``; ``JobSpecError`` names the bad field.

    ``positions`` (the file's ``yaml_positions``) says ``data`` was read from a file: the
    error then names lines and quotes nothing the file holds.
    """
    if not isinstance(data, dict):
        raise JobSpecError(f"invalid job spec {origin}: expected a mapping at the top level")
    raw = data
    if base_dir is not None:
        data = _absolutize(data, base_dir)
    try:
        return JobSpec.model_validate(data, context={SUBMITTING: True})
    except ValidationError as exc:
        raise _format_error(exc, origin, data=[raw, data], positions=positions) from None


def recheck_job_spec(spec: JobSpec) -> JobSpec:
    """``spec`` validated again, field by field, as ``parse_job_spec`` would.

    A ``JobSpec`` object may have skipped validation (``model_copy(update=...)`` and
    ``model_construct`` do not validate), so whatever submits a job calls this first
    (``client.jobs.start_job``): a name the store would refuse is one
    ``JobSpecError`` at submit, never a retry loop on a worker.
    """
    try:
        return JobSpec.model_validate(spec.model_dump(), context={SUBMITTING: True})
    except ValidationError as exc:
        raise _format_error(exc, f"of job {spec.job_id!r}") from None


#: the largest job spec file read (the example is under 2 KB; a long question and fifty
#: sources fit in a few dozen)
MAX_JOB_SPEC_BYTES = 256 * 1024


def load_job_spec(path: str | Path) -> JobSpec:
    """Read and validate a job spec YAML file (relative paths are relative to the file)."""
    p = Path(path)
    try:
        with p.open("rb") as handle:
            # The size first: PyYAML's pure-Python scanner takes ~3 s per MB, three passes
            # (shape, load, positions) — a huge file must be refused, not parsed.
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(MAX_JOB_SPEC_BYTES + 1)
        if max(size, len(data)) > MAX_JOB_SPEC_BYTES:
            raise JobSpecError(f"job spec {p} is over {MAX_JOB_SPEC_BYTES} bytes; a job spec "
                               "names its sources, it does not hold them")
        text = data.decode("utf-8")
    except OSError as exc:
        raise JobSpecError(f"cannot read job spec {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise JobSpecError(f"cannot read job spec {p}: not UTF-8 text (byte {exc.start})"
                           ) from None
    try:
        data = load_yaml(text, vocabulary=schema_words(JobSpec)[0])
    except yaml.YAMLError as exc:
        raise JobSpecError(f"job spec {p} is not valid YAML: {yaml_error_line(exc)}") from None
    return parse_job_spec(data, origin=str(p), base_dir=p.resolve().parent,
                          positions=yaml_positions(text))
