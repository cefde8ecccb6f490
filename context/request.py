"""``AssemblyRequest`` and its parts: everything one assembly needs, and nothing else.

The request is the whole input of the pure engine: who asks (``PrincipalContext``), for
which scope, run, step and stage, at which instant (``as_of`` — the engine has no clock),
under which ``ContextPolicy``, for which model and adapter, with which candidates,
acquisition outcomes, tool history and tool definitions, and optionally the previous
manifest of the same run (for prompt-cache status).

Invalid input raises ``RequestError`` naming the field — also for what pydantic itself
rejects (a malformed candidate, a negative ``evidence_budget``, non-UTF-8 content): the
model-level wrap validator turns pydantic's ``ValidationError`` into the engine's typed
error so callers catch one hierarchy. Semantic checks that need several fields (naive
``as_of``, duplicate item ids, a principal outside the request scope) live here too, so
the pipeline starts from a request that is known to be well-formed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_validator,
)

from context.errors import RequestError
from context.items import _ID_MAX, ContextItem, ScopeRef, SourceAcquisition, visible
from context.manifest import ContextAssemblyManifest
from context.policy import ContextPolicy
from context.tool_history import ToolDefinition, ToolHistory
from context.vocabulary import AdapterName, SecurityClass


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PrincipalContext(_Frozen):
    """Who the assembly reads for; clearance bounds the security class of admitted items."""

    principal_id: str = Field(min_length=1)
    clearance: SecurityClass
    scope: ScopeRef


class ModelSpec(_Frozen):
    provider: str = Field(min_length=1)
    name: str = Field(min_length=1)
    context_limit: int = Field(gt=0)
    api_version: str | None = None


class TopicSpec(_Frozen):
    """A topic the step needs evidence for; ``terms`` are matched case-insensitively."""

    name: str = Field(min_length=1)
    terms: tuple[str, ...] = ()
    blocking: bool = False

    @property
    def match_terms(self) -> tuple[str, ...]:
        """Lower-cased terms, the topic name included (a name is its own first term)."""
        terms = (self.name, *self.terms)
        return tuple(dict.fromkeys(t.casefold() for t in terms if t.strip()))


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:8]:
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        parts.append(f"{loc}: {err['msg']}")
    more = len(exc.errors()) - 8
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


class AssemblyRequest(_Frozen):
    run_id: str = Field(min_length=1)
    step_id: str = Field(min_length=1)
    #: at most ``_ID_MAX``, like a call id: the step's own item is ``step:<stage>``
    stage: str = Field(min_length=1, max_length=_ID_MAX)
    as_of: datetime
    principal: PrincipalContext
    scope: ScopeRef
    policy: ContextPolicy
    model: ModelSpec
    adapter: AdapterName = "openai_chat"
    question: str = Field(min_length=1)
    decision: str = ""
    required_topics: tuple[TopicSpec, ...] = ()
    required_revisions: dict[str, str] = Field(default_factory=dict)
    candidates: tuple[ContextItem, ...] = ()
    acquisitions: tuple[SourceAcquisition, ...] = ()
    tool_history: ToolHistory = ToolHistory()
    tool_definitions: tuple[ToolDefinition, ...] = ()
    previous_manifest: ContextAssemblyManifest | None = None
    evidence_budget: int | None = Field(default=None, ge=0)

    @model_validator(mode="wrap")
    @classmethod
    def _typed_errors(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(data)
        except ValidationError as exc:
            raise RequestError(f"invalid AssemblyRequest: {_describe(exc)}") from None

    @model_validator(mode="after")
    def _coherent(self) -> AssemblyRequest:
        if self.as_of.tzinfo is None:
            raise RequestError("as_of must be timezone-aware (e.g. 2026-11-29T12:00:00+00:00)")
        if not visible(self.principal.scope, self.scope):
            raise RequestError(
                f"principal {self.principal.principal_id} (scope {self.principal.scope}) "
                f"cannot assemble for scope {self.scope}"
            )
        seen: set[str] = set()
        for item in self.candidates:
            if len(item.item_id) > _ID_MAX:
                raise RequestError(f"candidate item_id {item.item_id[:40]!r}… is "
                                   f"{len(item.item_id)} characters long (max {_ID_MAX})")
            if item.item_id in seen:
                raise RequestError(f"duplicate candidate item_id {item.item_id!r}")
            seen.add(item.item_id)
        names = [t.name for t in self.required_topics]
        if len(set(names)) != len(names):
            raise RequestError(f"duplicate required topic names in {names}")
        reqs = [a.source_request_id for a in self.acquisitions]
        if len(set(reqs)) != len(reqs):
            raise RequestError("duplicate source_request_id in acquisitions")
        return self

