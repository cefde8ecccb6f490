"""Data blocks: the hash-bound delimiters around untrusted and derived content.

Kept apart from ``context.seal.render`` (which lays out whole messages) so the one piece of
string building the trust boundary rests on stays small and checkable: building a block,
escaping content so it can never contain the delimiter prefix, and parsing blocks back
with their hash checked. The format is described in ``context.seal.render``'s docstring.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from context.errors import ContextError
from context.items import ContextItem, sha256_text
from context.tool_history import ToolPair

_WJ = "\u2060"
_SHORT_HASH = 16
_LT_RUN = re.compile("<{3,}")
_UNESCAPE = re.compile(f"{_WJ}({_WJ})?")


class DataBlockError(ContextError):
    """Text claimed to hold data blocks but one is malformed or fails its hash check."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DataBlockView(_Frozen):
    """One parsed data block; ``content`` is unescaped and verified against its hash."""

    item_id: str
    citation: str
    revision: str | None
    trust: str
    role: str
    flags: tuple[str, ...]
    content_hash: str
    content: str
    status: str | None = None
    evidence_use: str | None = None


#: a citation with a line range: ``<base>#L<a>-L<b>`` (``repo@commit:path``, ``name:path``
#: or a page's URL as the base)
LINE_RANGE = re.compile(r"^(?P<base>.+)#L(?P<a>\d+)-L(?P<b>\d+)$")


def block_citation(block: DataBlockView) -> str:
    """The block's citation with its line range; a page cites ``url#La-Lb`` from its id.
    The extractive provider cites with it and the review console resolves with it."""
    if LINE_RANGE.match(block.citation):
        return block.citation
    m = LINE_RANGE.match(block.item_id)
    if m and block.citation.startswith(("http://", "https://")):
        return f"{block.citation}#L{m.group('a')}-L{m.group('b')}"
    return block.citation


def escape_content(text: str) -> str:
    """Make ``text`` free of ``<<<`` reversibly (see the module docstring)."""
    if "<<<" not in text and _WJ not in text:
        return text
    text = text.replace(_WJ, _WJ + _WJ)
    return _LT_RUN.sub(lambda m: _WJ.join(_chunks(m.group(0))), text)


def _chunks(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(0, len(run), 2)]


def unescape_content(text: str) -> str:
    if _WJ not in text:
        return text
    return _UNESCAPE.sub(lambda m: _WJ if m.group(1) else "", text)


# the C string encoder behind json.dumps(value, ensure_ascii=False), without its set-up
_JSON_STR = json.encoder.encode_basestring


def _attr(value: str) -> str:
    return str(_JSON_STR(value)).replace("<", "\\u003c").replace(">", "\\u003e")


def _short(content: str) -> str:
    return sha256_text(content)[7 : 7 + _SHORT_HASH]


def _frame(
    attrs: Sequence[tuple[str, str]], content: str, content_hash: str | None = None
) -> tuple[str, str]:
    short = content_hash[7 : 7 + _SHORT_HASH] if content_hash else _short(content)
    head = " ".join(f"{k}={_attr(v)}" for k, v in attrs if v or k == "id")
    return f'<<<DATA {head} sha256="{short}">>>', f'<<<END DATA sha256="{short}">>>'


def _block(
    attrs: Sequence[tuple[str, str]], content: str, content_hash: str | None = None
) -> str:
    header, footer = _frame(attrs, content, content_hash)
    return f"{header}\n{escape_content(content)}\n{footer}"


def _item_source(item: ContextItem) -> str:
    """The block's ``source``: the item's citation, with its line range when it is a page
    (``url``) whose id does not carry the range (``block_citation`` reads a page's range
    from an excerpt's id) — a research note citing a live page's lines, which a draft can
    cite only with them (docs/architecture.md#live-web-pages)."""
    ref = item.source_ref
    cited = ref.citation()
    if (ref.url and cited == ref.url and ref.line_start is not None
            and ref.line_end is not None and not LINE_RANGE.match(item.item_id)):
        return f"{cited}#L{ref.line_start}-L{ref.line_end}"
    return cited


def _item_attrs(item: ContextItem, flags: Iterable[str]) -> list[tuple[str, str]]:
    return [
        ("id", item.item_id),
        ("source", _item_source(item)),
        ("revision", item.revision or ""),
        ("trust", str(item.trust)),
        ("role", str(item.intended_role)),
        ("flags", ",".join(sorted(set(flags)))),
    ]


#: what a tool result's short frame leaves unsaid (``parse_data_blocks`` reads it back):
#: its role, and for a successful result its status and evidence use. The tool and call
#: are the ``tool`` message's own (its call id, answered by the assistant's call), so the
#: frame that used to restate them (≈ 79 tokens a result, resent every turn) says only id,
#: trust and hash — and status and evidence use when they are not the usual ones
TOOL_RESULT_ROLE, USUAL_STATUS, USUAL_EVIDENCE_USE = ("tool_result", "success",
                                                      "confirmed_by_policy")
TOOL_RESULT_PREFIX = "tool-result:"


def _pair_attrs(pair: ToolPair, flags: Iterable[str]) -> list[tuple[str, str]]:
    unusual = str(pair.status) != USUAL_STATUS or pair.evidence_use != USUAL_EVIDENCE_USE
    return [
        ("id", pair.result_item_id),
        ("trust", "untrusted_external_data"),
        ("status", str(pair.status) if unusual else ""),
        ("evidence_use", pair.evidence_use if unusual else ""),
        ("flags", ",".join(sorted(set(flags)))),
    ]


def data_block(item: ContextItem, flags: Iterable[str] = (), *, hash_verified: bool = False) -> str:
    """``item`` as a hash-bound data block (untrusted or derived content).

    ``hash_verified=True`` is the engine's promise that ``item.content_hash`` is the sha256
    of ``item.content`` (the integrity gate checked it, or the engine derived the item):
    the markers then reuse it instead of hashing the content again — same bytes.
    """
    return _block(_item_attrs(item, flags), item.content,
                  item.content_hash if hash_verified else None)


def data_block_frame(item: ContextItem, flags: Iterable[str] = ()) -> tuple[str, str]:
    """(header, footer) of :func:`data_block`; the block is ``header\\nbody\\nfooter``
    with ``body = escape_content(item.content)`` — lets callers count the parts separately."""
    return _frame(_item_attrs(item, flags), item.content)


def tool_result_block(pair: ToolPair, flags: Iterable[str] = ()) -> str:
    """A tool result as a data block: tool output is untrusted observation, never control."""
    return _block(_pair_attrs(pair, flags), pair.result.content)


def tool_result_frame(pair: ToolPair, flags: Iterable[str] = ()) -> tuple[str, str]:
    """(header, footer) of :func:`tool_result_block` (same layout as ``data_block_frame``)."""
    return _frame(_pair_attrs(pair, flags), pair.result.content)


_HEADER = re.compile(r"^<<<DATA ((?:[a-z0-9_]+=\"(?:[^\"\\\n]|\\.)*\" ?)+)>>>\n", re.MULTILINE)
_PAIR = re.compile(r"([a-z0-9_]+)=(\"(?:[^\"\\\n]|\\.)*\")")


def parse_data_blocks(text: str) -> list[DataBlockView]:
    """Every data block in ``text``, in order; a malformed or forged block raises."""
    views: list[DataBlockView] = []
    pos = 0
    while (m := _HEADER.search(text, pos)) is not None:
        attrs = {k: str(json.loads(v)) for k, v in _PAIR.findall(m.group(1))}
        short = attrs.get("sha256")
        if short is None or "id" not in attrs:
            raise DataBlockError(f"data block at offset {m.start()} lacks id or sha256")
        end_marker = f'\n<<<END DATA sha256="{short}">>>'
        end = text.find("<<<", m.end())
        if end < 0 or not text.startswith(end_marker, end - 1):
            raise DataBlockError(f"data block {attrs['id']!r} has no matching END DATA marker")
        content = unescape_content(text[m.end() : end - 1])
        digest = sha256_text(content)
        if _short(content) != short:
            raise DataBlockError(f"data block {attrs['id']!r}: content does not match sha256")
        # a tool result's short frame states its role, status and evidence use only when
        # they are not the usual ones (``_pair_attrs``)
        tool = attrs["id"].startswith(TOOL_RESULT_PREFIX) and "role" not in attrs
        views.append(
            DataBlockView(
                item_id=attrs["id"],
                citation=attrs.get("source", ""),
                revision=attrs.get("revision") or None,
                trust=attrs.get("trust", ""),
                role=TOOL_RESULT_ROLE if tool else attrs.get("role", ""),
                flags=tuple(f for f in attrs.get("flags", "").split(",") if f),
                content_hash=digest,
                content=content,
                status=attrs.get("status") or (USUAL_STATUS if tool else None),
                evidence_use=attrs.get("evidence_use") or (USUAL_EVIDENCE_USE if tool else None),
            )
        )
        pos = end - 1 + len(end_marker)
    return views

