"""The ``read`` tool: lines ``start_line`` to ``end_line`` of one file of a declared source,
at the revision the source is pinned to (a commit, or the file's content hash).

Every line a read returned may be cited by a note, at the path and revision the result
names. One read returns at most ``MAX_READ_LINES`` lines, and at most what the job
policy's source limit for the source's kind allows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from activities.call_budget import CallBudget
from activities.research_tools.arguments import MAX_READ_LINES, Arguments
from activities.research_tools.source_files import SourceFiles, confine
from activities.research_tools.source_tools import SourceTool
from activities.tool_errors import ToolRejected
from contracts.source_specs import SourceSpec


class ReadArguments(Arguments):
    """Read lines start_line to end_line (1-based, inclusive) of one file of a declared source."""

    source: str = Field(min_length=1, max_length=64, description="a declared source's name")
    path: str = Field(min_length=1, max_length=1000)
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)

    def check(self, tool_name: str) -> None:
        if self.end_line < self.start_line:
            raise ToolRejected("malformed_arguments",
                               f"{tool_name}.end_line {self.end_line} is before start_line "
                               f"{self.start_line}")
        if self.end_line - self.start_line + 1 > MAX_READ_LINES:
            raise ToolRejected("arguments_over_limit",
                               f"{tool_name} asks for {self.end_line - self.start_line + 1}"
                               f" lines; at most {MAX_READ_LINES} per call")


class ReadTool(SourceTool):
    name = "read"
    arguments = ReadArguments

    def check_limits(self, source: SourceSpec, arguments: Any,
                     limits: Mapping[str, int]) -> None:
        limit = limits.get(source.kind, MAX_READ_LINES)
        asked = arguments.end_line - arguments.start_line + 1
        if asked > limit:
            raise ToolRejected("arguments_over_limit",
                               f"read asks for {asked} lines; the job's policy allows at "
                               f"most {limit} per read of a {source.kind} source")

    async def over(self, files: SourceFiles, arguments: Any) -> dict[str, Any]:
        path = confine(arguments.path)
        if path not in files.paths():
            raise ToolRejected("not_found", f"{files.name}:{path} is no file of this source")
        budget = CallBudget()
        await files.prefetch([path], budget)
        revision, lines = await asyncio.to_thread(files.load, path, budget)
        if arguments.start_line > len(lines):
            raise ToolRejected("not_found", f"{files.name}:{path} has {len(lines)} lines; "
                                            f"start_line {arguments.start_line} is past its end")
        end = min(arguments.end_line, len(lines))
        return {"source": files.name, "path": path, "revision": revision,
                "start_line": arguments.start_line, "end_line": end,
                "total_lines": len(lines), "lines": lines[arguments.start_line - 1:end]}

    def citable_lines(self, arguments: Mapping[str, Any], content: Mapping[str, Any],
                      source: str, revision: str, path: str) -> dict[int, str]:
        if (arguments.get("source") != source or content["path"] != path
                or content["revision"] != revision):
            return {}
        first = int(content["start_line"])
        return {first + offset: text for offset, text in enumerate(content["lines"])}
