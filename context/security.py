"""Detectors behind the security gate: secret material and instruction-like text.

Both detectors are deterministic regular expressions, so the same content always yields
the same assessment. They are deliberately conservative:

* **Secrets** are high-precision token shapes (cloud keys, private key blocks, GitHub /
  Slack / OpenAI-style tokens) plus ``key = "value"`` assignments whose value is a quoted
  opaque string; a bare identifier such as ``token = get_token()`` is not a secret.
  Redaction replaces each match with ``[REDACTED:<kind>]`` and never touches the rest.
* **Instruction-like text** (``ignore previous instructions``, ``skip human approval``,
  ``publish without review``, their Chinese forms from seed 000, ...) is only *flagged*:
  the item stays data inside a delimited block (policy ``isolate_as_data``) unless the
  policy says ``deny``. A detector cannot prove text is harmless, which is why structure
  (data blocks, roles) — not detection — is the defence; the flag is for the audit trail.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

_MEMO_ENTRIES = 100_000

_SECRET_PATTERNS: tuple[tuple[str, str], ...] = (
    ("private_key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
    ("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("github_token", r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
    ("slack_token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
    ("api_key", r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b"),
    (
        "assigned_secret",
        r"(?i)\b(?:password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)\b"
        r"\s*[:=]\s*[\"'][^\"'\s]{8,}[\"']",
    ),
)

_INSTRUCTION_PATTERNS: tuple[str, ...] = (
    r"(?i)\b(?:ignore|disregard|forget)\b.{0,20}\b(?:previous|prior|above|all|earlier)\b"
    r".{0,20}\b(?:instructions?|rules?|prompts?|guidelines?)\b",
    r"(?i)\bskip\b.{0,20}\b(?:human\s+)?(?:approval|review|sign[- ]?off)\b",
    r"(?i)\b(?:publish|deploy|merge|release)\b.{0,30}\bwithout\b.{0,20}\b(?:approval|review)\b",
    r"(?i)\b(?:publish|deploy)\s+(?:it\s+|this\s+)?(?:now|immediately|directly)\b",
    r"(?i)\byou\s+are\s+now\b",
    r"(?i)\bnew\s+(?:system\s+)?instructions?\s*:",
    r"(?i)\b(?:reveal|print|show)\b.{0,20}\bsystem\s+prompt\b",
    r"(?:忽略|无视).{0,10}(?:指令|规则|批准|审批|提示)",
    r"跳过.{0,6}(?:批准|审批|评审|审核)",
    r"直接发布",
)


@dataclass(frozen=True)
class SecretScan:
    kinds: tuple[str, ...]
    redacted: str


class Detector:
    """Compiled detectors for one policy (built-ins plus the policy's extra patterns)."""

    def __init__(self, extra_secret: Iterable[str] = (), extra_instruction: Iterable[str] = ()):
        secrets = [(kind, re.compile(p)) for kind, p in _SECRET_PATTERNS]
        secrets += [(f"policy_pattern_{i}", re.compile(p)) for i, p in enumerate(extra_secret)]
        self._secrets = tuple(secrets)
        self._instructions = tuple(
            re.compile(p) for p in (*_INSTRUCTION_PATTERNS, *tuple(extra_instruction))
        )
        self._memo: OrderedDict[str, tuple[SecretScan | None, tuple[str, ...]]] = OrderedDict()

    def assess(self, content_hash: str, text: str) -> tuple[SecretScan | None, tuple[str, ...]]:
        """Both scans, memoized by a *verified* content hash (scanning is the costly part)."""
        found = self._memo.get(content_hash)
        if found is not None:
            self._memo.move_to_end(content_hash)
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
        for kind, pattern in self._secrets:
            redacted, n = pattern.subn(f"[REDACTED:{kind}]", redacted)
            if n:
                kinds.append(kind)
        return SecretScan(tuple(kinds), redacted) if kinds else None

    def instruction_matches(self, text: str) -> tuple[str, ...]:
        """Instruction-like phrases found in ``text`` (first match per pattern, in order)."""
        found: list[str] = []
        for pattern in self._instructions:
            m = pattern.search(text)
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
