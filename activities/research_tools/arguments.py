"""How a research tool's arguments are modelled, shown to the model and checked — and the
limits every tool shares.

Each tool has one pydantic model for its arguments, in the tool's own module
(``listing``, ``search``, ``read``, ``note``, ``plan``, ``finish``), so the definition
offered to the model (JSON Schema from the model, ``schema_of``) and the validation of what
it sends back (``parse_with``) cannot drift apart. Limits are part of the contract: a call
over one is refused with ``arguments_over_limit`` naming it, not silently truncated —
which is why the definitions need not repeat each bound (``SERVER_VALIDATED``): the
refusal tells the model.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from activities.tool_errors import RejectionKind, ToolRejected
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


class Arguments(BaseModel):
    """The arguments of one research tool: frozen, strict, nothing unknown."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    def check(self, tool_name: str) -> None:
        """What a field's own bounds cannot say (a range's order); ``ToolRejected``."""
        del tool_name


#: bounds ``parse_with`` enforces on every call whatever the model was shown: a call over
#: one is refused with ``arguments_over_limit`` naming the bound, so stating them in the
#: definitions resent with every research turn only cost tokens
SERVER_VALIDATED = frozenset({"maxLength", "minLength", "maxItems", "minItems", "minimum",
                              "maximum"})


def schema_of(model: type[Arguments]) -> dict[str, Any]:
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


#: which field bound is a limit (``arguments_over_limit``) rather than a malformed value
_LIMIT_ERRORS = {"string_too_long", "too_long"}


def parse_with(tool_name: str, model: type[Arguments], raw: Any) -> Arguments:
    """The validated arguments of one call of ``tool_name``; ``ToolRejected`` says what is
    wrong."""
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
    arguments.check(tool_name)
    return arguments
