"""The README's "Your own job" works as written, and the README stays short.

A newcomer copies the README's commands and its minimal spec. These tests run them: the
first code block of "Your own job" (``pressroom reviewer keygen … --register``, ``pressroom
init``, ``pressroom check``) as a shell script in a fresh home folder, then the real
``pressroom check`` on the section's YAML spec, with the roots the README names. Nothing
reaches Temporal: ``check`` and ``init`` work offline (docs/configuration.md, "Checking a
spec").
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: the README's promise: read in five minutes
MAX_LINES = 200
#: nothing listens here: a command that tried to reach Temporal would fail on it
NO_SERVER = "127.0.0.1:9"


def section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def code_blocks(markdown: str) -> list[tuple[str, str]]:
    """Each fenced block as (its language, its text)."""
    return re.findall(r"^```(\w*)\n(.*?)^```", markdown, re.MULTILINE | re.DOTALL)


def test_the_readme_is_a_five_minute_read() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; keep it to {MAX_LINES}"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A user's home with what the README's commands name: ``~/research/client`` (a git
    repository tagged ``v2``) and ``~/research/notes``."""
    research = tmp_path / "research"
    (research / "notes").mkdir(parents=True)
    (research / "notes" / "retries.md").write_text(
        "# Retries\n\nThe client waits with exponential backoff; a Retry-After header wins.\n",
        encoding="utf-8")
    repo = research / "client"
    repo.mkdir()
    (repo / "retry.py").write_text("def backoff(attempt):\n    return 2 ** attempt\n",
                                   encoding="utf-8")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    subprocess.run([*git, "tag", "v2"], check=True)
    # `pressroom` on the PATH is this checkout's CLI, run by this interpreter
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "pressroom"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "pressroom.py"}" "$@"\n',
                        encoding="utf-8")
    launcher.chmod(0o755)
    return tmp_path


def shell(home: Path, script: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PRESSROOM_", "TEMPORAL_", "OPENAI_", "ANTHROPIC_"))}
    env.update(HOME=str(home), PATH=f"{home / 'bin'}:{env.get('PATH', '')}",
               PRESSROOM_TEMPORAL_ADDRESS=NO_SERVER, COLUMNS="200")
    return subprocess.run(["bash", "-euc", script], cwd=home, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_readme_commands_and_its_minimal_spec_pass_pressroom_check(home: Path) -> None:
    blocks = code_blocks(section("Your own job"))
    commands = next(text for lang, text in blocks if "pressroom init" in text)
    spec = next(text for lang, text in blocks if lang == "yaml")
    check = next(line for line in commands.splitlines() if line.startswith("pressroom check"))
    assert len(spec.splitlines()) <= 30, "the minimal spec stays minimal"

    # the commands as a newcomer types them: register a reviewer, init a spec, check it
    ran = shell(home, commands)
    assert ran.returncode == 0, (ran.stdout, ran.stderr)
    assert (home / ".pressroom" / "reviewers" / "alice.pub").is_file()
    assert "pinned client: ref v2 → commit" in ran.stdout
    assert ran.stdout.rstrip().endswith(f"{home}/research/job.yaml: ok"), ran.stdout

    # the README's own spec, in the same file, checked by the same command
    data = yaml.safe_load(spec)
    assert data["review"]["reviewers"] == ["alice"] and "commit" not in data["sources"][0]
    (home / "research" / "job.yaml").write_text(spec, encoding="utf-8")
    checked = shell(home, check)
    assert checked.returncode == 0, (checked.stdout, checked.stderr)
    assert checked.stdout.strip() == f"{home}/research/job.yaml: ok", checked.stdout
    assert checked.stderr == ""


def test_the_spec_check_fails_when_the_readme_spec_breaks_a_rule(home: Path) -> None:
    """The test can fail: the same spec with a reviewer nobody registered, or a source
    outside the roots, is refused."""
    blocks = code_blocks(section("Your own job"))
    commands = next(text for lang, text in blocks if "pressroom init" in text)
    spec = next(text for lang, text in blocks if lang == "yaml")
    check = next(line for line in commands.splitlines() if line.startswith("pressroom check"))
    data = yaml.safe_load(spec)
    data["review"]["reviewers"] = ["nobody-registered"]
    data["sources"][1]["path"] = str(home / "elsewhere")
    (home / "elsewhere").mkdir()
    (home / "research" / "job.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    checked = shell(home, check)
    assert checked.returncode == 1, (checked.stdout, checked.stderr)
    assert "review.reviewers" in checked.stderr and "sources.1.path" in checked.stderr
