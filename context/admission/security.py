"""Detectors behind the security gate: secret material and instruction-like text.

Both detectors are deterministic regular expressions, so the same content always yields
the same assessment. They are deliberately conservative:

* **Secrets** are high-precision token shapes (cloud keys, private key blocks, GitHub /
  Slack / OpenAI-style tokens) plus ``key = "value"`` assignments whose value is a quoted
  opaque string; a bare identifier such as ``token = get_token()`` is not a secret.
  Redaction replaces each match with ``[REDACTED:<kind>]`` and never touches the rest.
* **Instruction-like text** (``ignore previous instructions``, ``skip human approval``,
  ``publish without review``, their Chinese forms
  (docs/context-engine.md#secrets-and-instruction-like-text), ...) is only *flagged*: the item
  stays data inside a delimited block (policy ``isolate_as_data``) unless the policy says
  ``deny``. A detector cannot prove text is harmless, which is why structure (data blocks,
  roles) — not detection — is the defence; the flag is for the audit trail.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from context.admission.needles import find, find_casefolded
from context.admission.scan import occurrences

_MEMO_ENTRIES = 60_000

# (kind, pattern, prefilter): the regex only runs when one of the prefilter's substrings
# occurs. Python's ``re`` cannot skip ahead on an alternation, so scanning megabytes with
# every pattern would cost several times the tokenizer; the prefilters — all found in one
# pass per text (``context.admission.needles``) — make a clean text cheap.
_SECRET_PATTERNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("private_key",
     r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
     ("PRIVATE KEY-----",)),
    ("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", ("AKIA", "ASIA")),
    ("github_token", r"\bgh[pousr]_[A-Za-z0-9]{36,}\b",
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ("slack_token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b", ("xox",)),
    ("api_key", r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b", ("sk-",)),
)
# ``password = "…"``-style assignments: find the quoted assignment first (a char-class
# prefix ``re`` skips to quickly), then look for the key word just before it.
_ASSIGNED_VALUE = re.compile(r"[:=]\s*[\"'][^\"'\s]{8,}[\"']")
_ASSIGNED_KEY = re.compile(
    r"(?i)\b(?:password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)\s*\Z"
)
_LOOKBACK = 40


def _assigned_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    if '"' not in text and "'" not in text:
        return spans  # no quoted value at all (two memchr scans, far cheaper than the regex)
    for m in _ASSIGNED_VALUE.finditer(text):
        start = max(0, m.start() - _LOOKBACK)
        key = _ASSIGNED_KEY.search(text, start, m.start())
        if key is not None:
            spans.append((key.start(), m.end()))
    return spans


def _redact_spans(text: str, spans: list[tuple[int, int]], kind: str) -> str:
    out: list[str] = []
    pos = 0
    for a, b in spans:
        if a < pos:
            continue
        out += [text[pos:a], f"[REDACTED:{kind}]"]
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
)
# The only characters outside ASCII that ``re``'s IGNORECASE matches to an ASCII letter
# (U+0130 dotted capital I, U+0131 dotless i, U+017F long s, U+212A Kelvin sign; found by
# trying every code point, pinned by a test). In a text without them
# ``lower()`` keeps every position, and a case-insensitive match of a lower-case ASCII word
# starts exactly where that word occurs in the lower-cased text.
_FOLDS_TO_ASCII = ("\u0130", "\u0131", "\u017f", "\u212a")


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


class Detector:
    """Compiled detectors for one policy (built-ins plus the policy's extra patterns)."""

    def __init__(self, extra_secret: Iterable[str] = (), extra_instruction: Iterable[str] = ()):
        secrets = [(kind, re.compile(p), pre) for kind, p, pre in _SECRET_PATTERNS]
        secrets += [(f"policy_pattern_{i}", re.compile(p), ()) for i, p in enumerate(extra_secret)]
        self._secrets = tuple(secrets)
        self._secret_words = tuple(sorted({w for _, _, pre in secrets for w in pre}))
        instructions = [(re.compile(p), groups, lead)
                        for p, groups, lead in _INSTRUCTION_PATTERNS]
        instructions += [(re.compile(p), (), ()) for p in extra_instruction]
        self._instructions = tuple(instructions)
        self._instruction_words = tuple(sorted(
            {w for _, groups, _ in instructions for g in groups for w in g}
        ))
        self._memo: OrderedDict[str, tuple[SecretScan | None, tuple[str, ...]]] = OrderedDict()

    def assess(self, content_hash: str, text: str) -> tuple[SecretScan | None, tuple[str, ...]]:
        """Both scans, memoized by a *verified* content hash (scanning is the costly part)."""
        found = self._memo.get(content_hash)
        if found is not None:  # no LRU reordering: single dict ops stay thread-safe
            return found
        result = (self.scan_secrets(text), self.instruction_matches(text))
        self._memo[content_hash] = result
        if len(self._memo) > _MEMO_ENTRIES:
            self._memo.popitem(last=False)
        return result

    def scan_secrets(self, text: str) -> SecretScan | None:
        """Kinds of secret material found and the text with each match redacted."""
        kinds: list[str] = []
        redacted = text
        found = find(self._secret_words, text)
        for kind, pattern, pre in self._secrets:
            if pre and not _every_group_in((pre,), found):
                continue
            redacted, n = pattern.subn(f"[REDACTED:{kind}]", redacted)
            if n:
                kinds.append(kind)
        spans = _assigned_spans(redacted)
        if spans:
            redacted = _redact_spans(redacted, spans, "assigned_secret")
            kinds.append("assigned_secret")
        return SecretScan(tuple(kinds), redacted) if kinds else None

    def instruction_matches(self, text: str) -> tuple[str, ...]:
        """Instruction-like phrases found in ``text`` (first match per pattern, in order)."""
        found: list[str] = []
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
        return tuple(found)


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
