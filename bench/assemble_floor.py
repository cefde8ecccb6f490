"""The floor under a cold assembly: the compiled-code work the context engine must do, each
part timed alone, against tiktoken alone on the candidates' content.

Usage: ``python bench/assemble_floor.py [--sizes 100,1000,10000]`` — prints JSON.

Why this exists: the cold target (at most 1.3 times the time tiktoken alone needs to count
the candidates' content once) assumes the tokenizer is the floor. Since the budget stopped
tokenizing what a lower bound proves cannot fit, it is not: a cold assembly also
re-hashes every candidate (integrity gate), scans every candidate for secret shapes and
instruction-like words (security gate), counts every text it sends, encodes and hashes the
request twice (the sealed provider payload and the assembly input) and encodes and hashes
the manifest. Each part below is that work done by compiled code alone — no pipeline, no
Python bookkeeping — on the same workload as ``bench/assemble.py`` (the texts actually
sent come from one real assembly): the sum is a lower bound no CPython implementation of
the pipeline can go under. Best of 7 per part (the floor, not a typical run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from assemble import workload

from context import Detector, Ready, TokenCounter, assemble
from context.admission.needles import find, find_casefolded
from context.tokens import _count_all, _tokens, _worker_count_all


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")


def _best(f: Callable[[], object], runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1000)
    return min(times)


def _sent_texts(out: Ready) -> list[str]:
    texts: list[str] = []
    for message in out.serialized.payload["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [p["text"] if "text" in p else json.dumps(p) for p in content]
    return texts


def floor(n: int) -> dict[str, Any]:
    req = workload(n, 500 * n)
    out = assemble(req, counter=TokenCounter())
    assert isinstance(out, Ready)
    contents = [c.content for c in req.candidates]
    sent = _sent_texts(out)
    # the two halves the engine's batch counting would give its two threads
    halves: tuple[list[str], list[str]] = ([], [])
    sizes = [0, 0]
    for text in sorted(sent, key=len, reverse=True):
        k = 0 if sizes[0] <= sizes[1] else 1
        halves[k].append(text)
        sizes[k] += len(text)
    pool = ThreadPoolExecutor(1)
    pool.submit(_worker_count_all, ["warm up"]).result()

    def count_two_threads() -> None:
        other = pool.submit(_worker_count_all, halves[1])
        _count_all(halves[0])
        other.result()

    detector = Detector()
    # the gate's two passes: secret shapes as written, and one caseless pass for the
    # instruction words and the case-insensitive secret words together
    words, shapes = detector._folded_words, detector._secret_words
    payload, manifest = out.serialized.payload, out.manifest.model_dump(mode="json")
    parts = {
        "integrity_rehash": _best(
            lambda: [hashlib.sha256(t.encode()).digest() for t in contents]),
        "security_scans": _best(
            lambda: [(find(shapes, t), find_casefolded(words, t)) for t in contents]),
        "count_sent_texts_two_threads": _best(count_two_threads),
        "request_encode_and_hash_twice": _best(
            lambda: [hashlib.sha256(_canonical(payload)).digest() for _ in range(2)]),
        "manifest_encode_and_hash": _best(lambda: hashlib.sha256(_canonical(manifest))),
    }
    alone = _best(lambda: [_tokens(t) for t in contents])
    total = sum(parts.values())
    pool.shutdown()
    return {
        "candidates": n,
        "tiktoken_alone_ms": round(alone, 2),
        "parts_ms": {k: round(v, 2) for k, v in parts.items()},
        "floor_ms": round(total, 2),
        "floor_vs_tiktoken": round(total / alone, 3),
        "left_for_everything_else_at_1_3x_ms": round(1.3 * alone - total, 2),
        "per_candidate_us_left": round((1.3 * alone - total) * 1000 / n, 1),
        "texts_sent": len(sent),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--single", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.single is not None:
        print(json.dumps(floor(args.single)))
        return
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        # a fresh interpreter per size, as bench/assemble.py does: one size's heap and
        # thread state must not slow the next
        done = subprocess.run([sys.executable, __file__, "--single", str(n)], check=True,
                              capture_output=True, text=True)
        results.append(json.loads(done.stdout))
    print(json.dumps({"results": results}, indent=2))


if __name__ == "__main__":
    main()
