"""The ``finish`` tool: the agent says it is done researching.

It reads nothing; its checked arguments are its result. ``finish`` is checked, not
trusted: the workflow accepts it only if every topic of the job has a verified note, and
otherwise stops the job for a human with the uncovered topics
(docs/architecture.md#the-research-loop).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from activities.research_tools.arguments import Arguments
from activities.research_tools.tool import ArgumentTool, ToolContext

#: ``finish`` names at most this many open items, each at most this long
MAX_OPEN_ITEMS = 20
MAX_OPEN_ITEM_CHARS = 300


class FinishArguments(Arguments):
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


class FinishTool(ArgumentTool):
    name = "finish"
    arguments = FinishArguments

    async def run(self, ctx: ToolContext, arguments: Any) -> dict[str, Any]:
        del ctx
        return {"accepted": True, "summary": arguments.summary,
                "open_items": arguments.open_items}
