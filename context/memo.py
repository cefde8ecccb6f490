"""Per-item memos: pure per-candidate results reused across assemblies of the same items.

Warm assembly (a retry, the next step over mostly the same candidates) should cost little
more than the bookkeeping of the set. Every per-item stage result that depends only on
the item and a small request context — the gate outcome, the source-limited item and its
block cost — is memoized under ``(id(item), context key)``. The memo keeps a reference to
the item itself and checks identity on lookup, so an id can never be reused while its
entry lives; items are frozen, so a hit returns exactly what recomputing would. The memo
is bounded (first in, first out: 60,000 entries, enough for a few assemblies of 10,000
candidates without pinning a long-running worker's memory) and ``context.reset_caches()``
clears it; results never depend on it. Every operation is a single dict operation, so
concurrent assemblies in threads (the activity runs ``assemble`` via ``to_thread``) can
share it safely under the GIL.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

_MAX_ENTRIES = 60_000


class ItemMemo:
    def __init__(self, max_entries: int = _MAX_ENTRIES) -> None:
        self._max = max_entries
        self._data: OrderedDict[tuple[int, Hashable], tuple[object, Any]] = OrderedDict()

    def get(self, item: object, key: Hashable) -> Any | None:
        found = self._data.get((id(item), key))
        if found is None or found[0] is not item:
            return None
        return found[1]

    def put(self, item: object, key: Hashable, value: Any) -> None:
        self._data[(id(item), key)] = (item, value)
        if len(self._data) > self._max:
            self._data.popitem(last=False)

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


GATES = ItemMemo()
LIMITS = ItemMemo()
ENTRIES = ItemMemo()


def clear_all() -> None:
    GATES.clear()
    LIMITS.clear()
    ENTRIES.clear()
