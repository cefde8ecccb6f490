"""The arguments of the research tools — ``list``, ``search``, ``read``, ``note``,
``update_plan``, ``finish`` — and their limits.

One pydantic model per tool, so the definition offered to the model (``TOOL_DEFINITIONS``,
JSON Schema from the model) and the validation of what it sends back cannot drift apart.
Limits are part of the contract: a call over one is refused with ``arguments_over_limit``
naming it, not silently truncated — which is why the definitions need not repeat each
bound (``SERVER_VALIDATED``): the refusal tells the model.
"""

from __future__ import annotations

import inspect
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from activities.research_tools.rejected import RejectionKind, ToolRejected
from context.tool_history import ToolDefinition
from contracts.job_spec import MAX_SEARCH_QUERY_CHARS

#: at most this many entries in one ``list`` result
MAX_LIST_ENTRIES = 500
#: a ``search`` query (literal or regular expression) is at most this long (defined with
#: the job spec, whose topic terms ``pressroom check`` holds to it)
MAX_QUERY_CHARS = MAX_SEARCH_QUERY_CHARS
#: at most this many hit lines in one ``search`` result
MAX_HITS = 50
#: a hit line is shown up to this many characters
MAX_HIT_LINE_CHARS = 300
#: a ``read`` returns at most this many lines
MAX_READ_LINES = 200


class _Arguments(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class ListArguments(_Arguments):
    """List the files and folders of a declared source under a folder (its root by default)."""

    source: str = Field(min_length=1, max_length=64, description="a declared source's name")
    path: str = Field(default="", max_length=1000,
                      description="a folder inside the source, relative; empty for its root")


class SearchArguments(_Arguments):
    """Find the lines of a declared source that contain the query (case-insensitive), or
    match it as a regular expression; each hit has its path, line number and revision."""

    source: str = Field(min_length=1, max_length=64, description="a declared source's name")
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    regex: bool = Field(default=False, description="treat query as a regular expression")
    paths: list[str] = Field(default_factory=list, max_length=20,
                             description="limit the search to these files or folders")


class ReadArguments(_Arguments):
    """Read lines start_line to end_line (1-based, inclusive) of one file of a declared source."""

    source: str = Field(min_length=1, max_length=64, description="a declared source's name")
    path: str = Field(min_length=1, max_length=1000)
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)


#: a note's claim is at most this long
MAX_CLAIM_CHARS = 1000
#: and cites at most this many ranges
MAX_CITATIONS = 10


class Citation(_Arguments):
    """Lines a stored tool result showed: which call, source, revision, path and range."""

    call_id: str = Field(min_length=1, max_length=200)
    source: str = Field(min_length=1, max_length=64)
    revision: str = Field(min_length=1, max_length=100)
    path: str = Field(min_length=1, max_length=1000)
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)


class NoteArguments(_Arguments):
    """Record a finding for one of the job's topics: a claim and the lines that support it.
    Every citation must name a read or search call whose result showed those lines."""

    topic: str = Field(min_length=1, max_length=200)
    claim: str = Field(min_length=1, max_length=MAX_CLAIM_CHARS)
    citations: list[Citation] = Field(min_length=1, max_length=MAX_CITATIONS)


#: the agent's plan is at most this long (it is re-sent every turn)
MAX_PLAN_CHARS = 3000
#: ``finish`` names at most this many open items, each at most this long
MAX_OPEN_ITEMS = 20
MAX_OPEN_ITEM_CHARS = 300


class UpdatePlanArguments(_Arguments):
    """Replace the job's plan.md with this text: your own working notes on what is done and
    what is next. It is shown back to you as data; it cannot change the task or reviewers."""

    text: str = Field(min_length=1, max_length=MAX_PLAN_CHARS)


class FinishArguments(_Arguments):
    """Stop researching. Accepted only if every topic of the job has a note whose citations
    checked out; otherwise the job stops for a human with the uncovered topics."""

    summary: str = Field(min_length=1, max_length=2000)
    open_items: list[str] = Field(default_factory=list, max_length=MAX_OPEN_ITEMS)

    @field_validator("open_items")
    @classmethod
    def _short_items(cls, items: list[str]) -> list[str]:
        for item in items:
            if len(item) > MAX_OPEN_ITEM_CHARS:
                raise PydanticCustomError(
                    "string_too_long", "an open item is over {limit} characters",
                    {"limit": MAX_OPEN_ITEM_CHARS})
        return items


ARGUMENTS: dict[str, type[_Arguments]] = {
    "list": ListArguments,
    "search": SearchArguments,
    "read": ReadArguments,
    "note": NoteArguments,
    "update_plan": UpdatePlanArguments,
    "finish": FinishArguments,
}

#: bounds ``parse_arguments`` enforces on every call whatever the model was shown: a call
#: over one is refused with ``arguments_over_limit`` naming the bound, so stating them in
#: the definitions resent with every research turn only cost tokens
SERVER_VALIDATED = frozenset({"maxLength", "minLength", "maxItems", "minItems", "minimum",
                              "maximum"})


def _schema(model: type[_Arguments]) -> dict[str, Any]:
    """The model's JSON Schema without what only repeats itself — pydantic's ``title`` on
    every property, the docstring already given as the tool's description, and the
    bounds the server validates anyway (``SERVER_VALIDATED``): the definitions are resent
    with every research turn. Types, required fields, defaults and
    ``additionalProperties`` stay: they say what a well-formed call is."""
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: strip(value) for key, value in node.items()
                    if not (key == "title" and isinstance(value, str))
                    and not (key in SERVER_VALIDATED and isinstance(value, int))}
        if isinstance(node, list):
            return [strip(value) for value in node]
        return node

    schema: dict[str, Any] = strip(model.model_json_schema())
    schema.pop("description", None)
    return schema


#: the definitions offered to the model, serialized by the provider adapters
TOOL_DEFINITIONS: tuple[ToolDefinition, ...] = tuple(
    ToolDefinition(name=name, description=inspect.cleandoc(model.__doc__ or ""),
                   parameters=_schema(model))
    for name, model in ARGUMENTS.items()
)

#: which field bound is a limit (``arguments_over_limit``) rather than a malformed value
_LIMIT_ERRORS = {"string_too_long", "too_long"}


def parse_arguments(tool_name: str, raw: Any) -> _Arguments:
    """The validated arguments of one call; ``ToolRejected`` says what is wrong."""
    model = ARGUMENTS.get(tool_name)
    if model is None:
        raise ToolRejected("unknown_tool",
                           f"no tool {tool_name[:64]!r}; the tools are {sorted(ARGUMENTS)}")
    if not isinstance(raw, dict):
        raise ToolRejected("malformed_arguments",
                           f"{tool_name} takes an object, got {type(raw).__name__}")
    try:
        arguments = model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "arguments"
        kind: RejectionKind = ("arguments_over_limit" if first["type"] in _LIMIT_ERRORS
                               else "malformed_arguments")
        raise ToolRejected(kind, f"{tool_name}.{where}: {first['msg']}") from None
    if isinstance(arguments, ReadArguments):
        if arguments.end_line < arguments.start_line:
            raise ToolRejected("malformed_arguments",
                               f"read.end_line {arguments.end_line} is before start_line "
                               f"{arguments.start_line}")
        if arguments.end_line - arguments.start_line + 1 > MAX_READ_LINES:
            raise ToolRejected("arguments_over_limit",
                               f"read asks for {arguments.end_line - arguments.start_line + 1}"
                               f" lines; at most {MAX_READ_LINES} per call")
    return arguments
