"""Per-item memos: pure per-candidate results reused across assemblies of the same items.

Warm assembly (a retry, the next step over mostly the same candidates) should cost little
more than the bookkeeping of the set. Every per-item stage result that depends only on
the item and a small request context — the gate outcome, the source-limited item and its
block cost — is memoized per item together with its context key, and a lookup under
another key misses. The memo keeps a reference to the item itself and checks identity on
lookup, so an id can never be reused while its entry lives; items are frozen, so a hit
returns exactly what recomputing would. The memo
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
    """One slot per item: the last ``(key, value)`` stored for it.

    A slot is keyed by ``id(item)`` alone and holds ``(item, key, value)``: no key tuple
    per entry (every tuple an assembly keeps is one more object for the cyclic collector
    to visit once the call re-enables it), and a hit compares the stored key instead of
    hashing a composite one. An item asked for under another key (another policy, another
    clock) simply replaces its slot; the memos that store several kinds of result per item
    are separate instances (``SHAPES``, ``COSTS``, ``FLOORS``).
    """

    def __init__(self, max_entries: int = _MAX_ENTRIES) -> None:
        self._max = max_entries
        self._data: OrderedDict[int, tuple[object, Hashable, Any]] = OrderedDict()

    def get(self, item: object, key: Hashable) -> Any | None:
        found = self._data.get(id(item))
        if found is None or found[0] is not item or found[1] != key:
            return None
        return found[2]

    def put(self, item: object, key: Hashable, value: Any) -> None:
        self._data[id(item)] = (item, key, value)
        if len(self._data) > self._max:
            self._data.popitem(last=False)

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


GATES = ItemMemo()
SHAPES = ItemMemo()  # the source-limited item
COSTS = ItemMemo()  # the exact cost of the item's data block
FLOORS = ItemMemo()  # a proven lower bound on that cost
ENTRIES = ItemMemo()


def clear_all() -> None:
    for m in (GATES, SHAPES, COSTS, FLOORS, ENTRIES):
        m.clear()
