"""Which required topics a tool result's *content* supports (``missing_topics`` input).

A tool exchange is not evidence by being present. A research acquisition's result, for
example, echoes its arguments (the source name, the topics and their terms) and reports
``missing_topics`` — so matching a topic name anywhere in the exchange would let the very
record that says "nothing found for X" cover X. The rule, applied by
``context.tools.stage.ToolStage.covered_topics``:

* **Admitted as evidence by the policy.** Only pairs placed verbatim in the request
  (not evicted, not folded into the history summary — a summary is a derived claim),
  whose ``evidence_use`` is ``confirmed_by_policy`` (``success``; ``partial``/``error``
  only under ``tool_pairs.allow_partial_evidence``), that are not synthesized
  placeholders and whose content was not withheld by the security policy.
* **Content only.** The call's arguments, the tool name, the call id, the status and the
  engine's own claim line never count. Only the result content is matched, with the
  topic's terms (its name included), case-insensitively — the same matching as for
  evidence items (``context.ranking.relevance``).
* **Structured results: payload fields only.** When the content is JSON (an object or an
  array), only its string and number *values* are matched, and these are skipped:

  - every value under a key that names topics (``topics``, ``missing_topics``,
    ``required_topics``, …): a topic label is a claim about coverage, not support for it;
  - every value under a bookkeeping key (:data:`META_KEYS`, or a key ending in ``_id``,
    ``_ids``, ``_hash``, ``_url``, ``_path``): identifiers, references, citations,
    outcome and status lines, reasons and warnings describe the tool run, not the subject
    (a warning "docs/rate-limit.md: skipped" is the opposite of evidence);
  - any string equal to one of the call's argument strings: an echo of the request;
  - dictionary keys themselves.

  Pressroom's acquisition summaries therefore cover nothing by themselves: their records
  are separate evidence candidates that cover topics when *they* are admitted and loaded.
* **Plain-text results** are matched as written: unstructured output cannot be split
  into payload and bookkeeping without guessing. A tool that reports negative findings
  ("no results for X") should return JSON with the finding under a bookkeeping key — as
  Pressroom's own acquisition tool does.

Pure and deterministic: no I/O, same input → same answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from context.request import TopicSpec

__all__ = ["META_KEYS", "content_topics", "evidence_text"]

#: Keys (case-insensitive, ``-`` read as ``_``) whose values describe a tool run or point
#: at something, rather than being the subject matter the run returned.
META_KEYS = frozenset({
    "id", "ids", "source", "sources", "source_name", "tool", "tool_name", "call",
    "outcome", "status", "state", "reason", "reasons", "warning", "warnings", "error",
    "errors", "message_id", "citation", "citations", "locator", "path", "paths", "url",
    "urls", "uri", "repo", "repository", "commit", "revision", "ref", "refs", "hash",
    "sha", "sha256", "digest", "query", "queries", "pattern", "patterns", "term", "terms",
    "arguments", "args", "params", "parameters", "request",
})
_META_SUFFIXES = ("_id", "_ids", "_hash", "_url", "_path")


def _is_meta_key(key: str) -> bool:
    k = key.casefold().replace("-", "_")
    return "topic" in k or k in META_KEYS or k.endswith(_META_SUFFIXES)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def _payload(value: Any, echoes: frozenset[str]) -> Iterator[str]:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, str):
        if value.casefold() not in echoes:
            yield value
    elif isinstance(value, int | float):
        yield str(value)
    elif isinstance(value, dict):
        for k in sorted(value):
            if not _is_meta_key(str(k)):
                yield from _payload(value[k], echoes)
    elif isinstance(value, list):
        for v in value:
            yield from _payload(v, echoes)


def evidence_text(content: str, arguments: Mapping[str, Any]) -> str:
    """The part of a tool result's ``content`` that may support a topic (see module doc)."""
    stripped = content.strip()
    if not stripped.startswith(("{", "[")):
        return content
    try:
        data = json.loads(stripped)
    except ValueError:  # looks structured but is not JSON: plain text
        return content
    echoes = frozenset(s.casefold() for s in _strings(dict(arguments)))
    return "\n".join(_payload(data, echoes))


def content_topics(
    content: str, arguments: Mapping[str, Any], topics: Sequence[TopicSpec]
) -> tuple[str, ...]:
    """Names of the ``topics`` whose terms occur in the evidence text of a tool result."""
    if not topics:
        return ()
    hay = evidence_text(content, arguments).casefold()
    return tuple(t.name for t in topics if any(term in hay for term in t.match_terms))
