"""What a worker parsed out of verified artifact bytes, kept by the bytes' content hash.

Every step re-reads the revisions a job holds (the store or the worker cache re-hashes
the bytes each time) and used to re-parse them too: the evidence pack into context items,
the source records into acquisitions, the tool records into a tool history, the job spec
into its rendered text — the same bytes giving the same objects four times per job.
A parse is a pure function of the bytes (and of the few inputs named in its key, such as
the scope), so its result is kept under the content hash of the bytes it came from;
a different body has a different hash and is parsed afresh. The values are frozen
objects or tuples and must be treated as read-only by every caller.

Nothing here skips a check: the bytes are still read and verified against their content
hash before the key is formed, and the context engine still admits every item anew.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

#: Parsed values kept per worker (a job holds a handful; a worker runs many jobs).
PARSED_ENTRIES = 512


class ParsedCache:
    def __init__(self, entries: int = PARSED_ENTRIES) -> None:
        self._values: OrderedDict[tuple[Hashable, ...], Any] = OrderedDict()
        self._entries = entries

    def get(self, what: str, content_hash: str, parse: Callable[[], T],
            *inputs: Hashable) -> T:
        """``parse()``'s value for the bytes hashing to ``content_hash`` (and ``inputs``)."""
        key = (what, content_hash, *inputs)
        if key in self._values:
            self._values.move_to_end(key)
            value: T = self._values[key]
            return value
        value = parse()
        self._values[key] = value
        while len(self._values) > self._entries:
            self._values.popitem(last=False)
        return value


PARSED = ParsedCache()

__all__ = ["PARSED", "PARSED_ENTRIES", "ParsedCache"]
