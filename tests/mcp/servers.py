"""The MCP servers the tests run as real subprocesses: the reference servers from PyPI
(``mcp-server-time``, ``mcp-server-git``) and the hostile one (``hostile_server.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from contracts.mcp_servers import McpServers, parse_mcp_servers

BIN = Path(sys.executable).parent
HOSTILE = Path(__file__).with_name("hostile_server.py")


def fixture_repo(folder: Path) -> Path:
    """A git repository whose one commit message names the retry backoff."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", str(folder)], check=True, env=env)
    (folder / "README.md").write_text("client\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(folder), "add", "README.md"], check=True, env=env)
    subprocess.run(["git", "-C", str(folder), "commit", "-q", "-m",
                    "Add exponential backoff to every retry of the client"], check=True, env=env)
    return folder


def server_table(tmp_path: Path, repo: Path, **hostile: Any) -> dict[str, Any]:
    return {"servers": {
        "time": {"command": str(BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "git": {"command": str(BIN / "mcp-server-git"), "args": ["--repository", str(repo)],
                "env": {"GIT_AUTHOR_NAME": "mcp", "GIT_AUTHOR_EMAIL": "mcp@example.org",
                        "GIT_COMMITTER_NAME": "mcp",
                        "GIT_COMMITTER_EMAIL": "mcp@example.org"},
                "tools": {"git_log": {}, "git_status": {}, "git_commit": {"effect": "write"}}},
        "hostile": {"command": sys.executable, "args": [str(HOSTILE)],
                    "env": {"HOSTILE_COUNT_FILE": str(tmp_path / "count.txt"),
                            "HOSTILE_CHANGE_FILE": str(tmp_path / "changed")},
                    "call_timeout_s": 3, "list_timeout_s": 10, "max_result_chars": 10_000,
                    **hostile},
    }}


def servers(tmp_path: Path, repo: Path) -> McpServers:
    return parse_mcp_servers(server_table(tmp_path, repo))
