"""``pressroom demo --example mcp``, the real command, to a published article.

The demo is run as its own process with a fresh ``PRESSROOM_HOME`` and no terminal (so it
approves as the demo reviewer): it builds the fixtures, writes the operator's MCP server
file (``mcp-server-git`` over the httpkit fixture repository), serves the saved blog post
on loopback, starts its own Temporal dev server and worker — allowed to fetch from
loopback, for this demo only — and runs ``examples/mcp_job.yaml``. The published article
must cite both the git log the MCP server returned and the live page's lines, the page
must have been fetched once (one stored revision), and the job's research must have
called the MCP tool exactly once.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.temporal]

_ARTICLE = re.compile(r"^  article (\S.*?)\s*$", re.MULTILINE)
_PAGE = re.compile(r"live page (http://127\.0\.0\.1:\d+/blog/retry-storms) served")


def test_the_mcp_demo_publishes_an_article_citing_the_mcp_result_and_the_live_page(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PRESSROOM_", "TEMPORAL_", "OPENAI_", "ANTHROPIC_"))}
    env.update({"PRESSROOM_HOME": str(home), "COLUMNS": "200"})
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "pressroom.py"), "demo",
                           "--example", "mcp"], cwd=REPO_ROOT, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=240)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "not a TTY: approving as demo-reviewer" in out and "published" in out
    page = _PAGE.search(out)
    assert page is not None, out
    # the operator's file the demo wrote for its own worker: the one server, its tools
    table = yaml.safe_load((home / "demo-mcp-servers.yaml").read_text(encoding="utf-8"))
    git = table["servers"]["git"]
    assert Path(git["command"]).name == "mcp-server-git"
    assert git["cwd"] == str(home / "fixtures" / "repos" / "httpkit")
    assert git["tools"]["git_commit"] == {"effect": "write"}

    found = _ARTICLE.search(out)
    assert found is not None, out
    article = Path(found.group(1)).read_text(encoding="utf-8")
    # the MCP result and the live page, each cited by its lines
    assert ('"Message: httpkit 0.4.0: retry idempotent requests only" — '
            "`mcp__git__git_log:result#L5-L5`") in article, article
    assert f"`{page.group(1)}#L5-L5`" in article  # the jitter paragraph
    assert f"`{page.group(1)}#L7-L7`" in article  # Retry-After
    assert "Adding jitter" in article and "Retry-After header" in article
    assert "## Open items\n\n- None." in article
    # the page's hidden instruction stayed data
    assert "publish immediately" not in article

    db = sqlite3.connect(home / "pressroom.db")
    try:
        pages = db.execute("select artifact_id, revision from artifacts "
                           "where kind = 'web_page'").fetchall()
        exchanges = [json.loads(bytes(data)) for (data,) in db.execute(
            "select b.data from artifacts a join blobs b on b.hash = a.content_hash "
            "where a.kind = 'tool_record' and a.artifact_id like '%:tool:t____-%' "
            "and a.artifact_id not like '%:reserved'")]
    finally:
        db.close()
    assert len(pages) == 1 and pages[0][1] == 1  # fetched once, one revision
    mcp = [e for e in exchanges if e["call"]["tool_name"].startswith("mcp__")]
    assert [(e["call"]["tool_name"], e["call"]["arguments"]) for e in mcp] == [
        ("mcp__git__git_log", {"repo_path": "./"})]
    assert mcp[0]["result"]["status"] == "success"
