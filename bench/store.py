"""Benchmark of the artifact store: put/get throughput and latency, and peak memory of a
50 MB round trip, on SQLite and PostgreSQL. Prints one JSON document.

Usage: ``python bench/store.py [--postgres-url URL] [--quick]``. The PostgreSQL half uses
``--postgres-url``, else ``$PRESSROOM_BENCH_POSTGRES_URL`` or
``$PRESSROOM_TEST_POSTGRES_URL``; it is reported as skipped when none is set. The bench
drops and recreates the store's tables in that database, so never point it at real data.

Memory is measured in a fresh subprocess per engine and scenario: after opening the
store and a warm-up, the kernel's peak-RSS counter is reset (``/proc/self/clear_refs``),
then the 50 MB body is created (it counts), put, read back and checked. Reported: the
process's peak RSS, and its growth over the pre-round-trip baseline in multiples of the
body size (the budget is < 3x). Two callers: one keeps its body and compares bytes (two
bodies alive at the end, by construction), one drops it after the put and checks the
sha256.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from artifacts import ArtifactKind, Principal, Scope, open_store
from artifacts.database import connect
from artifacts.migrate import downgrade

OWNER = Principal(principal_id="bench", tenant="bench", project="bench")
SCOPE = Scope(tenant="bench", project="bench", task="bench")
KIND = ArtifactKind.DOCUMENT
MB = 1024 * 1024
SIZES = {"1KB": 1024, "100KB": 100 * 1024, "10MB": 10 * MB}
BIG = 50 * MB


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 3),
            "p95_ms": round(p95 * 1000, 3)}


async def _fresh(url: str) -> None:
    """Empty the store's tables so every run starts from the same state."""
    db = await connect(url)
    try:
        await downgrade(db, "base")
    finally:
        await db.dispose()


async def bench_engine(url: str, counts: dict[str, int]) -> dict[str, Any]:
    await _fresh(url)
    store = await open_store(url, migrate=True)
    out: dict[str, Any] = {}
    try:
        for label, size in SIZES.items():
            n = counts[label]
            # Distinct bodies: identical ones would be deduplicated and skip the blob write.
            bodies = [os.urandom(size) for _ in range(n)]
            puts: list[float] = []
            t0 = time.perf_counter()
            for i, body in enumerate(bodies):
                s = time.perf_counter()
                await store.put(KIND, f"{label}-{i}", body, principal=OWNER, scope=SCOPE,
                                trust="external_evidence", parent_revision=None)
                puts.append(time.perf_counter() - s)
            put_total = time.perf_counter() - t0
            del bodies
            gets: list[float] = []
            t0 = time.perf_counter()
            for i in range(n):
                s = time.perf_counter()
                _, got = await store.get(KIND, f"{label}-{i}", principal=OWNER)
                gets.append(time.perf_counter() - s)
                assert len(got) == size
            get_total = time.perf_counter() - t0
            out[label] = {
                "n": n,
                "put": {"ops_per_s": round(n / put_total, 1), **_ms(puts)},
                "get": {"ops_per_s": round(n / get_total, 1), **_ms(gets)},
            }
    finally:
        await store.close()
    return out


def _status_kb(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


async def rss_child(url: str, keep_body: bool) -> dict[str, Any]:
    """Runs in a fresh interpreter: peak RSS of creating a 50 MB body, putting it, reading
    it back and checking it. ``keep_body``: the caller holds its body during the get and
    compares bytes (body + result alive at once); otherwise it drops the body after the
    put and checks the result's sha256."""
    await _fresh(url)
    store = await open_store(url, migrate=True)
    try:
        await store.put(KIND, "warm", b"warm-up", principal=OWNER, scope=SCOPE,
                        trust="external_evidence", parent_revision=None)
        await store.get(KIND, "warm", principal=OWNER)
        baseline_kb = _status_kb("VmRSS") or 0
        reset = True
        try:
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to current RSS
        except OSError:
            reset = False
        body = os.urandom(BIG)
        digest = hashlib.sha256(body).hexdigest()
        await store.put(KIND, "big", body, principal=OWNER, scope=SCOPE,
                        trust="external_evidence", parent_revision=None)
        after_put_kb = _status_kb("VmHWM")
        if keep_body:
            rec, got = await store.get(KIND, "big", principal=OWNER)
            assert got == body
        else:
            del body
            rec, got = await store.get(KIND, "big", principal=OWNER)
            assert hashlib.sha256(got).hexdigest() == digest
        assert rec.content_hash == "sha256:" + digest
        del got
    finally:
        await store.close()
    hwm_kb = _status_kb("VmHWM") if reset else None
    peak_kb = hwm_kb if hwm_kb is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    growth = (peak_kb - baseline_kb) * 1024
    return {
        "caller": "keeps body, compares bytes" if keep_body else "drops body, checks sha256",
        "baseline_rss_mb": round(baseline_kb / 1024, 1),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "peak_growth_mb": round(growth / MB, 1),
        "peak_growth_after_put_mb": round(((after_put_kb or 0) - baseline_kb) / 1024, 1),
        "peak_growth_x_body": round(growth / BIG, 2),
        "under_3x_body": growth < 3 * BIG,
        "peak_source": "VmHWM after clear_refs" if hwm_kb is not None else "ru_maxrss",
    }


def _run_child(url: str, keep_body: bool) -> dict[str, Any]:
    mode = "keep" if keep_body else "drop"
    proc = subprocess.run([sys.executable, __file__, "--rss-child", url, "--rss-mode", mode],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:]}
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres-url", default=os.environ.get("PRESSROOM_BENCH_POSTGRES_URL")
                        or os.environ.get("PRESSROOM_TEST_POSTGRES_URL"))
    parser.add_argument("--quick", action="store_true", help="fewer operations per size")
    parser.add_argument("--rss-child", help=argparse.SUPPRESS)
    parser.add_argument("--rss-mode", choices=["keep", "drop"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        print(json.dumps(asyncio.run(rss_child(args.rss_child, args.rss_mode == "keep"))))
        return

    counts = ({"1KB": 50, "100KB": 30, "10MB": 3} if args.quick
              else {"1KB": 500, "100KB": 200, "10MB": 20})
    with tempfile.TemporaryDirectory() as tmp:
        engines: dict[str, str | None] = {
            "sqlite": f"sqlite+aiosqlite:///{tmp}/bench.db",
            "postgresql": args.postgres_url,
        }
        report: dict[str, Any] = {
            "machine": {"python": platform.python_version(), "platform": platform.platform(),
                        "cpus": os.cpu_count(),
                        "mem_gib": round(os.sysconf("SC_PAGE_SIZE")
                                         * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)},
            "mode": "quick" if args.quick else "full",
            "sequential": "one operation at a time, each its own transaction",
            "engines": {},
        }
        for name, url in engines.items():
            if url is None:
                report["engines"][name] = {"skipped": "no PostgreSQL URL given"}
                continue
            report["engines"][name] = {
                "sizes": asyncio.run(bench_engine(url, counts)),
                "round_trip_50MB": {
                    "body_mb": BIG / MB,
                    "keep_body": _run_child(url, keep_body=True),
                    "drop_body": _run_child(url, keep_body=False),
                },
            }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
