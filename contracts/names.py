"""Reviewer and operator names a person can tell apart: one script, no look-alike.

A reviewer's name is what the console shows and what the registry files are named after
(``contracts.signing.key_file_name``). Two kinds of name are refused wherever a name is
made or listed — ``pressroom reviewer add`` / ``keygen`` and the reviewers and operators
of a job at submit (``cli.reviewer_keys.pin_reviewers``):

- a name whose letters come from more than one script (``alice`` whose first letter is
  the Cyrillic U+0430): it looks exactly like its Latin twin in the console, and each
  non-ASCII letter becomes ``_`` in its key file's name (``_lice.pub``). Han with
  Hiragana, Katakana or Hangul (and Latin with those), as Japanese and Korean names are
  written, counts as one script (Unicode TS #39's "highly restrictive" level);
- a name confusable with an already registered one: the same Unicode confusable
  *skeleton* (TS #39, section 4: each character mapped to its prototype) as a registered
  name that is not the same name — ``ace`` written wholly in Cyrillic (U+0430 U+0441
  U+0435) beside a registered ``ace``.

Scripts come from ``unicodedata`` (a letter's script is the first word of its Unicode
name); prototypes from the confusables table the ``confusable-homoglyphs`` package ships
(Unicode's ``confusables.txt``, read offline, never fetched): a character's prototype is
its ASCII look-alike when it has one. A refusal is ``NameRefused``, one line that spells
the name with ``\\uXXXX`` escapes, since on screen it looks like the name it imitates.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Iterable
from importlib import resources

from contracts.errors import JobSpecError
from contracts.signing import normalize_name

__all__ = ["NameRefused", "check_name", "name_problem", "scripts_of", "skeleton"]

#: script sets written together as one (TS #39 "highly restrictive")
_TOGETHER = (frozenset({"LATIN", "CJK", "HIRAGANA", "KATAKANA"}),
             frozenset({"LATIN", "CJK", "HANGUL"}),
             frozenset({"LATIN", "CJK", "BOPOMOFO"}))
#: the first words of letter names that are no script of their own
_NO_SCRIPT = frozenset({"MODIFIER", "FULLWIDTH", "HALFWIDTH", "SMALL", "CAPITAL"})


class NameRefused(JobSpecError):
    """A reviewer or operator name mixes scripts or imitates a registered name."""


def shown(name: str) -> str:
    """``name`` quoted, every non-ASCII character as ``\\uXXXX``: readable on any console,
    and unlike the name it imitates."""
    return "'" + name.encode("ascii", "backslashreplace").decode("ascii") + "'"


def scripts_of(name: str) -> frozenset[str]:
    """The scripts of ``name``'s letters (digits, punctuation, spaces and marks have
    none)."""
    found = set()
    for ch in unicodedata.normalize("NFKC", name):
        if not unicodedata.category(ch).startswith("L"):
            continue
        first = unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0]
        if first not in _NO_SCRIPT:
            found.add(first)
    return frozenset(found)


@functools.lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    """Character → its ASCII look-alike, from the shipped confusables table."""
    table = json.loads(resources.files("confusable_homoglyphs")
                       .joinpath("confusables.json").read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for char, alikes in table.items():
        if len(char) != 1:
            continue
        ascii_alikes = sorted(a["c"] for a in alikes
                              if len(a["c"]) == 1 and a["c"].isascii() and a["c"].isalnum())
        if char.isascii() and not char.isdigit():
            continue  # an ASCII letter is its own prototype
        if ascii_alikes:
            letters = [a for a in ascii_alikes if a.isalpha()]
            out[char] = (letters or ascii_alikes)[0].casefold()
    return out


def skeleton(name: str) -> str:
    """``name``'s confusable skeleton: normalized (``normalize_name``), each character
    replaced by its prototype, then in the form of a key file's name (what tells two
    registry entries apart)."""
    table = _prototypes()
    text = unicodedata.normalize("NFD", normalize_name(name))
    mapped = "".join(table.get(ch, ch) for ch in text
                     if not unicodedata.category(ch).startswith("M"))
    return re.sub(r"[^a-z0-9._-]", "_", mapped.casefold()).lstrip(".") or "_"


def name_problem(name: str, known: Iterable[str] = ()) -> str | None:
    """Why ``name`` is refused (mixed scripts, or the skeleton of a ``known`` name it is
    not), else ``None``. ``known`` are names or registry file stems."""
    scripts = scripts_of(name)
    if len(scripts) > 1 and not any(scripts <= together for together in _TOGETHER):
        return (f"name {shown(name)} mixes scripts ({', '.join(sorted(scripts)).title()}); "
                "a reviewer or operator name is written in one script")
    mine = skeleton(name)
    own = re.sub(r"[^a-z0-9._-]", "_", normalize_name(name)).lstrip(".") or "_"
    for other in known:
        theirs = re.sub(r"[^a-z0-9._-]", "_", normalize_name(other)).lstrip(".") or "_"
        if theirs != own and skeleton(other) == mine:
            return (f"name {shown(name)} looks like the registered name {shown(other)} "
                    "(the same Unicode confusable skeleton); pick a name that does not")
    return None


def check_name(name: str, known: Iterable[str] = (), *, what: str = "reviewer") -> None:
    """``NameRefused`` (one line) when ``name_problem`` finds one."""
    problem = name_problem(name, known)
    if problem is not None:
        raise NameRefused(f"{what} {problem}")
