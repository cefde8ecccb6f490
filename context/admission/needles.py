"""Which of a fixed set of substrings occur in a text: a candidate's term scans in one pass.

Why this exists: the engine asks of every candidate text which of a few dozen short
strings occur in it — the security gate's prefilters for secret shapes and for the words
of instruction-like phrases, required-topic coverage, decision relevance. One
``needle in text`` per needle was about thirty passes over every text, a fifth of a cold
assembly of 1,000 candidates. Hyperscan (the ``hyperscan`` package, Intel's multi-pattern
matcher) reports every needle of a set in one pass over the text.

**Exactness.** :func:`find` returns exactly ``{n for n in needles if n in text}`` — a plain
substring test, case as given — whichever way it is computed:

* each needle is compiled as a literal (every byte escaped ``\\xNN``, no flags), so a
  match is a byte-for-byte occurrence;
* text and needles are encoded as UTF-8, which is self-synchronizing: a needle's bytes
  occur in a text's bytes exactly when the needle occurs in the text as characters
  (lone surrogates, which UTF-8 cannot encode, take the ``in`` path);
* the empty needle occurs in every text (hyperscan cannot compile it).

Hyperscan is used when it imports and compiles on this CPU; otherwise, and for short texts
(where one call into it costs more than a few ``in`` tests), the answer comes from ``in``.
``tests/context/test_needles.py`` holds both paths equal on random texts. Scans are pure:
the compiled databases are immutable and shared, and each thread has its own scratch
space (hyperscan refuses a scratch that another scan is using).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any


def _load() -> ModuleType | None:
    try:
        return importlib.import_module("hyperscan")
    except ImportError:  # a dependency, with wheels for Linux, macOS and Windows; still,
        return None  # an install without it (``--no-deps``) scans correctly, only slower


hyperscan = _load()

# Below this many characters a text is scanned with ``in``: one hyperscan call (argument
# parsing, a GIL round trip, a callback per hit) costs about as much as a dozen ``in``
# passes over a text this short.
SHORT_TEXT = 256
_MAX_SETS = 256  # compiled needle sets kept (a policy's detectors, a request's terms)
_MAX_BYTES = 2**31  # hyperscan's block mode takes a 32-bit length


class _Compiled:
    """One needle set compiled for hyperscan, with a scratch space per thread."""

    def __init__(self, hs: ModuleType, needles: tuple[str, ...], caseless: bool) -> None:
        self.hs = hs
        self.needles = needles
        # Caseless sets only ever scan ASCII texts, standing for their lower-cased form: a
        # needle with an upper-case letter or a non-ASCII character cannot occur in that.
        self.ids = [i for i, n in enumerate(needles)
                    if n and (not caseless or (n.isascii() and n == n.lower()))]
        self.always = frozenset(n for n in needles if not n)
        db = hs.Database()
        flags = hs.HS_FLAG_SINGLEMATCH | (hs.HS_FLAG_CASELESS if caseless else 0)
        if self.ids:
            db.compile(
                expressions=[_literal(needles[i]) for i in self.ids],
                ids=self.ids,
                elements=len(self.ids),
                flags=flags,
            )
        self.db = db
        self._local = threading.local()

    def find(self, data: bytes) -> frozenset[str]:
        if not self.ids:
            return self.always
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self.hs.Scratch(self.db)
            self._local.scratch = scratch
        hits: list[int] = []
        self.db.scan(data, match_event_handler=_collect, context=hits, scratch=scratch)
        needles = self.needles
        return frozenset([needles[i] for i in hits]) | self.always


def _collect(index: int, start: int, end: int, flags: int, hits: list[int]) -> None:
    hits.append(index)


def _literal(needle: str) -> bytes:
    return b"".join(b"\\x%02x" % byte for byte in needle.encode("utf-8"))


_SETS: dict[tuple[tuple[str, ...], bool], _Compiled | None] = {}
_SETS_LOCK = threading.Lock()


def _compiled(needles: tuple[str, ...], caseless: bool = False) -> _Compiled | None:
    key = (needles, caseless)
    found = _SETS.get(key, False)
    if found is not False:
        return found  # type: ignore[return-value]
    with _SETS_LOCK:
        if key in _SETS:
            return _SETS[key]
        compiled: _Compiled | None = None
        if hyperscan is not None:
            try:
                compiled = _Compiled(hyperscan, needles, caseless)
            except (hyperscan.HyperscanError, UnicodeEncodeError):
                compiled = None  # an unsupported CPU or an unencodable needle: use ``in``
        if len(_SETS) >= _MAX_SETS:
            _SETS.pop(next(iter(_SETS)))
        _SETS[key] = compiled
        return compiled


def find_in(needles: Sequence[str], text: str) -> frozenset[str]:
    """The needles that occur in ``text``, by ``in`` — the reference :func:`find` must equal."""
    return frozenset([n for n in needles if n in text])


def find(needles: tuple[str, ...], text: str) -> frozenset[str]:
    """The members of ``needles`` that occur in ``text`` (plain substrings, case as given)."""
    if len(text) < SHORT_TEXT or len(text) > _MAX_BYTES // 4:
        return find_in(needles, text)
    compiled = _compiled(needles)
    if compiled is None:
        return find_in(needles, text)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no UTF-8 form, so no byte scan
        return find_in(needles, text)
    return compiled.find(data)


def find_casefolded(needles: tuple[str, ...], text: str) -> frozenset[str]:
    """``find(needles, text.casefold())`` — case-insensitive presence, as every term scan
    of the engine asks it — without first copying an ASCII text into its folded form: for
    ASCII, ``casefold`` is ``lower``, and hyperscan's caseless literals match exactly the
    lower-case ASCII needles that occur in the lower-cased text."""
    if not text.isascii():
        return find(needles, text.casefold())
    if len(text) < SHORT_TEXT or len(text) > _MAX_BYTES:
        return find_in(needles, text.lower())
    compiled = _compiled(needles, caseless=True)
    if compiled is None:
        return find_in(needles, text.lower())
    return compiled.find(text.encode("ascii"))


def accelerated() -> bool:
    """Whether scans of long texts go through hyperscan on this machine."""
    return _compiled(("probe",)) is not None


def status() -> dict[str, Any]:
    """What the benchmark reports about the scanner."""
    version = getattr(hyperscan, "__version__", None) if hyperscan is not None else None
    return {"hyperscan": version, "accelerated": accelerated()}
