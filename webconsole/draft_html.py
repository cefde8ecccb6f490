"""A draft's Markdown as HTML in which nothing from a source or the model is ever live.

Only a small, fixed subset becomes markup — headings, paragraphs, bullet and numbered
lists, block quotes, inline code, ``**strong**`` and ``_emphasis_`` — and every piece of
text is escaped (``webconsole.shown``) before any tag is added, so ``<script>``, an
``onerror=`` attribute or a ``javascript:`` link in a draft is shown as the characters it
is. Links are never made: a URL stays text. A heading that is a bare topic name
(``backoff_formula``) reads as words ("Backoff formula"). Inline code that looks like a citation
(``…#L<a>-L<b>``) becomes a link to its excerpt on the same page when it resolves
(``webconsole.evidence``) labelled short (``httpkit README.md L4``, the whole citation
with its commit in the link's ``title``), and is flagged — and its list item or
paragraph marked as a claim with an unresolved citation — when it does not.

Pure: the caller gives the text and a resolver; the result is ``markupsafe.Markup`` plus
the excerpts cited, in order of first use.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from markupsafe import Markup, escape

from contracts.job_spec import topic_heading
from webconsole.evidence import Excerpt, looks_like_citation, short_label
from webconsole.shown import marked, shown

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
_QUOTE = re.compile(r"^\s*>\s?(.*)$")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EMPHASIS = re.compile(r"(?<![\w*])[_*](?=\S)(.+?)(?<=\S)[_*](?![\w*])")


@dataclass
class RenderedDraft:
    html: Markup
    cited: list[Excerpt] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    #: the text of each paragraph, list item and quote that cites anything (resolved or
    #: not), in order: claim ``n`` (1-based) is the element with ``id="claim-n"``
    claim_texts: list[str] = field(default_factory=list)

    @property
    def claims(self) -> int:
        return len(self.claim_texts)


class _Inline:
    def __init__(self, resolve: Callable[[str], Excerpt | None], out: RenderedDraft) -> None:
        self.resolve, self.out = resolve, out
        self.cites = False  # whether the last text converted cited anything

    def __call__(self, text: str) -> tuple[str, bool]:
        """``text`` as safe inline HTML, and whether it holds an unresolved citation."""
        parts: list[str] = []
        unresolved = False
        last = 0
        cites = False
        for m in _CODE_SPAN.finditer(text):
            cites |= looks_like_citation(m.group(1))
            parts.append(self._styled(text[last:m.start()]))
            parts.append(self._code(m.group(1)))
            unresolved |= looks_like_citation(m.group(1)) and self.resolve(m.group(1)) is None
            last = m.end()
        parts.append(self._styled(text[last:]))
        self.cites = cites
        return "".join(parts), unresolved

    @staticmethod
    def _styled(text: str) -> str:
        safe = str(shown(text))  # escaped first: the patterns below only add our own tags
        # emphasis inside and outside each strong span separately, so the tags always nest
        # (``**a _b** c_`` must not become ``<strong>a <em>b</strong> c</em>``)
        def emphasis(part: str) -> str:
            return _EMPHASIS.sub(r"<em>\1</em>", part)

        parts: list[str] = []
        last = 0
        for m in _STRONG.finditer(safe):
            parts += [emphasis(safe[last:m.start()]), f"<strong>{emphasis(m.group(1))}</strong>"]
            last = m.end()
        parts.append(emphasis(safe[last:]))
        return "".join(parts)

    def _code(self, code: str) -> str:
        if not looks_like_citation(code):
            return f"<code>{shown(code)}</code>"
        excerpt = self.resolve(code)
        if excerpt is None:
            if code not in self.out.unresolved:
                self.out.unresolved.append(code)
            return (f'<code class="cite unresolved" title="this citation does not resolve to '
                    f'any excerpt the model was shown">{shown(code)}</code>'
                    '<span class="flag" aria-label="unresolved citation">⚠ unresolved</span>')
        if all(c.anchor != excerpt.anchor for c in self.out.cited):
            self.out.cited.append(excerpt)
        full = escape(marked(code))  # an attribute: plain markers, no tags
        return (f'<a class="cite" href="#{excerpt.anchor}" data-excerpt="{excerpt.anchor}" '
                f'title="{full}">'
                f"<code>{shown(short_label(code))}</code></a>")


def render_draft(text: str, resolve: Callable[[str], Excerpt | None]) -> RenderedDraft:
    """``text`` (Markdown) as safe HTML with resolved citations linked."""
    out = RenderedDraft(html=Markup(""))
    inline = _Inline(resolve, out)
    html: list[str] = []
    open_list: str | None = None
    paragraph: list[str] = []

    def close_paragraph() -> None:
        if paragraph:
            text = " ".join(paragraph)
            body, bad = inline(text)
            html.append(f'<p{_claim(bad, _number(out, inline.cites, text))}>{body}</p>')
            paragraph.clear()

    def close_list() -> None:
        nonlocal open_list
        if open_list:
            html.append(f"</{open_list}>")
            open_list = None

    for line in text.splitlines():
        if not line.strip():
            close_paragraph()
            close_list()
            continue
        heading = _HEADING.match(line)
        bullet = _BULLET.match(line)
        numbered = None if bullet else _NUMBERED.match(line)
        quote = _QUOTE.match(line)
        if heading:
            close_paragraph()
            close_list()
            level = len(heading.group(1))
            title = heading.group(2).strip()
            body, bad = inline(topic_heading(title))
            html.append(f"<h{level + 1}{_claim(bad)}>{body}</h{level + 1}>")
        elif bullet or numbered:
            close_paragraph()
            kind = "ul" if bullet else "ol"
            if open_list != kind:
                close_list()
                html.append(f"<{kind}>")
                open_list = kind
            item = (bullet or numbered)
            assert item is not None
            body, bad = inline(item.group(1))
            html.append(f"<li{_claim(bad, _number(out, inline.cites, item.group(1)))}>"
                        f"{body}</li>")
        elif quote:
            close_paragraph()
            close_list()
            body, bad = inline(quote.group(1))
            number = _number(out, inline.cites, quote.group(1))
            html.append(f"<blockquote{_claim(bad, number)}>{body}</blockquote>")
        elif line.lstrip().startswith("<!--"):
            close_paragraph()  # an HTML comment (a draft's machine note) is shown as text
            html.append(f'<p class="note">{shown(line.strip())}</p>')
        else:
            close_list()
            paragraph.append(line.strip())
    close_paragraph()
    close_list()
    out.html = Markup("\n".join(html))
    return out


def _number(out: RenderedDraft, cites: bool, text: str) -> int | None:
    """The next claim number when ``text`` cites anything (its text recorded)."""
    if not cites:
        return None
    out.claim_texts.append(" ".join(text.split()))
    return len(out.claim_texts)


def _claim(unresolved: bool, number: int | None = None) -> str:
    anchor = f' id="claim-{number}"' if number is not None else ""
    return anchor + (' class="claim-unresolved"' if unresolved else "")


__all__ = ["RenderedDraft", "render_draft"]
