"""Benchmark of signed revisions (``artifacts.attestation``): what signing costs a put and
verifying costs a get, on SQLite and PostgreSQL. Prints one JSON document.

Usage: ``python bench/attestation.py [--postgres-url URL] [--quick]`` (PostgreSQL as in
``bench/store.py``: ``--postgres-url``, else ``$PRESSROOM_BENCH_POSTGRES_URL`` or
``$PRESSROOM_TEST_POSTGRES_URL``; skipped when none is set; the bench drops and recreates
the store's tables there, so never point it at real data).

Old and new are measured alternately on one database: each round runs a batch of puts and
then gets of 1 KB and 100 KB bodies through a store opened without a keyring ("unsigned",
the old behaviour) and through one opened with a keyring ("signed": every put signs, every
get is followed by ``verify``), the order of the two swapped every round, so drift of a
shared machine hits both alike. Also reported: the pure CPU cost of ``sign`` and
``verify`` (per-scope key already derived) and of deriving a scope key (HKDF, once per
tenant/project and key per worker).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import tempfile
import time
import timeit
from typing import Any

from artifacts import ArtifactKind, Principal, Scope, open_store
from artifacts.attestation import Keyring, parse_keyring
from artifacts.database import connect
from artifacts.migrate import downgrade

OWNER = Principal(principal_id="bench", tenant="bench", project="bench")
SCOPE = Scope(tenant="bench", project="bench", task="bench")
KIND = ArtifactKind.DOCUMENT
SIZES = {"1KB": 1024, "100KB": 100 * 1024}
MODES = ("unsigned", "signed")


def _keyring() -> Keyring:
    return parse_keyring(f"k1:{base64.b64encode(os.urandom(32)).decode()}")


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"ops_per_s": round(len(ordered) / sum(ordered), 1),
            "p50_ms": round(statistics.median(ordered) * 1000, 3),
            "p95_ms": round(p95 * 1000, 3)}


async def _fresh(url: str) -> None:
    db = await connect(url)
    try:
        await downgrade(db, "base")
    finally:
        await db.dispose()


async def bench_engine(url: str, rounds: int, per_round: int) -> dict[str, Any]:
    await _fresh(url)
    keyring = _keyring()
    stores = {"unsigned": await open_store(url, migrate=True),
              "signed": await open_store(url, keyring=keyring)}
    samples: dict[tuple[str, str, str], list[float]] = {}
    try:
        for label, size in SIZES.items():
            for r in range(rounds):
                order = MODES if r % 2 == 0 else MODES[::-1]
                for mode in order:
                    store = stores[mode]
                    bodies = [os.urandom(size) for _ in range(per_round)]
                    ids = [f"{label}-{mode}-{r}-{i}" for i in range(per_round)]
                    puts = samples.setdefault((label, mode, "put"), [])
                    for artifact_id, body in zip(ids, bodies, strict=True):
                        s = time.perf_counter()
                        await store.put(KIND, artifact_id, body, principal=OWNER,
                                        scope=SCOPE, trust="external_evidence",
                                        parent_revision=None)
                        puts.append(time.perf_counter() - s)
                    gets = samples.setdefault((label, mode, "get"), [])
                    for artifact_id in ids:
                        s = time.perf_counter()
                        rec, _ = await store.get(KIND, artifact_id, principal=OWNER)
                        verdict = store.verify(rec)
                        gets.append(time.perf_counter() - s)
                        assert verdict.status == ("verified" if mode == "signed"
                                                  else "unsigned")
    finally:
        for store in stores.values():
            await store.close()
    out: dict[str, Any] = {}
    for label in SIZES:
        row: dict[str, Any] = {}
        for op in ("put", "get"):
            old = _summary(samples[(label, "unsigned", op)])
            new = _summary(samples[(label, "signed", op)])
            row[op] = {"unsigned": old, "signed": new,
                       "p50_overhead_ms": round(new["p50_ms"] - old["p50_ms"], 3),
                       "p50_overhead_pct": round(100 * (new["p50_ms"] / old["p50_ms"] - 1), 1)}
        row["n_per_mode"] = rounds * per_round
        out[label] = row
    return out


async def cpu_costs() -> dict[str, float]:
    """Microseconds per ``sign`` / ``verify`` (warm scope key) and per HKDF derivation."""
    with tempfile.TemporaryDirectory() as tmp:
        keyring = _keyring()
        store = await open_store(f"sqlite+aiosqlite:///{tmp}/cpu.db", keyring=keyring)
        try:
            rec = await store.put(KIND, "cpu", b"x" * 1024, principal=OWNER, scope=SCOPE,
                                  trust="external_evidence", parent_revision=None,
                                  metadata={"write_id": "turn-1", "manifest_id": "m" * 40})
        finally:
            await store.close()
    n = 20_000
    sign = min(timeit.repeat(lambda: keyring.sign(rec), number=n, repeat=5)) / n
    verify = min(timeit.repeat(lambda: keyring.verify(rec), number=n, repeat=5)) / n

    def derive() -> None:
        keyring._derived.clear()
        keyring._scope_key("k1", "bench", "bench")

    hkdf = min(timeit.repeat(derive, number=2_000, repeat=5)) / 2_000
    return {"sign_us": round(sign * 1e6, 2), "verify_us": round(verify * 1e6, 2),
            "derive_scope_key_us": round(hkdf * 1e6, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres-url", default=os.environ.get("PRESSROOM_BENCH_POSTGRES_URL")
                        or os.environ.get("PRESSROOM_TEST_POSTGRES_URL"))
    parser.add_argument("--quick", action="store_true", help="fewer operations")
    args = parser.parse_args()
    rounds, per_round = (4, 50) if args.quick else (10, 100)
    report: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "cpu": asyncio.run(cpu_costs()),
        "engines": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        engines = {"sqlite": f"sqlite+aiosqlite:///{tmp}/bench.db",
                   "postgresql": args.postgres_url}
        for name, url in engines.items():
            if url is None:
                report["engines"][name] = {"skipped": "no PostgreSQL URL given"}
                continue
            report["engines"][name] = asyncio.run(bench_engine(url, rounds, per_round))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
