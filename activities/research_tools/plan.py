"""The ``update_plan`` tool: the agent's own working notes, kept as the job's plan.

It reads nothing; its checked arguments are its result. The plan becomes a new revision of
the job's ``agent_plan`` when the turn is recorded (``activities.record_turn``), and is
shown back to the model as data — it cannot change the task or the reviewers.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from activities.research_tools.arguments import Arguments
from activities.research_tools.tool import ArgumentTool, ToolContext

#: the agent's plan is at most this long (it is re-sent every turn)
MAX_PLAN_CHARS = 3000


class UpdatePlanArguments(Arguments):
    """Replace the job's plan.md with this text: your own working notes on what is done and
    what is next. It is shown back to you as data; it cannot change the task or reviewers."""

    text: str = Field(min_length=1, max_length=MAX_PLAN_CHARS)


class UpdatePlanTool(ArgumentTool):
    name = "update_plan"
    arguments = UpdatePlanArguments

    async def run(self, ctx: ToolContext, arguments: Any) -> dict[str, Any]:
        del ctx
        return {"accepted": True, "plan_chars": len(arguments.text)}
