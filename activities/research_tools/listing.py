"""The ``list`` tool: the files and folders of a declared source under one folder.

What a folder holds but may not be read (a link out of the roots, a FIFO, a file over the
size limit) is listed apart with the reason, never dropped silently. A listing shows no
lines, so nothing in it can be cited.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from activities.research_tools.arguments import MAX_LIST_ENTRIES, Arguments
from activities.research_tools.source_files import SourceFiles, confine
from activities.research_tools.source_tools import SourceTool
from activities.tool_errors import RejectionKind, ToolRejected


class ListArguments(Arguments):
    """List the files and folders of a declared source under a folder (its root by default)."""

    source: str = Field(min_length=1, max_length=64, description="a declared source's name")
    path: str = Field(default="", max_length=1000,
                      description="a folder inside the source, relative; empty for its root")


class ListTool(SourceTool):
    name = "list"
    arguments = ListArguments

    async def over(self, files: SourceFiles, arguments: Any) -> dict[str, Any]:
        folder = confine(arguments.path)
        prefix = f"{folder}/" if folder else ""
        below = [p for p in files.paths() if p.startswith(prefix)]
        if folder and not below:
            kind: RejectionKind = ("not_found" if folder in files.paths()
                                   else "path_outside_source")
            raise ToolRejected(kind, f"{files.name}:{folder} is not a folder of this source")
        entries = sorted({p[len(prefix):].split("/", 1)[0]
                          + ("/" if "/" in p[len(prefix):] else "") for p in below})
        listed: dict[str, Any] = {"source": files.name, "path": folder,
                                  "entries": entries[:MAX_LIST_ENTRIES],
                                  "truncated": len(entries) > MAX_LIST_ENTRIES}
        # what the folder holds but is not read (a link out of the roots, a FIFO, a file
        # over the size limit), with why: never dropped silently
        excluded = [{"path": path, "reason": reason} for path, reason in files.excluded()
                    if path.startswith(prefix)]
        if excluded:
            listed["excluded"] = excluded[:MAX_LIST_ENTRIES]
        return listed
