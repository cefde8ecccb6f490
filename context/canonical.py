"""Canonical JSON of a whole request, with the escaping of long strings memoized.

Why this exists: CPython escapes JSON strings at several nanoseconds a character (4.8 ms
for the 580 KB request of the 1,000-candidate benchmark), and every assembly encodes its
request twice over the same rendered blocks — the provider payload it seals and the
assembly input it hashes — while a warm assembly renders those blocks again unchanged.
The escaped form of a long string is kept (first in, first out, bounded by characters),
so each distinct block is escaped once.

The output is byte-identical to ``json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False, allow_nan=False)`` (``context.tokens.canonical_json``): the walk
handles exactly the plain JSON types — ``dict`` with ``str`` keys, ``list``, ``tuple``,
``str``, ``int``, finite ``float``, ``bool``, ``None`` — and hands any other value (a
subclass, a non-string key, NaN, a cycle) to ``json.dumps`` whole, so its result and its
errors are json's own. Only the two request-sized encodings use it; small values stay
with the C encoder, which walks structure faster than Python can.
"""

from __future__ import annotations

import json
import math
from typing import Any

from context.memo import TextMemo

_escape = json.encoder.encode_basestring
#: Strings at least this long have their escaped form memoized; shorter ones cost less
#: to escape than to look up.
LONG_CHARS = 256
MAX_MEMO_CHARS = 32 * 1024 * 1024

_memo: TextMemo[str] = TextMemo(MAX_MEMO_CHARS)


class _NotPlain(Exception):
    """A value outside the plain JSON types: ``json.dumps`` encodes the whole value."""


def _escaped(s: str) -> str:
    if len(s) < LONG_CHARS:
        return _escape(s)
    found = _memo.get(s)
    if found is None:
        found = _escape(s)
        _memo.put(s, found, len(s) + len(found))
    return found


def _walk(value: Any, out: list[str]) -> None:
    kind = type(value)
    if kind is str:
        out.append(_escaped(value))
    elif kind is dict:
        if any(type(k) is not str for k in value):
            raise _NotPlain
        out.append("{")
        for i, key in enumerate(sorted(value)):
            if i:
                out.append(",")
            out.append(_escape(key))
            out.append(":")
            _walk(value[key], out)
        out.append("}")
    elif kind is list or kind is tuple:
        out.append("[")
        for i, element in enumerate(value):
            if i:
                out.append(",")
            _walk(element, out)
        out.append("]")
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is float and math.isfinite(value):
        out.append(float.__repr__(value))
    else:
        raise _NotPlain


def canonical_json_large(value: Any) -> str:
    """``context.tokens.canonical_json(value)``, faster for values holding long strings."""
    out: list[str] = []
    try:
        _walk(value, out)
    except (_NotPlain, RecursionError):
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    return "".join(out)


def clear_memo() -> None:
    _memo.clear()
