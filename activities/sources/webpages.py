"""A web page's text, for the ``web_page`` source kind (``activities.sources.web_page``):
a saved copy read inside the roots, or a live page's stored revision.

Web text is ``untrusted_external_data`` whatever it says
(docs/context-engine.md#effective-trust-and-role-limits): a page that tells the agent to skip
approval is evidence *that the page says so*, nothing more. Its main text is extracted with
``trafilatura`` (``web_extract``; navigation, footers and scripts dropped) and any text the
page hides is appended — hiding text makes it neither trustworthy nor harmless, and the
engine's security gate must see it.

A live page (``url:`` and no ``path:``) is read from its stored revision
(``web_revisions.WebPages``): fetched once under the operator's rules, then the same bytes
for every read of the job.

A saved page is read only inside the worker's source roots (``contracts.path_safety``):
outside them, on ``/proc``, ``/sys`` or ``/dev``, not a regular file (a FIFO, socket or
device) or over ``MAX_PAGE_BYTES`` (checked before a byte is read), it is refused with
``PathRefused``, a bad job spec that fails the step.
"""

from __future__ import annotations

import codecs
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from activities.sources.errors import RetrievalFailed
from activities.sources.web_extract import html_to_lines
from contracts.path_safety import PathRoots, locate, read_file

if TYPE_CHECKING:
    from activities.sources.web_revisions import PageRevision

MAX_PAGE_BYTES = 5_000_000


def read_page(location: str, roots: PathRoots) -> tuple[bytes, Path]:
    """The saved page's bytes and its path as named; ``RetrievalFailed`` when it does not
    exist, ``PathRefused`` when it may not be read."""
    located = locate(location, roots, "source", what="saved web page")
    try:
        return read_file(located, what="saved web page", max_bytes=MAX_PAGE_BYTES), \
            Path(location)
    except FileNotFoundError:
        raise RetrievalFailed(f"saved web page {location} does not exist") from None
    except OSError as exc:
        raise RetrievalFailed(f"saved web page {location} cannot be read "
                              f"({exc.strerror})") from None


def looks_like_html(path: Path, text: str) -> bool:
    return path.suffix.lower() in (".html", ".htm", ".xhtml") or text.lstrip().startswith("<")


def live_page_name(revision: PageRevision) -> str:
    """The one file name a live page is listed under: the last segment of its final URL's
    path when it is a plain name, else ``index.html`` (``index.txt`` for plain text)."""
    last = PurePosixPath(urlsplit(revision.final_url).path).name
    if last and len(last) <= 100 and all(c.isalnum() or c in "._-" for c in last) \
            and not last.startswith("."):
        return last
    return "index.txt" if revision.media_type == "text/plain" else "index.html"


def page_lines(name: str, data: bytes, *, html: bool | None = None,
               what: str = "web page", charset: str | None = None) -> list[str]:
    """The text lines of a page's bytes (``html``: whether it is HTML; ``None``: guessed
    from the name and the text), decoded as ``charset`` (a live page's ``Content-Type``
    says it; default UTF-8); ``RetrievalFailed`` if they do not decode."""
    encoding = "utf-8"
    if charset:
        try:
            encoding = codecs.lookup(charset).name
        except LookupError:
            raise RetrievalFailed(f"{what} {name} declares an unknown charset "
                                  f"{charset[:40]!r}") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise RetrievalFailed(f"{what} {name} is not valid {encoding.upper()} "
                              f"(byte {exc.start})") from exc
    is_html = looks_like_html(Path(name), text) if html is None else html
    return html_to_lines(text) if is_html else text.splitlines()


def revision_charset(revision: PageRevision) -> str | None:
    """The ``charset`` a stored live page's ``Content-Type`` names, if any."""
    for param in revision.headers.get("content-type", "").split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip().strip('"'):
            return value.strip().strip('"')
    return None


def revision_is_html(revision: PageRevision) -> bool | None:
    """Whether a stored live page is HTML by its content type (``None``: no type said)."""
    media = revision.media_type
    if not media:
        return None
    return media in ("text/html", "application/xhtml+xml")


