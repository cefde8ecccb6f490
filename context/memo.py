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

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Any, Generic, TypeVar

V = TypeVar("V")

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


class TextMemo(Generic[V]):
    """A value derived from a text, keyed by the text itself: first in, first out, bounded
    by the characters it pins (``max_chars``), so large texts cannot pile up.

    Lookups are single dict operations (safe beside other threads under the GIL); inserts
    and evictions happen under a lock. A text whose charge is above the bound is not kept.
    Used where a warm assembly asks again about the very strings it built before: their
    escaped JSON (``context.canonical``) and their count-cache digests
    (``context.tokens``).
    """

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self._data: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> V | None:
        found = self._data.get(text)
        return None if found is None else found[0]

    def put(self, text: str, value: V, chars: int) -> None:
        """Keep ``value`` for ``text``, charged ``chars`` against the bound."""
        with self._lock:
            if text in self._data or chars > self.max_chars:
                return
            self._data[text] = (value, chars)
            self.chars += chars
            while self.chars > self.max_chars:
                self.chars -= self._data.popitem(last=False)[1][1]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.chars = 0

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, text: object) -> bool:
        return text in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._data))
