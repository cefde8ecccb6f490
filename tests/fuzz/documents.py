"""Structured-but-wrong documents for the loaders' fuzzing.

Random bytes mostly die in the first YAML or JSON error; what reaches validation — and its
error messages — is a *real* document gone wrong. So each strategy starts from a valid
document (a job spec, a policy, an eval source or case, a source spec) and mutates it a few
times: a value replaced by a wrong type, a huge or odd number, unicode, a deep nest, a key
dropped or an unknown key added, one part shared with another (a YAML alias once dumped).
Rendered as YAML text, some values become raw YAML tricks instead (impossible dates,
integers past Python's digit limit, an alias inside its own anchor, billion laughs, unknown
tags).

Every string a mutation invents carries ``MARKER``, so a test can assert that no error
message about a *file* quotes a value from it (as ``tests/secret_files.py`` does with real
credential shapes).
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, date
from typing import Any

import yaml
from hypothesis import strategies as st

#: in every string a mutation makes up: never to be seen in an error about a file
MARKER = "QQFUZZSECRETQQ"
#: replaced in the dumped text by a raw YAML trick (``yaml_texts``)
_TRICK = "TRICKPLACEHOLDERVALUE"

marked_text = st.builds(lambda a, b: a + MARKER + b, st.text(max_size=6), st.text(max_size=6))
_words = st.sampled_from(["", " ", "\t", "\n", "..", "/", "a/b", "ops\\x", "\u200b", "é",
                          "研究", "📰", "\x00", "\x7f", "${PRESSROOM_HOME}", "P", "PT0S",
                          "-1", "0", "0s", "10m", "true", "null", "~", "[]", "{}"])

scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 1, 2**63, -(2**63) - 1, 10**40]),
    st.floats(allow_nan=True, allow_infinity=True),
    _words,
    marked_text,
    st.builds(lambda n: MARKER * n, st.integers(1, 600)),  # long
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12).map(lambda t: t + MARKER),
    st.dates(min_value=date(1, 1, 1)),
    st.datetimes(timezones=st.just(UTC)),
    st.binary(max_size=8),
)

json_scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True), _words, marked_text,
    st.builds(lambda n: MARKER * n, st.integers(1, 600)),
)


def _values(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.one_of(_words, marked_text)
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
        max_leaves=12)


values = _values(scalars)
json_values = _values(json_scalars)


def _paths(doc: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``doc`` (the root included)."""
    found = [here]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, (*here, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found += _paths(value, (*here, index))
    return found


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _nest(value: Any, depth: int, as_list: bool) -> Any:
    for _ in range(depth):
        value = [value] if as_list else {MARKER: value}
    return value


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any], *, leaves: st.SearchStrategy[Any] = values,
            max_depth: int = 40, tricks: bool = False) -> dict[str, Any]:
    """``base`` changed 1-4 times in the ways the module docstring lists."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "replace", "replace", "drop", "unknown",
                                   "nest", "share", "wrap"] + (["trick"] * 2 if tricks else [])))
        if not path:  # the root: only keys can be added
            op = "unknown"
        # the dict or list holding ``path``; None only at the root, whose op is "unknown"
        parent: Any = _get(doc, path[:-1]) if path else None
        if op == "replace":
            parent[path[-1]] = draw(leaves)
        elif op == "trick":
            parent[path[-1]] = _TRICK
        elif op == "drop":
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
        elif op == "unknown":
            target = _get(doc, path)
            if isinstance(target, dict):
                target[draw(marked_text)] = draw(leaves)
            elif isinstance(target, list):
                target.append(draw(leaves))
        elif op == "nest":
            parent[path[-1]] = _nest(parent[path[-1]], draw(st.integers(1, max_depth)),
                                     draw(st.booleans()))
        elif op == "share":  # the same object in two places: an anchor and an alias in YAML
            other = draw(st.sampled_from(paths))
            if other and not _is_inside(other, path):
                _get(doc, other[:-1])[other[-1]] = parent[path[-1]]
        elif op == "wrap":
            parent[path[-1]] = [parent[path[-1]]]
    return doc


def _is_inside(path: tuple[Any, ...], container: tuple[Any, ...]) -> bool:
    return path[:len(container)] == container


#: raw YAML that no mutation of the parsed data could produce (placed as a value)
YAML_TRICKS = [
    "2026-13-45", "0000-01-01", "9999-12-31T23:59:59+99:00", "1" * 5000, "0x" + "f" * 5000,
    "0b" + "1" * 20000, "1:2:3:4:5:6:7:8:" * 700, "1.0e999", "-.inf", ".nan",
    f"!!binary {MARKER}", "!!binary ====", f"!!python/object:os.system {MARKER}",
    f"!!timestamp {MARKER}", f"!custom {MARKER}", "!!set {a, b}", "!!omap [a: 1]",
    "&self [*self]", "&m {k: *m}", "*nowhere", "[" * 200 + "]" * 200,
    "{a: " * 100 + "1" + "}" * 100, f"\"{MARKER}\\q\"", f"'{MARKER}", "[a, *x]",
    "- a\n- b", f"|\n  {MARKER}", f"{MARKER}: {MARKER}: {MARKER}", "\t" + MARKER,
    "!!str", "? [a, b]\n: c", "<<: {a: 1}",
]
_LAUGHS = ("a0: &a0 [q, q, q, q, q, q, q, q, q, q]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)))


@st.composite
def yaml_texts(draw: st.DrawFn, base: dict[str, Any]) -> str:
    """``base`` mutated, dumped as YAML (block or flow style, aliases for shared parts), with
    raw tricks substituted; sometimes a billion-laughs block or a second document added."""
    doc = draw(mutated(base, tricks=True))
    try:
        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=draw(st.booleans()),
                              default_flow_style=draw(st.sampled_from([False, None, True])),
                              width=draw(st.sampled_from([80, 10**6])))
    except (yaml.YAMLError, RecursionError):  # a float key PyYAML cannot represent, …
        text = yaml.safe_dump(base, sort_keys=False)
    while _TRICK in text:
        text = text.replace(_TRICK, draw(st.sampled_from(YAML_TRICKS)), 1)
    extra = draw(st.sampled_from(["", "", "", _LAUGHS, f"---\n{MARKER}: 1\n",
                                  f"{MARKER}: &k 1\n{MARKER}2: *k\n", "\ufeff"]))
    return extra + text if extra == "\ufeff" else text + extra


def json_lines(records: list[Any]) -> str:
    return "".join(json.dumps(r, allow_nan=True) + "\n" if not isinstance(r, str) else r + "\n"
                   for r in records)


#: raw lines a JSON Lines file may hold instead of a record
JSON_TRICKS = [
    "[" * 100_000 + "]" * 100_000, "1" * 5000, f'{{"id": {"9" * 5000}}}', "{not json",
    f'"{MARKER}"', "[]", "null", "NaN", '{"id": "a", "id": "b"}', "\ufeff{}", "\x00",
    '{"' + MARKER + '": ' + "[" * 500 + "]" * 500 + "}",
]


def no_marker_in(message: str) -> bool:
    """``MARKER`` is not in ``message`` (compared case-folded: a name may be normalized)."""
    return MARKER.casefold() not in message.casefold()


def is_one_line(message: str) -> bool:
    """``message`` prints as one line (no break ``str.splitlines`` knows of)."""
    return len(message.splitlines()) == 1
