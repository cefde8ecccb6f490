"""The text of a web page as lines: its main text, then any text the page hides.

Why ``trafilatura``: separating an article from navigation, cookie banners, footers and
related-post lists is a problem of its own, and trafilatura is the field-standard library
for it (evaluated against the other extractors in its own benchmark); a hand-written
``html.parser`` walk kept every menu and footer line, and each of those lines cost the
model context and ranking noise. Its Markdown output keeps headings as ``#`` lines, which
the source tools and the excerpt windows use as section boundaries
(``activities.sources.excerpts``).

Why the hidden text is added back: a page can hide text from its readers (``display:
none`` or ``visibility: hidden``, inline or through a class or id its own ``<style>``
hides, the ``hidden`` attribute, ``aria-hidden="true"``) and an extractor may or may not
keep it. Hiding text makes it neither trustworthy nor harmless — it is the usual place for
an instruction aimed at a model — so it is never dropped silently: whatever hidden text
the main text does not already hold is appended under the heading ``HIDDEN_HEADING``,
where the model reads it as part of the page and the engine's security gate
(docs/context-engine.md#effective-trust-and-role-limits) sees it like any other line.
HTML comments are not text of the page and are left out, as before.

Pure and deterministic (the same bytes give the same lines): a stored revision read twice,
by two workers, yields the same line numbers, so citations hold.
"""

from __future__ import annotations

import re
import textwrap

import lxml.html
import trafilatura
from lxml import etree

#: the section heading hidden text is listed under
HIDDEN_HEADING = "## Text this page hides from its readers"
_HIDING_STYLE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:px|em|rem|%)?\s*(?:;|$)",
    re.IGNORECASE)
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_SIMPLE_SELECTOR = re.compile(r"^(?:[a-z0-9]*)([.#])([A-Za-z0-9_-]+)$")
_SKIPPED = {"script", "style", "template", "noscript", "head", "title"}
#: a line of the fallback (a page trafilatura finds no main text in) is cut at this width
_FALLBACK_WIDTH = 200


def _hiding_selectors(tree: etree._Element) -> tuple[set[str], set[str]]:
    """The classes and ids the page's own ``<style>`` blocks hide (``.c`` / ``#i`` /
    ``tag.c`` selectors of a rule that sets ``display: none`` or ``visibility: hidden``)."""
    classes: set[str] = set()
    ids: set[str] = set()
    for style in tree.iter("style"):
        css = re.sub(r"/\*.*?\*/", "", style.text or "", flags=re.DOTALL)
        for selectors, body in _RULE.findall(css):
            if not _HIDING_STYLE.search(body):
                continue
            for selector in selectors.split(","):
                found = _SIMPLE_SELECTOR.match(selector.strip())
                if found:
                    (classes if found.group(1) == "." else ids).add(found.group(2))
    return classes, ids


def _is_hidden(el: etree._Element, classes: set[str], ids: set[str]) -> bool:
    if el.get("hidden") is not None or (el.get("aria-hidden") or "").strip().lower() == "true":
        return True
    if _HIDING_STYLE.search(el.get("style") or ""):
        return True
    if (el.get("id") or "") in ids:
        return True
    return any(c in classes for c in (el.get("class") or "").split())


def hidden_texts(html: str) -> list[str]:
    """The text of every element the page hides (outermost only), whitespace collapsed."""
    try:
        tree = lxml.html.fromstring(html)
    except (etree.ParserError, ValueError):
        return []
    classes, ids = _hiding_selectors(tree)
    found: list[str] = []
    hidden: set[etree._Element] = set()
    for el in tree.iter():
        if not isinstance(el.tag, str) or el.tag in _SKIPPED:
            continue
        parent = el.getparent()
        if parent is not None and parent in hidden:
            hidden.add(el)  # inside a hidden element: its text is already taken
            continue
        if _is_hidden(el, classes, ids):
            hidden.add(el)
            text = " ".join("".join(
                t for t in el.itertext() if isinstance(t, str)).split())
            if text:
                found.append(text)
    return found


def _squash(text: str) -> str:
    return " ".join(text.split()).lower()


def main_text_lines(html: str) -> list[str]:
    """The page's main text (trafilatura, Markdown: headings as ``#`` lines), one block a
    line; a page it finds no main text in falls back to all of its text."""
    text = trafilatura.extract(html, output_format="markdown", include_comments=False,
                               include_tables=True, include_images=False,
                               include_links=False, favor_recall=True, deduplicate=False)
    if text:
        return [line.rstrip() for line in text.splitlines() if line.strip()]
    plain = trafilatura.html2txt(html) or ""
    return textwrap.wrap(" ".join(plain.split()), _FALLBACK_WIDTH)


def html_to_lines(html: str) -> list[str]:
    """The page's text as lines: its main text, then — under ``HIDDEN_HEADING`` — every
    hidden text the main text does not already hold."""
    lines = main_text_lines(html)
    seen = _squash("\n".join(lines))
    extra = [text for text in hidden_texts(html) if _squash(text) not in seen]
    if extra:
        lines = [*lines, HIDDEN_HEADING, *extra]
    return [line for line in lines if line.strip("# ")]


__all__ = ["HIDDEN_HEADING", "hidden_texts", "html_to_lines", "main_text_lines"]
