"""Detectors behind the security gate: secret material and instruction-like text.

Both detectors are deterministic regular expressions, so the same content always yields
the same assessment. They are deliberately conservative:

* **Secrets** (docs/context-engine.md#secrets-and-instruction-like-text) are

  - high-precision token shapes: private key blocks (PEM, OpenSSH, PGP), a PEM/PGP key cut
    by an excerpt window (a ``BEGIN`` line without its ``END``, or the reverse), AWS access
    key ids, GitHub (classic ``ghp_``… and fine-grained ``github_pat_``), GitLab
    (``glpat-`` and its sibling prefixes, routable forms too), Slack, OpenAI/Anthropic-style
    ``sk-``, Stripe secret and restricted keys (``sk_live_``, ``rk_live_``, ``_test_``;
    publishable ``pk_`` keys are public by design and left alone), Google API keys
    (``AIza``…) and JWTs;
  - secrets by context: the password of a URL (``scheme://user:pass@host``), a
    ``Bearer <token>``, an ``Authorization:`` header's credentials, and assignments whose
    key names a secret (``password``, ``secret``, ``token``, ``api_key``, ``access_key``,
    ``private_key``, ``credentials``, …, or a Chinese one: ``密码``, ``密钥``, ``令牌``, …),
    quoted (``key = "value"``) or unquoted as in ``.env``, INI, shell and YAML
    (``KEY=value``, ``key: value``; the separator may be full-width).

  An assigned value counts only when it looks opaque: not a function call
  (``token = get_token()``), an attribute (``form.password``), a reference (``${VAR}``,
  ``$VAR``, ``%(x)s``, ``{{ x }}``), a placeholder (``<your-key>``, ``changeme``,
  ``YOUR_API_KEY``, ``xxxx``), a path, a number or a plain word; and the key must *end*
  with the secret word (``max_tokens=100``, ``password_field = …`` are not secrets).
  Redaction replaces the secret itself — the whole token, or just the value of an
  assignment, URL or header — with ``[REDACTED:<kind>]`` and never touches the rest; the
  kinds found are what gets reported, never the value.

* **Instruction-like text** (``ignore previous instructions``, ``skip human approval``,
  ``publish without review``, their Chinese forms
  (docs/context-engine.md#secrets-and-instruction-like-text), ...) is only *flagged*: the item
  stays data inside a delimited block (policy ``isolate_as_data``) unless the policy says
  ``deny``. A detector cannot prove text is harmless, which is why structure (data blocks,
  roles) — not detection — is the defence; the flag is for the audit trail.

Cost: every secret shape has a prefilter of literal substrings, all found in the same
passes over a text as the instruction words (``context.admission.needles``), so a clean
text costs two hyperscan passes whatever the number of shapes; and a shape's regex is only
tried where one of its leading words occurs (Python's ``re`` cannot skip ahead on an
alternation or a character class). ``redact_secrets`` is the same detector for error
messages and other text outside the engine.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from context import invisible
from context.admission import carriers
from context.admission.needles import find, find_casefolded
from context.admission.scan import contains_any, occurrences

_MEMO_ENTRIES = 60_000

# -- secret shapes ----------------------------------------------------------------------
#
# Each shape: the regex, the prefilter (one of ``needles`` must occur), the leading words
# (every match *starts* with one of them, so the regex is tried only where one occurs; a
# test holds the shortcut to a position-by-position search), the group that is replaced
# and an optional check of the match. ``folded`` shapes are case-insensitive: their
# needles and leading words are lower-case ASCII, found in the lower-cased text, and their
# regex carries ``(?ai)`` so that it matches ASCII letters only (``lower()`` then keeps
# every position, see ``_FOLDS_TO_ASCII``).

Span = tuple[int, int]


@dataclass(frozen=True)
class _Shape:
    kind: str
    pattern: re.Pattern[str] | None
    needles: tuple[str, ...]
    lead: tuple[str, ...] = ()
    folded: bool = False
    group: str | int = 0
    accept: Callable[[re.Match[str], str], bool] | None = None
    #: a finder that is not one regex (the headless key body)
    spans: Callable[[str], list[Span]] | None = None
    #: per leading word, a regex of that word and what must follow it (a superset of the
    #: pattern's start): one C-level scan per present word finds the few places worth a
    #: match, where a word common in prose ("token") would cost a Python step each
    gates: Mapping[str, re.Pattern[str]] = field(default_factory=dict)
    #: one of these must occur too (plain ``in``: single characters, which a hyperscan
    #: literal set would report on nearly every text)
    also: tuple[str, ...] = ()
    #: derived: the needles as a set, and whether they are the leading words too (then
    #: only the present ones start a match)
    needle_set: frozenset[str] = field(init=False)
    lead_is_needles: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "needle_set", frozenset(self.needles))
        object.__setattr__(self, "lead_is_needles",
                           bool(self.needles) and self.lead == self.needles)


_B64 = r"[A-Za-z0-9+/=]"
#: a line break as a key body may carry it: raw, JSON-escaped, or between the strings of
#: a JSON list of lines (a ``read`` result)
_BREAK = r'(?:\r?\n|\\r?\\n|"[ \t]*,[ \t]*")'
_ARMOR_HEADER = r"(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset|MessageID):[^\r\n\"\\]*"
_LINE_END = r'(?=\r?\n|\\[rn]|"|\Z)'
# a body line is base64, an armor header, or blank (only between lines: the break after
# the last base64 line is not the key's)
_KEY_BODY = (rf"(?:{_BREAK}(?:[ \t]*{_B64}+[ \t]*{_LINE_END}|{_ARMOR_HEADER}"
             rf"|[ \t]*(?={_BREAK})))*")
_BEGIN_KEY = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_END_KEY = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_BREAK_BEFORE = re.compile(rf"{_BREAK}\Z")
_BODY_LINE = re.compile(rf"[ \t]*{_B64}+[ \t]*")
_BODY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \t")


def _headless_key_spans(text: str) -> list[Span]:
    """A key body whose ``BEGIN`` line was cut off: the base64 lines before an ``END``
    line (complete blocks are already redacted when this runs, so an ``END`` left is
    alone), through that line. Lines may be indented, the ``END`` line too."""
    spans: list[Span] = []
    for at in occurrences(("-----END ",), text):
        m = _END_KEY.match(text, at)
        if m is None:
            continue
        start = at
        while True:
            edge = start  # a line's indentation (a heredoc, a YAML block) is not the key's
            while edge > 0 and text[edge - 1] in " \t":
                edge -= 1
            brk = _BREAK_BEFORE.search(text, max(0, edge - 16), edge)
            if brk is None:
                break
            line = brk.start()
            while line > 0 and text[line - 1] in _BODY_CHARS:
                line -= 1
            if not _BODY_LINE.fullmatch(text, line, brk.start()):
                break
            while text[line] in " \t":  # the indentation is not the key's
                line += 1
            start = line
        if start < at:
            spans.append((start, m.end()))
    return spans


# Key names that say "secret". A match must *end* with one (``password_field`` is not a
# password, ``max_tokens`` no token); ``secret_key``, ``client_secret``, ``DB_PASSWORD``,
# ``aws_secret_access_key`` all do.
_KEY_WORDS = (r"(?:pass(?:word|wd|phrase)|pwd|secret(?:[_-]?key)?|token|credentials?"
              r"|(?:api|access|private|auth|signing|encryption|master)[_-]?key)")
#: the same in Chinese (simplified and traditional): password, passphrase, secret key,
#: private key, token, credentials. They have no case, so their shape is not folded.
_CJK_KEY_WORDS = ("密码", "密碼", "口令", "密钥", "密鑰", "私钥", "私鑰", "令牌", "凭据", "憑據",
                  "凭证", "憑證")
_KEY_LEAD = ("password", "passwd", "passphrase", "pwd", "secret", "token", "credential",
             *(f"{w}{sep}key" for w in ("api", "access", "private", "auth", "signing",
                                         "encryption", "master") for sep in ("", "_", "-")))
#: what follows a leading key word where an assignment starts (``secret`` + ``_key``,
#: ``credential`` + ``s``, a closing quote, the separator): a superset of both patterns
_KEY_GATE = r"[\w-]{0,4}[\"']?\s*[:=\uff1a\uff1d]"
_CJK_KEY_GATE = r"[ \t]*[:=\uff1a\uff1d]"
#: ASCII and full-width (U+FF1A, U+FF1D) separators
_SEPARATORS = ("=", ":", "\uff1a", "\uff1d")
#: a value ends where CJK text or full-width punctuation starts (``…Tz2w,请勿外传``)
_CJK_STOP = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_PLACEHOLDER_WORDS = frozenset({
    "changeme", "change_me", "change-me", "changeit", "password", "passwd", "secret",
    "token", "none", "null", "nil", "true", "false", "undefined", "redacted", "placeholder",
    "example", "todo", "tbd", "required", "optional", "string", "empty", "default",
    "hidden", "masked", "notset", "not_set", "unset", "sensitive", "pass", "pwd", "pw",
})
_PLACEHOLDER_PREFIXES = ("your", "<", "$", "%", "{", "[", "!", "*", "&", "#", "@",
                         "insert", "enter_", "enter-", "replace", "dummy", "fake",
                         "placeholder", "example_", "example-", "sample")
_NUMBERISH = re.compile(r"[\d.,:_+-]+")
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_PLAIN_WORDS = re.compile(r"[A-Za-z_.-]+")
_IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _placeholder(value: str) -> bool:
    """A value that stands for a secret rather than being one (docs, templates, refs)."""
    low = value.lower()
    return (low in _PLACEHOLDER_WORDS or low.startswith(_PLACEHOLDER_PREFIXES)
            or "[redacted" in low or "..." in value or "\u2026" in value
            or len(set(low)) == 1)


def _mixed_case(value: str) -> bool:
    return value.lower() != value and value.upper() != value


def _names_something(value: str) -> bool:
    """A number, a dotted name (``form.password``), a path or a URL: not a credential."""
    return bool(_NUMBERISH.fullmatch(value) or _DOTTED_NAME.fullmatch(value)
                or value.startswith(("/", "~/", "./", "../")) or "://" in value)


def _opaque(value: str) -> bool:
    """Random-looking enough to be a credential: a digit or a symbol in it, or a long
    mixed-case run of letters; a plain word is not."""
    if not _PLAIN_WORDS.fullmatch(value):
        return True  # a digit or a symbol
    return len(value) >= 16 and _mixed_case(value)


def _key_start(text: str, at: int) -> int:
    while at > 0 and text[at - 1] in _IDENT_CHARS:
        at -= 1
    return at


def _accept_unquoted(m: re.Match[str], text: str) -> bool:
    value = m.group("value")
    if _placeholder(value):
        return False
    after = text[m.end():m.end() + 1]
    if after in ("(", "[", "{", "<"):
        return False  # a call, a subscript, a generic: code, not a value
    key = text[_key_start(text, m.start()):m.end("key")]
    if value.lower() == key.lower():
        return False
    sep = m.group("sep")
    if sep.strip() == ":" and text[m.end():m.end() + 64].lstrip(" \t").startswith("="):
        return False  # an annotation: ``api_token: SecretStr = Field()``
    if _names_something(value):
        return False
    if _opaque(value):
        return True
    # ``.env`` style (``DB_PASSWORD=hunter``): an upper-case key glued to its value holds a
    # literal, so a lower-case word counts too; an UPPER_SNAKE value names a variable
    return (sep == "=" and not any(c.islower() for c in key)
            and any(c.islower() for c in value))


def _accept_quoted(m: re.Match[str], text: str) -> bool:
    value = m.group("value")
    key = text[_key_start(text, m.start()):m.end("key")]
    return not _placeholder(value) and value.lower() != key.lower()


def _accept_token(m: re.Match[str], text: str) -> bool:
    """A bearer or header credential: opaque (a digit or mixed case), not a placeholder."""
    value = m.group("value")
    if _placeholder(value) or text[m.end():m.end() + 1] == "(":
        return False
    return any(c.isdigit() for c in value) or _mixed_case(value) or "+" in value \
        or value.endswith("=")


def _accept_url(m: re.Match[str], text: str) -> bool:
    return not _placeholder(m.group("value"))


def _shape(kind: str, pattern: str, needles: tuple[str, ...], lead: tuple[str, ...] = (),
           gate: str = "", **kw: Any) -> _Shape:
    lead = lead or needles
    gates: Mapping[str, re.Pattern[str]] = {}
    if gate:  # shapes with the same words and gate share one mapping (and its scan)
        # the gate is a look-ahead: a match consumes only the word, so a start inside an
        # earlier word's gate (``pwd`` + ``pwd:`` in ``pwdpwd:``) is still found
        gates = _GATES.setdefault((lead, gate), {
            w: re.compile(re.escape(w) + f"(?={gate})") for w in lead})
    return _Shape(kind, re.compile(pattern), needles, lead, gates=gates, **kw)


_GATES: dict[tuple[tuple[str, ...], str], dict[str, re.Pattern[str]]] = {}


_TOKEN_END = r"(?![0-9A-Za-z_-])"
_TOKEN_START = r"(?<![0-9A-Za-z_-])"
_GITLAB = ("glpat-", "gldt-", "glptt-", "glrt-", "glrtr-", "gloas-", "glcbt-", "glft-",
           "glimt-", "glagent-", "glsoat-", "glffct-", "GR1348941")
_STRIPE = ("sk_live_", "rk_live_", "sk_test_", "rk_test_", "sk_prod_", "rk_prod_")

#: the shapes in the order they run (each on the text the previous ones redacted)
_TOKEN_SHAPES: tuple[_Shape, ...] = (
    _shape("private_key",
           r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
           ("PRIVATE KEY-----",), ("-----BEGIN ",)),
    _shape("pgp_private_key",
           r"-----BEGIN PGP PRIVATE KEY BLOCK-----[\s\S]*?-----END PGP PRIVATE KEY BLOCK-----",
           ("PGP PRIVATE KEY BLOCK-----",), ("-----BEGIN ",)),
    _shape("private_key_truncated", _BEGIN_KEY + _KEY_BODY, ("PRIVATE KEY",),
           ("-----BEGIN ",)),
    _Shape("private_key_truncated", None, ("PRIVATE KEY",), spans=_headless_key_spans),
    _shape("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", ("AKIA", "ASIA")),
    _shape("github_token",
           r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}\b|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}"
           r"(?![A-Za-z0-9_]))",
           ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    _shape("gitlab_token",
           _TOKEN_START + r"(?:gl(?:pat|dt|ptt|rtr?|oas|cbt|ft|imt|agent|soat|ffct)-"
           r"[0-9A-Za-z_-]{20,300}(?:\.[0-9a-z]{9})?|GR1348941[0-9A-Za-z_-]{20,})"
           + _TOKEN_END, _GITLAB),
    _shape("slack_token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b", ("xox",)),
    _shape("api_key", r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b", ("sk-",)),
    _shape("stripe_key", r"(?<![0-9A-Za-z])[rs]k_(?:live|test|prod)_[0-9A-Za-z]{16,}\b",
           _STRIPE),
    _shape("google_api_key", _TOKEN_START + r"AIza[0-9A-Za-z_-]{35}" + _TOKEN_END, ("AIza",)),
    _shape("jwt", _TOKEN_START + r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*",
           ("eyJ",)),
)
#: secrets found by their context; they run after the policy's own patterns
_CONTEXT_SHAPES: tuple[_Shape, ...] = (
    _shape("url_password",
           r"://[^\s:/?#\[\]'\"<>`\\]*:(?P<value>[^\s/?#'\"<>`\\]+)@", ("://",),
           group="value", accept=_accept_url),
    _shape("bearer_token", r"(?ai)\bbearer[ \t]+(?P<value>[A-Za-z0-9._~+/-]{12,}=*)",
           ("bearer",), folded=True, group="value", accept=_accept_token),
    _shape("authorization_header",
           r"(?ai)\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:(?:basic|token|bot|apikey)"
           r"[ \t]+)?(?P<value>[A-Za-z0-9._~+/-]{12,}=*)",
           ("authorization",), folded=True, group="value", accept=_accept_token),
    _shape("assigned_secret",
           rf"(?ai)(?P<key>{_KEY_WORDS})[\"']?\s*[:=\uff1a\uff1d]\s*[\"'](?P<value>[^\"'\s]{{8,}})[\"']",
           _KEY_LEAD, folded=True, group="value", accept=_accept_quoted, gate=_KEY_GATE,
           also=_SEPARATORS),
    _shape("unquoted_assigned_secret",
           rf"(?ai)(?P<key>{_KEY_WORDS})[\"']?(?P<sep>[ \t]*[:=\uff1a\uff1d][ \t]*)"
           rf"(?P<value>[^\s'\"`\\,;&()\[\]{{}}<>{_CJK_STOP}]{{8,}})",
           _KEY_LEAD, folded=True, group="value", accept=_accept_unquoted, gate=_KEY_GATE,
           also=_SEPARATORS),
    _shape("unquoted_assigned_secret",
           rf"(?P<key>{'|'.join(_CJK_KEY_WORDS)})(?P<sep>[ \t]*[:=\uff1a\uff1d][ \t]*)"
           rf"(?P<value>[^\s'\"`\\,;&()\[\]{{}}<>{_CJK_STOP}]{{8,}})",
           _CJK_KEY_WORDS, group="value", accept=_accept_unquoted, gate=_CJK_KEY_GATE,
           also=_SEPARATORS),
)
# The only characters outside ASCII that ``re``'s IGNORECASE matches to an ASCII letter
# (U+0130 dotted capital I, U+0131 dotless i, U+017F long s, U+212A Kelvin sign; found by
# trying every code point, pinned by a test). In a text without them
# ``lower()`` keeps every position, and a case-insensitive match of a lower-case ASCII word
# starts exactly where that word occurs in the lower-cased text.
_FOLDS_TO_ASCII = ("\u0130", "\u0131", "\u017f", "\u212a")


def _lowered(text: str) -> str | None:
    """``text.lower()`` when it keeps every position, else ``None`` (search everywhere)."""
    for c in _FOLDS_TO_ASCII:
        if c in text:
            return None
    return text.lower()


def _starts(shape: _Shape, haystack: str, lead: Collection[str]) -> list[int]:
    """Where a match of ``shape`` may start: each occurrence of a leading word in
    ``lead`` (the shape's present ones), or of its gate."""
    if not shape.gates:
        return occurrences(lead, haystack)
    starts: set[int] = set()
    for word in lead:
        starts.update([m.start() for m in shape.gates[word].finditer(haystack)])
    return sorted(starts)


def _shape_spans(shape: _Shape, text: str, lowered: str | None,
                 lead: Collection[str] | None = None,
                 gated: dict[int, list[int]] | None = None) -> list[Span]:
    """Where ``shape`` matches in ``text`` (left to right, not overlapping), as the spans
    to replace; ``lead`` narrows the leading words to those present (default: all);
    ``gated`` keeps the starts a shared gate found in this same ``text``."""
    if shape.spans is not None:
        return shape.spans(text)
    pattern, accept = shape.pattern, shape.accept
    assert pattern is not None
    spans: list[Span] = []
    if not shape.lead or (shape.folded and lowered is None):
        # no shortcut: try every position (a policy's own pattern; or a text holding a
        # character that folds to ASCII, where ``lower()`` may move positions)
        at = 0
        while True:
            m = pattern.search(text, at)
            if m is None:
                return spans
            if accept is None or accept(m, text):
                spans.append(m.span(shape.group))
                at = max(m.end(), m.start() + 1)
            else:
                at = m.start() + 1
    haystack = lowered if shape.folded and lowered is not None else text
    end = 0
    lead = shape.lead if lead is None else lead
    if gated is not None and shape.gates:
        starts = gated.get(id(shape.gates))
        if starts is None:
            starts = gated[id(shape.gates)] = _starts(shape, haystack, lead)
    else:
        starts = _starts(shape, haystack, lead)
    for at in starts:
        if at < end:
            continue
        m = pattern.match(text, at)  # ``\b`` and look-behinds still see the text before
        if m is None or (accept is not None and not accept(m, text)):
            continue
        spans.append(m.span(shape.group))
        end = m.end()
    return spans


def _redact_spans(text: str, spans: list[Span], kind: str) -> str:
    out: list[str] = []
    pos = 0
    for a, b in spans:
        if a < pos:
            continue
        out += [text[pos:a], f"[REDACTED:{kind}]"]
        pos = b
    out.append(text[pos:])
    return "".join(out)


class _Track:
    """Where each ``[REDACTED:…]`` of a text redacted shape by shape stands in the text
    as it was: (start now, end now, start before, end before, kind), ascending. Shapes run
    on the text the previous ones redacted, so a span they report is in shifted
    coordinates; this maps it back (a span that takes in an earlier placeholder takes in
    what that placeholder replaced)."""

    def __init__(self) -> None:
        self.marks: list[tuple[int, int, int, int, str]] = []

    def original(self, pos: int, *, end: bool) -> int:
        shift = 0
        for now_a, now_b, was_a, was_b, _ in self.marks:
            if pos <= now_a:
                break
            if pos < now_b:  # inside a placeholder: all of what it replaced
                return was_b if end else was_a
            shift = was_b - now_b
        return pos + shift

    def redacted(self, spans: list[Span], kind: str) -> None:
        """Record what ``_redact_spans(text, spans, kind)`` did to the current text."""
        width = len(f"[REDACTED:{kind}]")
        kept: list[Span] = []
        pos = 0
        for a, b in spans:  # the spans ``_redact_spans`` replaced
            if a >= pos:
                kept.append((a, b))
                pos = b
        new: list[tuple[int, int, int, int, str]] = []
        marks = iter(self.marks)
        mark = next(marks, None)
        delta = 0
        for a, b in kept:
            was_a, was_b = self.original(a, end=False), self.original(b, end=True)
            while mark is not None and mark[1] <= a:  # wholly before: shifted
                new.append((mark[0] + delta, mark[1] + delta, *mark[2:]))
                mark = next(marks, None)
            while mark is not None and mark[0] < b:  # taken in by this span
                mark = next(marks, None)
            new.append((a + delta, a + delta + width, was_a, was_b, kind))
            delta += width - (b - a)
        while mark is not None:
            new.append((mark[0] + delta, mark[1] + delta, *mark[2:]))
            mark = next(marks, None)
        self.marks = new


_STRUCTURE = re.compile(r"[\s,:\[\]{}]*")


def _merged(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Spans sorted, overlapping ones joined (the first one's kind)."""
    out: list[tuple[int, int, str]] = []
    for a, b, kind in sorted(spans):
        if out and a < out[-1][1]:
            out[-1] = (out[-1][0], max(b, out[-1][1]), out[-1][2])
        else:
            out.append((a, b, kind))
    return out


def _redact_carrier(text: str, outer: carriers.View,
                    spans: list[tuple[int, int, str]]) -> str:
    """``text`` with each span a decoded view found replaced by ``[REDACTED:<kind>]``
    (plain ASCII: valid inside a JSON string, an HTML page, a URL). A span may reach over
    the raw quotes that end one JSON string and start the next (a secret across two
    lines of a ``read`` result): those quotes, and the commas, colons, brackets and blanks
    between them, are kept, so the carrier's structure stays whole."""
    out: list[str] = []
    pos = 0
    for a, b, kind in spans:
        out.append(text[pos:a])
        piece = a
        for q in range(a, b + 1):
            if q < b and (text[q] != '"' or outer.inside_escape(q)):
                continue
            part = text[piece:q]
            out.append(part if _STRUCTURE.fullmatch(part) else f"[REDACTED:{kind}]")
            if q < b:
                out.append('"')
            piece = q + 1
        pos = b
    out.append(text[pos:])
    return "".join(out)


# (pattern, prefilter groups, leading words). The regex only runs when a word of every
# group occurs in the folded text. Every match of these patterns *starts* with one of its
# leading words (lower-case ASCII in a case-insensitive pattern; a test checks both), so
# the regex is tried only where one occurs (see ``_first_match``):
# Python's ``re`` cannot skip ahead on a case-insensitive alternation, and searching a
# page of prose — where "you", "now" and "review" pass any prefilter — visits every
# character at several times the tokenizer's cost per pattern.
_INSTRUCTION_PATTERNS: tuple[tuple[str, tuple[tuple[str, ...], ...], tuple[str, ...]], ...] = (
    (r"(?i)\b(?:ignore|disregard|forget)\b.{0,20}\b(?:previous|prior|above|all|earlier)\b"
     r".{0,20}\b(?:instructions?|rules?|prompts?|guidelines?)\b",
     (("ignore", "disregard", "forget"), ("instruction", "rule", "prompt", "guideline")),
     ("ignore", "disregard", "forget")),
    (r"(?i)\bskip\b.{0,20}\b(?:human\s+)?(?:approval|review|sign[- ]?off)\b",
     (("skip",), ("approval", "review", "sign")), ("skip",)),
    (r"(?i)\b(?:publish|deploy|merge|release)\b.{0,30}\bwithout\b.{0,20}"
     r"\b(?:approval|review)\b",
     (("without",), ("approval", "review")), ("publish", "deploy", "merge", "release")),
    (r"(?i)\b(?:publish|deploy)\s+(?:it\s+|this\s+)?(?:now|immediately|directly)\b",
     (("publish", "deploy"), ("now", "immediately", "directly")), ("publish", "deploy")),
    (r"(?i)\byou\s+are\s+now\b", (("you",), ("now",)), ("you",)),
    (r"(?i)\bnew\s+(?:system\s+)?instructions?\s*:", (("instruction",),), ("new",)),
    (r"(?i)\b(?:reveal|print|show)\b.{0,20}\bsystem\s+prompt\b", (("prompt",),),
     ("reveal", "print", "show")),
    (r"(?:忽略|无视).{0,10}(?:指令|规则|批准|审批|提示)", (("忽略", "无视"),), ("忽略", "无视")),
    (r"跳过.{0,6}(?:批准|审批|评审|审核)", (("跳过",),), ("跳过",)),
    (r"直接发布", (("直接发布",),), ("直接发布",)),
    # Arabic: "ignore/neglect ... instructions/orders/rules/directions", "skip/bypass ...
    # review/approval", "publish ... now/immediately/directly" and "... without review". No
    # ``\b``: a conjunction or article attaches to the word ("وانشر", "التعليمات").
    (r"(?:تجاهل|أهمل).{0,30}(?:تعليمات|أوامر|قواعد|توجيهات)",
     (("تجاهل", "أهمل"), ("تعليمات", "أوامر", "قواعد", "توجيهات")), ("تجاهل", "أهمل")),
    (r"(?:تخط|تجاوز).{0,12}(?:مراجعة|موافقة)", (("تخط", "تجاوز"), ("مراجعة", "موافقة")),
     ("تخط", "تجاوز")),
    (r"انشر.{0,30}(?:الآن|فورا|فوراً|مباشرة|دون مراجعة|بدون مراجعة|دون موافقة|بدون موافقة)",
     (("انشر",),), ("انشر",)),
)
def _first_match(pattern: re.Pattern[str], lead: tuple[str, ...], text: str,
                 lowered: str | None) -> re.Match[str] | None:
    """``pattern.search(text)``, trying only the positions where a leading word occurs."""
    if not lead:
        return pattern.search(text)
    haystack = text
    if pattern.flags & re.IGNORECASE:
        if lowered is None:
            return pattern.search(text)  # a character that folds to ASCII: no shortcut
        haystack = lowered
    for at in occurrences(lead, haystack):
        m = pattern.match(text, at)  # ``\b`` still sees the character before ``at``
        if m:
            return m
    return None


def _every_group_in(groups: tuple[tuple[str, ...], ...], found: frozenset[str]) -> bool:
    for g in groups:  # plain loops, not all()/any(): no generator frame per pattern
        for word in g:
            if word in found:
                break
        else:
            return False
    return True


@dataclass(frozen=True)
class SecretScan:
    kinds: tuple[str, ...]
    redacted: str


@dataclass(frozen=True)
class ArgumentScan:
    """Secrets in a tool call's arguments: the redacted arguments and, per finding, where
    (``arguments.<key>[<index>]…``) and what kind — never the value."""

    arguments: dict[str, Any]
    findings: tuple[tuple[str, str], ...]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(kind for _, kind in self.findings))


_SECRET_KEY = re.compile(rf"(?ai)(?:{_KEY_WORDS}|{'|'.join(_CJK_KEY_WORDS)})\Z")


class Detector:
    """Compiled detectors for one policy (built-ins plus the policy's extra patterns)."""

    def __init__(self, extra_secret: Iterable[str] = (), extra_instruction: Iterable[str] = ()):
        policy = tuple(_Shape(f"policy_pattern_{i}", re.compile(p), ())
                       for i, p in enumerate(extra_secret))
        self._shapes = (*_TOKEN_SHAPES, *policy, *_CONTEXT_SHAPES)
        self._secret_words = tuple(sorted(
            {w for shape in self._shapes if not shape.folded for w in shape.needles}))
        folded = {w for shape in self._shapes if shape.folded for w in shape.needles}
        self._secret_folded = tuple(sorted(folded))
        # which shapes each prefilter word lets run (a text runs only those)
        by_word: dict[str, list[int]] = {}
        by_folded: dict[str, list[int]] = {}
        for index, shape in enumerate(self._shapes):
            for word in shape.needles:
                (by_folded if shape.folded else by_word).setdefault(word, []).append(index)
        self._by_word = {w: tuple(ix) for w, ix in by_word.items()}
        self._by_folded_word = {w: tuple(ix) for w, ix in by_folded.items()}
        self._unfiltered = tuple(i for i, shape in enumerate(self._shapes) if not shape.needles)
        instructions = [(re.compile(p), groups, lead)
                        for p, groups, lead in _INSTRUCTION_PATTERNS]
        instructions += [(re.compile(p), (), ()) for p in extra_instruction]
        self._instructions = tuple(instructions)
        self._instruction_words = tuple(sorted(
            {w for _, groups, _ in instructions for g in groups for w in g}
        ))
        # one caseless pass answers both scans' prefilters
        self._folded_words = tuple(sorted(folded | set(self._instruction_words)))
        self._memo: OrderedDict[str, tuple[SecretScan | None, tuple[str, ...]]] = OrderedDict()
        self._argument_memo: OrderedDict[str, ArgumentScan | None] = OrderedDict()

    def assess(self, content_hash: str, text: str) -> tuple[SecretScan | None, tuple[str, ...]]:
        """Both scans, memoized by a *verified* content hash (scanning is the costly part)."""
        found = self._memo.get(content_hash)
        if found is not None:  # no LRU reordering: single dict ops stay thread-safe
            return found
        folded = find_casefolded(self._folded_words, text)
        result = (self._scan_all(text, folded), self.instruction_matches(text, folded))
        self._memo[content_hash] = result
        if len(self._memo) > _MEMO_ENTRIES:
            self._memo.popitem(last=False)
        return result

    def scan_secrets(self, text: str) -> SecretScan | None:
        """Kinds of secret material found and the text with each secret redacted — in the
        text as it is and in its decoded views (``context.admission.carriers``)."""
        return self._scan_all(text, find_casefolded(self._secret_folded, text))

    def secret_spans(self, text: str) -> list[tuple[int, int, str]]:
        """Where ``scan_secrets`` redacts ``text``: (start, end, kind) in ``text``'s own
        positions, ascending, not overlapping — for a caller that must cut the text and
        may not cut a secret in half (a search hit line)."""
        where: list[tuple[int, int, str]] = []
        self._scan_all(text, find_casefolded(self._secret_folded, text), where)
        return _merged(where)

    def _scan_all(self, text: str, folded: frozenset[str],
                  where: list[tuple[int, int, str]] | None = None) -> SecretScan | None:
        """``_scan``, then the same shapes over each decoded view of what is left, each
        finding redacted in the carrier (the encoded text) at whole escapes; ``where``
        collects the spans in ``text``'s positions."""
        track = _Track() if where is not None else None
        first = self._scan(text, folded, track)
        base = text if first is None else first.redacted
        if first is None and (not carriers.has_escape(text) or (
                not self._active(text, folded) and not carriers.may_spell(text))):
            return None  # no decoded view, or one holding no word a shape starts from
        chain = carriers.views(base)
        found: list[tuple[int, int, str]] = []  # spans of ``base``
        for level in range(1, len(chain) + 1):
            view = chain[level - 1]
            inner = _Track()
            if self._scan(view.text, find_casefolded(self._secret_folded, view.text),
                          inner) is None:
                continue
            for _, _, a, b, kind in inner.marks:
                found.append((*carriers.encoded_span(chain[:level], a, b), kind))
        if track is not None and where is not None:
            where += [(a, b, kind) for _, _, a, b, kind in track.marks]
            where += [(track.original(a, end=False), track.original(b, end=True), kind)
                      for a, b, kind in found]
        if not found:
            return first
        kinds = list(first.kinds) if first is not None else []
        kinds += [kind for _, _, kind in found if kind not in kinds]
        kinds = list(dict.fromkeys(kinds))
        return SecretScan(tuple(kinds), _redact_carrier(base, chain[0], _merged(found)))

    def _active(self, text: str, folded: frozenset[str],
                found: frozenset[str] | None = None) -> set[int]:
        """The shapes whose prefilter passes on ``text``."""
        active = set(self._unfiltered)
        for word in find(self._secret_words, text) if found is None else found:
            active.update(self._by_word[word])
        for word in folded:
            shapes = self._by_folded_word.get(word)
            if shapes:
                active.update(shapes)
        return active

    def _scan(self, text: str, folded: frozenset[str],
              track: _Track | None = None) -> SecretScan | None:
        found = find(self._secret_words, text)
        active = self._active(text, folded, found)
        if not active:
            return None  # a clean text: no shape's prefilter passed
        kinds: list[str] = []
        redacted = text
        lowered: str | None = None
        gated: dict[int, list[int]] = {}
        stale = True
        for index in sorted(active):
            shape = self._shapes[index]
            lead: Collection[str] | None = None
            if shape.also and not contains_any(shape.also, redacted):
                continue
            if shape.lead_is_needles:  # a leading word that does not occur starts nothing
                lead = shape.needle_set & (folded if shape.folded else found)
            if shape.folded and stale:
                lowered, stale = _lowered(redacted), False
                gated = {}
            spans = _shape_spans(shape, redacted, lowered, lead, gated)
            if spans:
                if track is not None:
                    track.redacted(spans, shape.kind)
                redacted, stale = _redact_spans(redacted, spans, shape.kind), True
                if shape.kind not in kinds:
                    kinds.append(shape.kind)
        return SecretScan(tuple(kinds), redacted) if kinds else None

    def scan_arguments(self, argument_hash: str, arguments: dict[str, Any]) -> ArgumentScan | None:
        """Secrets in a tool call's arguments (every string, at any depth, and any string
        value under a key that names a secret), memoized by the *verified* argument hash.
        Keys are kept as they are; only values are replaced."""
        found = self._argument_memo.get(argument_hash, False)
        if found is not False:
            return found  # type: ignore[return-value]
        result = self.redact_arguments(arguments)
        self._argument_memo[argument_hash] = result
        if len(self._argument_memo) > _MEMO_ENTRIES:
            self._argument_memo.popitem(last=False)
        return result

    def redact_arguments(self, arguments: dict[str, Any]) -> ArgumentScan | None:
        """``scan_arguments`` without the memo (for arguments with no verified hash)."""
        # one prefilter pass over all the strings at once (``repr`` escapes quotes,
        # backslashes and control characters, none of which a needle holds): most calls
        # hold nothing worth a closer look
        blob = repr(arguments)
        if not self._active(blob, find_casefolded(self._secret_folded, blob)):
            return None
        findings: list[tuple[str, str]] = []
        redacted = self._redact_value(arguments, "arguments", None, findings)
        return ArgumentScan(redacted, tuple(findings)) if findings else None

    def _redact_value(self, value: Any, where: str, key: str | None,
                      findings: list[tuple[str, str]]) -> Any:
        if isinstance(value, str):
            if (key is not None and len(value) >= 8 and _SECRET_KEY.search(key)
                    and not _placeholder(value) and value.lower() != key.lower()):
                findings.append((where, "assigned_secret"))
                return "[REDACTED:assigned_secret]"
            scan = self.scan_secrets(value)
            if scan is None:
                return value
            findings += [(where, kind) for kind in scan.kinds]
            return scan.redacted
        if isinstance(value, dict):
            return {k: self._redact_value(v, f"{where}.{k}", str(k), findings)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [self._redact_value(v, f"{where}[{i}]", None, findings)
                    for i, v in enumerate(value)]
        return value

    def instruction_matches(self, text: str,
                            present: frozenset[str] | None = None) -> tuple[str, ...]:
        """Instruction-like phrases found in ``text`` (first match per pattern, in order);
        ``present`` is the caseless prefilter's answer when the caller has it."""
        found: list[str] = []
        if present is None:
            present = find_casefolded(self._instruction_words, text)
        lowered: str | None = None
        checked = False
        for pattern, groups, lead in self._instructions:
            if groups and not _every_group_in(groups, present):
                continue
            if lead and not checked:
                checked = True
                if not any(c in text for c in _FOLDS_TO_ASCII):
                    lowered = text.lower()
            m = _first_match(pattern, lead, text, lowered)
            if m:
                found.append(m.group(0)[:80])
        if invisible.has_invisible(text):
            found += _hidden_flags(self, text, found)
        return tuple(found)


def _hidden_flags(detector: Detector, text: str, found: list[str]) -> list[str]:
    """Flags for what invisible characters hide (``context.invisible``): an instruction
    the text spells only for a reader that decodes TAG characters and skips the other
    invisible ones (``hidden: ignore previous instructions``), and — when any of them hides
    or reorders text (a TAG character, a bidi override) — how many invisible characters
    the text holds. Typography alone (a soft hyphen, an emoji's joiner) is not flagged."""
    flags = [f"hidden: {flag}" for flag in detector.instruction_matches(invisible.read_as(text))
             if flag not in found]
    marks = [ord(m.group()) for m in invisible.PATTERN.finditer(text)]
    if any(c in invisible.HIDING for c in marks):
        flags.append(f"invisible characters: {len(marks)}")
    return flags


_CACHE: dict[tuple[tuple[str, ...], tuple[str, ...]], Detector] = {}


def detector_for(extra_secret: tuple[str, ...], extra_instruction: tuple[str, ...]) -> Detector:
    """A compiled detector, memoized per pattern set (compilation is the costly part)."""
    key = (extra_secret, extra_instruction)
    found = _CACHE.get(key)
    if found is None:
        found = Detector(extra_secret, extra_instruction)
        _CACHE[key] = found
    return found


def clear_memos() -> None:
    """Forget memoized scans (compiled detectors stay)."""
    for detector in _CACHE.values():
        detector._memo.clear()
        detector._argument_memo.clear()


def redact_secrets(text: str) -> str:
    """``text`` with every secret the built-in detector finds replaced by
    ``[REDACTED:<kind>]`` — for error messages, refusal details and other text derived from
    external content that leaves the engine's gates (tool results, activity errors,
    blocked details)."""
    scan = detector_for((), ()).scan_secrets(text)
    return text if scan is None else scan.redacted


def redact_arguments(arguments: dict[str, Any]) -> ArgumentScan | None:
    """A tool call's arguments with every secret the built-in detector finds redacted
    (``Detector.redact_arguments``), or ``None`` when there is none."""
    return detector_for((), ()).redact_arguments(arguments)
