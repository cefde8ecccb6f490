"""``CallBudget``: what one source tool call may spend — regex time and bytes read — in total.

Why this exists: a worker runs every job's activities on one event loop, and a research
turn may ask for several tool calls at once. A limit per line or per file still lets one
call run for as long as it has lines (a pattern that takes 70 ms a line over a 200-line
file held its caller for 15 s), and a limit per file still lets one call read every file
of a repository into memory (a small repository of highly compressible blobs expands to
hundreds of megabytes). So each call gets one budget for everything it touches
(SECURITY.md, "A tool call cannot hold a worker"):

* at most ``MAX_REGEX_SECONDS`` of matching over all its lines and files, after which the
  call ends as an ``arguments_over_limit`` refusal saying so — a typed, stored result the
  model sees next turn, never a crash;
* at most ``MAX_CALL_BYTES`` of file content read or held, after which the files not yet
  read are skipped and listed in the result with the reason, never silently.

The budget is used by one call at a time, from the thread that runs its search
(``source_tools``), so it needs no lock.
"""

from __future__ import annotations

import time

#: the most wall time one call spends matching its pattern, over all lines and files
MAX_REGEX_SECONDS = 2.0
#: the most bytes of file content one call reads (a turn's calls run at once, so a few
#: calls together stay far below the worker's memory)
MAX_CALL_BYTES = 16_000_000


class CallBudget:
    """The regex time and bytes one call has left, and what it skipped for want of them."""

    def __init__(self, *, regex_seconds: float = MAX_REGEX_SECONDS,
                 max_bytes: int = MAX_CALL_BYTES) -> None:
        self.regex_seconds = regex_seconds
        self.max_bytes = max_bytes
        #: bytes of file content this call has read (or taken from the worker's cache)
        self.bytes_read = 0
        #: (path, reason) of every file a limit kept this call from reading
        self.skipped: list[tuple[str, str]] = []
        self._deadline: float | None = None

    def fits(self, size: int) -> bool:
        """Whether ``size`` more bytes stay within the call's byte budget."""
        return self.bytes_read + size <= self.max_bytes

    def spend(self, size: int) -> None:
        self.bytes_read += size

    def skip(self, path: str, reason: str) -> None:
        self.skipped.append((path, reason))

    def over_budget(self) -> str:
        """The reason a file is skipped once the byte budget cannot hold it."""
        return f"the call's read budget of {self.max_bytes} bytes is spent"

    def regex_left(self) -> float:
        """Seconds of matching left (the clock starts at the first ask);
        ``TimeoutError`` once none are, as ``regex`` raises when a match runs out."""
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + self.regex_seconds
        left = self._deadline - now
        if left <= 0:
            raise TimeoutError("regex time budget spent")
        return left


__all__ = ["MAX_CALL_BYTES", "MAX_REGEX_SECONDS", "CallBudget"]
