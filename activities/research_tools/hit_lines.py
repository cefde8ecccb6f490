"""A search hit line cut to ``MAX_HIT_LINE_CHARS`` without cutting a secret in half.

Why: the security gate redacts a secret where its whole shape is in the text
(SECURITY.md, section 4). A hit line cut blindly at 300 characters can end inside one —
``password = "Xk29fjQm`` with its closing quote cut off matches no shape — and the part
before the cut would reach the model unflagged. So the secrets of the *whole* line are
found first (the built-in detector, encoded carriers included), and a cut that would leave
one of them undetectable moves back to where that secret starts; what was cut off is said
with a ``[REDACTED:<kind>]`` marker. A secret the cut line still shows whole (or still
detectably) is left to the gate, which redacts and flags it as for any other result.

Cost: nothing for a line within the limit; one detector scan of a longer line (at most
``MAX_HITS`` per search).
"""

from __future__ import annotations

from activities.research_tools.arguments import MAX_HIT_LINE_CHARS
from context import detector_for


def _covered(span: tuple[int, int], found: list[tuple[int, int, str]], cut: int) -> bool:
    """Whether the cut line's own secrets still cover what of ``span`` it keeps."""
    a, b = span
    return any(fa <= a and fb >= min(b, cut) for fa, fb, _ in found)


def hit_line(line: str, limit: int = MAX_HIT_LINE_CHARS) -> str:
    """``line`` up to ``limit`` characters, never ending inside a detectable secret."""
    if len(line) <= limit:
        return line
    detector = detector_for((), ())
    secrets = detector.secret_spans(line)
    cut, marker = limit, ""
    while True:
        found = detector.secret_spans(line[:cut])
        broken = [(a, b, kind) for a, b, kind in secrets
                  if a < cut and not _covered((a, b), found, cut)]
        if not broken:
            return line[:cut] + marker
        cut, _, kind = min(broken)
        marker = f"[REDACTED:{kind}]"
