"""A research tool call reads within its byte budget, however well a repository compresses.

The repository is real and small on disk — two dozen blobs of nearly 4 MB each that
differ only in their first line, written by ``git fast-import`` into a pack of under a
megabyte — and expands to about 92 MB when read. One ``search`` over it must hold no more
than the call's byte budget (measured as the peak of Python's own allocations while the
call runs), search the files that fit, and name every file it skipped with the reason.
"""

from __future__ import annotations

import subprocess
import tracemalloc
from pathlib import Path

from activities.research_tools import MAX_CALL_BYTES, run_source_tool, search_hits
from contracts.source_specs import GitSourceSpec
from tests.sources.conftest import locations, roots

FILES = 24
#: long lines: few regex calls, so tracemalloc's slower allocations stay far from the
#: call's regex time
LINE = ("retry backoff jitter " * 100 + "\n").encode()
LINES_PER_FILE = 1_800  # 3.8 MB a file


def compressible_repository(folder: Path) -> tuple[Path, str]:
    """A repository of ``FILES`` large, nearly identical blobs; returns it and its commit."""
    repo = folder / "compressible"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    stream = bytearray()
    for index in range(FILES):
        body = f"file {index} needle\n".encode() + LINE * LINES_PER_FILE
        stream += b"blob\nmark :%d\ndata %d\n%b\n" % (index + 1, len(body), body)
    stream += b"commit refs/heads/main\ncommitter t <t@example.org> 0 +0000\ndata 2\nc\n"
    for index in range(FILES):
        stream += b"M 100644 :%d big/f%02d.txt\n" % (index + 1, index)
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=bytes(stream),
                   check=True)
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "main"], check=True,
                            capture_output=True, text=True).stdout.strip()
    return repo, commit


async def test_one_search_stays_within_its_byte_budget_and_names_what_it_skipped(
        tmp_path: Path) -> None:
    repo, commit = compressible_repository(tmp_path)
    packed = sum(p.stat().st_size for p in (repo / ".git" / "objects").rglob("*") if p.is_file())
    file_bytes = len(LINE) * LINES_PER_FILE
    assert packed < 2_000_000 and FILES * file_bytes > 5 * MAX_CALL_BYTES  # small, expands
    spec = GitSourceSpec(name="big", repo=str(repo), commit=commit)
    tracemalloc.start()
    try:
        found = await run_source_tool("search", {"source": "big", "query": "needle"}, [spec],
                                      locations(), roots=roots(tmp_path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    fit = MAX_CALL_BYTES // (file_bytes + 20)
    # what the call held: the files within its budget (each decoded once, one at a time),
    # never the whole expanded repository
    assert peak < 2.5 * MAX_CALL_BYTES, f"peak {peak / 1e6:.0f} MB for one search"
    assert found["files_searched"] == fit
    assert [path for path, *_ in search_hits(found)] == [f"big/f{i:02d}.txt" for i in range(fit)]
    assert found["skipped_count"] == FILES - fit
    assert found["skipped"][0] == {
        "path": f"big/f{fit:02d}.txt",
        "reason": f"the call's read budget of {MAX_CALL_BYTES} bytes is spent"}
