"""Every command Pressroom prints or documents is a real command (tests/cli_hints.py says
how hints are collected and checked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pressroom import app
from tests.cli_hints import Hint, check_hint, collect_hints
from webconsole.pages.job import _FIXES, resolve_actions


def test_every_hint_in_the_shipped_files_parses_with_the_real_cli() -> None:
    hints = collect_hints()
    # the collector finds what it is meant to: the README's code block, docstrings, the
    # runtime's printed hints (f-strings) and the console's templates
    wheres = {h.where.split(":")[0] for h in hints}
    assert {"README.md", "cli/commands.py", "webconsole/templates/signin.html"} <= wheres
    assert len(hints) > 150, len(hints)
    problems = [p for p in (check_hint(h, app) for h in hints) if p]
    assert not problems, "\n".join(problems)


def test_every_resolve_action_the_console_offers_parses() -> None:
    reasons = [*(f"{key} (detail)" for key in _FIXES), "something else", None,
               "budget_exhausted ($0.010000 of $0.010000 cost budget used)"]
    offered = {(status, a) for status in ("blocked", "needs_operator")
               for reason in reasons for a in resolve_actions(status, reason)}
    assert ("needs_operator", "") in offered and ("blocked", "--abandon") in offered
    assert resolve_actions("blocked", reasons[-1]) == ["--cost-budget USD", "--abandon"]
    for status, action in sorted(offered):
        hint = Hint(f"console {status}", f"pressroom resolve job-1 {action}".strip(),
                    in_prose=False)
        assert check_hint(hint, app) is None, (status, action, check_hint(hint, app))


@pytest.mark.parametrize(("text", "complaint"), [
    ("pressroom resolve JOB --retry", "has no option --retry"),
    ("pressroom resolve JOB --accept KEY@REVISION", "CANONICAL_KEY=REVISION"),
    ("pressroom resolve JOB --add-source FILE.yaml", "not a valid source spec"),
    ("pressroom frobnicate JOB", "no command 'frobnicate'"),
    ("pressroom reviewer grant NAME", "no command 'reviewer grant'"),
    ("pressroom approve", "required argument"),
    ("pressroom resolve JOB --budget TOKENS --abandon", "one resolution at a time"),
])
def test_the_checker_refuses_what_is_not_a_command(text: str, complaint: str) -> None:
    """The check can fail: each of these was (or could be) shown to someone."""
    problem = check_hint(Hint("here", text, in_prose=False), app)
    assert problem is not None and complaint in problem, problem


@pytest.mark.parametrize("text", [
    "pressroom run",  # prose naming a command
    "pressroom worker --metrics-port",  # prose naming an option
    "pressroom worker --tls-cert/--tls-key/--tls-ca",
    "pressroom resolve job-1 …",
    "pressroom status job-1 --json | jq -r .status",
])
def test_prose_references_are_read_as_references(text: str) -> None:
    assert check_hint(Hint("here", text, in_prose=True), app) is None


def test_piped_output_is_laid_out_wider_than_80_columns() -> None:
    """Without a terminal rich would wrap `explain`'s tables at 80 columns; a pipe gets the
    CLI's own width unless $COLUMNS is set."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    probe = "import pressroom; print(pressroom.console.width)"
    piped = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                           text=True, check=True, cwd=Path(__file__).resolve().parent.parent)
    assert piped.stdout.strip() == "200", piped
    narrow = subprocess.run([sys.executable, "-c", probe], env={**env, "COLUMNS": "100"},
                            capture_output=True, text=True, check=True,
                            cwd=Path(__file__).resolve().parent.parent)
    assert narrow.stdout.strip() == "100", narrow


def test_usage_notation_is_checked_not_skipped() -> None:
    ok = Hint("here", "pressroom eval agent [--questions FILE] [--json]", in_prose=True)
    assert check_hint(ok, app) is None
    bad = Hint("here", "pressroom eval agent [--frobnicate]", in_prose=True)
    assert "has no option --frobnicate" in (check_hint(bad, app) or "")
