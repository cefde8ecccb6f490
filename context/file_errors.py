"""Errors about a file a user named, reported without quoting the file.

A policy path or a job spec path is chosen by whoever writes the job, and a mistaken (or
hostile) one can point at anything the process reads: a JSON credentials file, an INI file
of access keys, a YAML file of tokens. Its errors become CLI lines, workflow failures shown
by ``pressroom status``, workflow history and log records, so they name the file, the line
and the field — never a value, a key or a line the file holds:

* ``load_yaml``: ``yaml.safe_load`` for a file a user named, refusing first — as a
  ``yaml.YAMLError`` with a line, like any other YAML error — what would otherwise crash or
  hang the reader: nesting deeper than ``MAX_YAML_DEPTH`` (PyYAML's composer recurses per
  level), an alias inside its own anchor (a document containing itself), aliases that
  expand to more than ``MAX_YAML_VALUES`` values ("billion laughs": every later walk over
  the data, this module's included, would take exponential time), and a scalar PyYAML's
  constructors cannot build (a date like ``2026-13-45``, an integer of 5,000 digits), which
  PyYAML raises as a bare ``ValueError``, or an integer longer than ``MAX_YAML_INT_BITS``.
  A key repeated in one mapping is refused too (PyYAML keeps the last silently, so a second
  ``job_id`` or ``tenant`` further down a long file would win unseen); the error names the
  key only when it is a word of the caller's ``vocabulary`` (a schema's own key names), and
  both lines.
* ``yaml_problem``: PyYAML's problem and context phrases with the line and column, never
  its snippet of the offending line; a quoted token that is not PyYAML's own vocabulary
  (``'<scalar>'``, ``','``…) becomes ``…``.
* ``yaml_positions``: where each key and list item of a YAML (or JSON) document starts, so
  a validation error can name its line.
* ``file_problems``: a pydantic ``ValidationError`` as one phrase per error — the field path
  (an element that is not a word of the model's own schema — an unknown key — becomes
  ``<key>``), its line, and the message with every value of the document it quotes replaced
  by ``<value>``. An unknown key is reported by its line, with the closest known key as a
  suggestion. ``Input tag … found`` loses the tag.

A mapping built in code (not read from a file) keeps the old, value-naming messages: the
callers choose (``context.policy.policy_from_mapping``, ``contracts.job_spec``).
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterator, Mapping
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

Position = tuple[str | int, ...]

_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_YAML_TOKEN = re.compile(r"<[a-z ]+>|[^\w\s]")
#: a document value shorter than this is never scrubbed from a message (it would garble it)
_MIN_SCRUB = 4
#: how deeply a YAML document may nest (a job spec or policy needs fewer than 10 levels)
MAX_YAML_DEPTH = 64
#: how many values (keys, scalars, collections) a YAML document may hold, aliases expanded
MAX_YAML_VALUES = 50_000
#: the longest integer a YAML document may hold: PyYAML reads ``0x``/``0b`` integers of any
#: length, which Python then cannot print (past 4,300 digits) — in any message about them
MAX_YAML_INT_BITS = 4096


class _Loader(yaml.SafeLoader):
    """``SafeLoader`` whose constructors' own exceptions — a bare ``ValueError`` for an
    impossible date or an integer past Python's digit limit, ``AttributeError`` for
    ``!!timestamp`` on text that is not one, ``KeyError`` for ``!!bool maybe`` — are a
    ``ConstructorError`` at the value's line, saying what kind of value, never the value."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            data = super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except Exception:
            data = None
        else:
            if not (isinstance(data, int) and data.bit_length() > MAX_YAML_INT_BITS):
                return data
        kind = str(node.tag).rsplit(":", 1)[-1] if isinstance(node.tag, str) else "value"
        raise yaml.constructor.ConstructorError(
            None, None, f"cannot read this {kind} (malformed, out of range or too long)",
            node.start_mark) from None

    #: key names a duplicate-key error may show (the caller's schema words); others are
    #: "a key" — a key a user wrote may be a secret
    vocabulary: frozenset[str] = frozenset()

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, yaml.Node] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                    continue  # a merge key (``<<``) may legitimately be overridden
                key = self.construct_object(key_node)
                try:
                    earlier = first.setdefault(key, key_node)
                except TypeError:  # an unhashable key: the constructor reports it
                    continue
                if earlier is not key_node:
                    shown = f"key {key}" if isinstance(key, str) and key in self.vocabulary \
                        else "a key"
                    raise yaml.constructor.ConstructorError(
                        None, None, f"{shown} appears twice in one mapping (first at line "
                        f"{earlier.start_mark.line + 1}); remove one", key_node.start_mark)
        return super().construct_mapping(node, deep)


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _shape_error(problem: str, mark: Any) -> yaml.YAMLError:
    return yaml.composer.ComposerError(None, None, problem, mark)


def check_yaml_shape(text: str) -> None:
    """Refuse (``yaml.YAMLError``) a document nested deeper than ``MAX_YAML_DEPTH``, holding
    an alias inside its own anchor, or expanding to more than ``MAX_YAML_VALUES`` values.

    Reads PyYAML's event stream, which its parser produces without recursion, so the check
    itself cannot run out of stack or time; syntax errors surface here as they would from
    ``yaml.safe_load``.
    """
    frames: list[list[Any]] = []  # [anchor, values in the subtree so far], per open collection
    sizes: dict[str, int] = {}  # values an alias to this anchor stands for
    top = 0

    def add(count: int, mark: Any) -> None:
        nonlocal top
        if frames:
            frames[-1][1] += count
            total = frames[-1][1]
        else:
            top += count
            total = top
        if total > MAX_YAML_VALUES:
            raise _shape_error(f"the document holds more than {MAX_YAML_VALUES} values once "
                               "its aliases are expanded", mark)

    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(frames) >= MAX_YAML_DEPTH:
                raise _shape_error(f"the document nests deeper than {MAX_YAML_DEPTH} levels",
                                   event.start_mark)
            frames.append([event.anchor, 1])
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, count = frames.pop()
            if anchor is not None:
                sizes[anchor] = count
            add(count, event.start_mark)
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                sizes[event.anchor] = 1
            add(1, event.start_mark)
        elif isinstance(event, yaml.AliasEvent):
            if any(frame[0] == event.anchor for frame in frames):
                raise _shape_error("an alias inside its own anchor (the document would "
                                   "contain itself)", event.start_mark)
            add(sizes.get(str(event.anchor), 1), event.start_mark)


def load_yaml(text: str, *, vocabulary: frozenset[str] = frozenset()) -> Any:
    """``yaml.safe_load(text)`` after ``check_yaml_shape``, refusing a repeated key (named
    when it is in ``vocabulary``); every failure is a ``yaml.YAMLError`` (report it with
    ``yaml_problem``)."""
    check_yaml_shape(text)
    loader = _Loader(text)
    loader.vocabulary = vocabulary
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


#: what ``str.splitlines`` breaks a line at
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_ESCAPED_BREAKS = {ord(c): repr(c)[1:-1] for c in _LINE_BREAKS}


def one_line(text: str) -> str:
    """``text`` with every line break escaped (``\\n``): an error message is one line,
    whatever a key or value it names holds."""
    return text.translate(_ESCAPED_BREAKS)


def _mark(mark: Any) -> str:
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def _unquote(text: str) -> str:
    def keep(match: re.Match[str]) -> str:
        inner = match.group(0)[1:-1]
        return match.group(0) if _YAML_TOKEN.fullmatch(inner) else "…"

    return " ".join(_QUOTED.sub(keep, text).split())


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error as one line that quotes nothing from the document."""
    problem = getattr(exc, "problem", None)
    if not problem:
        position = getattr(exc, "position", None)
        where = f" at character {position + 1}" if isinstance(position, int) else ""
        reason = getattr(exc, "reason", None)
        return f"{type(exc).__name__}{': ' + _unquote(str(reason)) if reason else ''}{where}"
    text = f"{_unquote(problem)}{_mark(getattr(exc, 'problem_mark', None))}"
    context = getattr(exc, "context", None)
    if context:
        text += f" ({_unquote(context)}{_mark(getattr(exc, 'context_mark', None))})"
    return text


def yaml_positions(text: str) -> dict[Position, int]:
    """1-based line of every mapping key and sequence item of ``text`` by its path
    (``{}`` when the text does not compose; its YAML error is reported separately)."""
    try:
        check_yaml_shape(text)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    found: dict[Position, int] = {}
    seen: set[int] = set()

    def walk(node: Any, path: Position) -> None:
        if id(node) in seen:  # an alias: its lines are the anchor's, recorded once
            return
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    here = (*path, key.value)
                    found[here] = key.start_mark.line + 1
                    walk(value, here)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                here = (*path, index)
                found[here] = item.start_mark.line + 1
                walk(item, here)

    if node is not None:
        walk(node, ())
    return found


@functools.lru_cache(maxsize=16)
def schema_words(model: type[BaseModel]) -> tuple[frozenset[str], tuple[str, ...]]:
    """Every string in ``model``'s JSON schema (property names, enum values, defaults,
    descriptions — all written in code, none from a document) and its property names."""
    words: set[str] = set()
    names: set[str] = set()

    def walk(value: Any, parent: str | None = None) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                words.add(str(key))
                if parent == "properties":
                    names.add(str(key))
                walk(item, str(key))
        elif isinstance(value, list):
            for item in value:
                walk(item, parent)
        elif isinstance(value, str):
            words.add(value)

    walk(model.model_json_schema())
    return frozenset(words), tuple(sorted(names))


def _leaves(data: Any, seen: set[int] | None = None) -> Iterator[str]:
    """Every key and scalar of a parsed document, as text (a collection reached again
    through an alias is walked once)."""
    seen = set() if seen is None else seen
    if isinstance(data, Mapping | list | tuple):
        if id(data) in seen:
            return
        seen.add(id(data))
    if isinstance(data, Mapping):
        for key, value in data.items():
            yield str(key)
            yield from _leaves(value, seen)
    elif isinstance(data, list | tuple):
        for item in data:
            yield from _leaves(item, seen)
    elif isinstance(data, str | int | float) and not isinstance(data, bool):
        try:
            yield str(data)
        except ValueError:  # an int past Python's digit limit (``0x`` + 5,000 digits)
            return  # ... cannot be printed into a message either


def _scrubber(data: Any, vocabulary: frozenset[str]) -> Any:
    values = sorted({leaf for leaf in _leaves(data)
                     if len(leaf) >= _MIN_SCRUB and leaf not in vocabulary},
                    key=len, reverse=True)
    forms: list[str] = []
    for value in values:
        quoted = repr(value)
        forms += [quoted, quoted[1:-1], value]
    if not forms:
        return lambda text: text
    pattern = re.compile("|".join(f"(?<!\\w){re.escape(f)}(?!\\w)" if f[:1].isalnum()
                                  and f[-1:].isalnum() else re.escape(f)
                                  for f in dict.fromkeys(forms)))
    return lambda text: pattern.sub("<value>", text)


def _line(loc: tuple[Any, ...], positions: Mapping[Position, int]) -> int | None:
    """The line of the deepest element of ``loc`` that the document has (pydantic's
    discriminator tags and ``[key]`` markers are not in it and are skipped)."""
    path: Position = ()
    line = None
    for element in loc:
        candidate = (*path, element)
        if candidate in positions:
            path, line = candidate, positions[candidate]
    return line


def file_problems(exc: ValidationError, *, data: Any, positions: Mapping[Position, int],
                  model: type[BaseModel]) -> list[str]:
    """``exc``'s errors as phrases that quote nothing from the document ``data``
    (``field '<path>' (line N): <message>``)."""
    vocabulary, names = schema_words(model)
    scrub = _scrubber(data, vocabulary)
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        shown = [str(p) if isinstance(p, int) or str(p) in vocabulary or p == "[key]"
                 else "<key>" for p in loc]
        line = _line(loc, positions)
        where = f" (line {line})" if line is not None else ""
        if err["type"] == "extra_forbidden":
            parent = ".".join(shown[:-1])
            near = difflib.get_close_matches(str(loc[-1]), names, n=1, cutoff=0.75) \
                if loc else []
            hint = f"; did you mean '{near[0]}'?" if near else ""
            inside = f" in '{parent}'" if parent else ""
            problems.append(f"unknown key{inside}{where}{hint}")
            continue
        if err["type"] == "union_tag_invalid":
            ctx = err.get("ctx") or {}
            msg = (f"unknown {ctx.get('discriminator', 'tag')}; expected one of "
                   f"{ctx.get('expected_tags', '?')}")
        else:
            msg = scrub(str(err["msg"]).removeprefix("Value error, "))
        problems.append(f"field '{'.'.join(shown) or '<root>'}'{where}: {msg}")
    return [one_line(problem) for problem in problems]


__all__ = [
    "MAX_YAML_DEPTH",
    "MAX_YAML_INT_BITS",
    "MAX_YAML_VALUES",
    "check_yaml_shape",
    "file_problems",
    "load_yaml",
    "one_line",
    "schema_words",
    "yaml_positions",
    "yaml_problem",
]
