"""``context.canonical.canonical_json_large`` is ``context.tokens.canonical_json``, byte
for byte, error for error — with and without its memo of escaped long strings."""

from __future__ import annotations

import enum
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context import canonical as _canonical
from context.canonical import canonical_json_large
from context.tokens import canonical_json

# Long strings (past the memo threshold) with quotes, backslashes, control characters,
# non-ASCII and lone surrogates, which JSON escaping treats each its own way.
_text = st.text(alphabet=st.characters(), max_size=40) | st.builds(
    lambda a, n: a * n, st.text(alphabet=st.characters(), min_size=1, max_size=8),
    st.integers(min_value=_canonical.LONG_CHARS // 8 + 1, max_value=600))
_scalar = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | _text)
_value = st.recursive(
    _scalar,
    lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
    | st.dictionaries(_text, inner, max_size=5),
    max_leaves=30)


def _same(value: Any) -> None:
    try:
        want: Any = canonical_json(value)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            canonical_json_large(value)
        return
    assert canonical_json_large(value) == want
    assert canonical_json_large(value) == want  # again, through the memo


@settings(max_examples=400, deadline=None)
@given(_value)
def test_same_bytes_as_json_dumps(value: Any) -> None:
    _same(value)


class _Color(enum.StrEnum):
    RED = "red"


class _Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize("value", [
    {"b": 1, "a": [1, 2.5, -0.0, 1e300, None, True, False]},
    {"role": "user", "content": "x" * 5000 + '"\\\n\t\u2028é\ud800'},
    {1: "non-string key"},
    {"k": _Color.RED, "n": _Level.HIGH},  # subclasses: json's own encoding
    [float("nan")], {"inf": math.inf},  # refused by allow_nan=False, same error
    {"set": {1, 2}},  # not JSON at all: TypeError either way
    (),
    {},
])
def test_edge_cases(value: Any) -> None:
    _same(value)


def test_a_cycle_is_refused_like_json() -> None:
    loop: list[Any] = []
    loop.append(loop)
    _same(loop)


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    _canonical.clear_memo()
    monkeypatch.setattr(_canonical._memo, "max_chars", 10_000)
    texts = [f"{i:04d}" + "y" * 1000 for i in range(50)]
    for t in texts:
        assert canonical_json_large([t]) == canonical_json([t])
    assert 0 < len(_canonical._memo) <= 5
    assert _canonical._memo.chars <= 10_000
    assert texts[-1] in _canonical._memo and texts[0] not in _canonical._memo
    _canonical.clear_memo()
    assert not len(_canonical._memo) and _canonical._memo.chars == 0
