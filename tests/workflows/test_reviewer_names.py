"""Reviewer and operator names a person can tell apart, through the real ``pressroom`` CLI
(each command its own process): a name mixing scripts — ``alice`` with a Cyrillic ``a`` (U+0430),
which looks exactly like ``alice`` in the console and maps to the key file ``_lice`` — and
a name confusable with a registered one are refused by ``reviewer keygen``, ``reviewer
add`` and ``run`` (contracts/names.py; SECURITY.md, "The review console shows, never runs,
and proves who decided").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from contracts.names import name_problem
from tests.webconsole.test_accounts import _cli
from tests.workflows.jobkit import job_dict, reviewer_entry
from tests.workflows.test_path_roots import never_started, one_line_error, pressroom

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]

#: ``alice`` with a Cyrillic first letter (U+0430)
MIXED = "\u0430lice"
#: ``ace`` written wholly in Cyrillic (U+0430 U+0441 U+0435): one script, Latin's twin
CYRILLIC_ACE = "\u0430\u0441\u0435"
PASSWORD = "a long enough password\n"


async def test_keygen_and_reviewer_add_refuse_mixed_and_look_alike_names(
        tmp_path: Path) -> None:
    """Before: both names got a key (``_lice.key``, ``___.key``) and an account that the
    console showed exactly like the Latin name's."""
    home = tmp_path / "home"
    home.mkdir()
    rc, _out, err = await _cli(home, "reviewer", "keygen", MIXED, "--register")
    line = one_line_error(rc, err, r"name '\u0430lice' mixes scripts (Cyrillic, Latin)")
    assert MIXED not in line  # spelled with escapes, unlike the name it imitates
    rc, _out, err = await _cli(home, "reviewer", "keygen", "ace", "--register")
    assert rc == 0, err
    rc, _out, err = await _cli(home, "reviewer", "keygen", CYRILLIC_ACE)
    one_line_error(rc, err, "looks like the registered name 'ace'")
    rc, _out, err = await _cli(home, "reviewer", "add", MIXED, "--password-stdin",
                               stdin=PASSWORD)
    one_line_error(rc, err, "mixes scripts")
    rc, _out, err = await _cli(home, "reviewer", "add", CYRILLIC_ACE, "--password-stdin",
                               stdin=PASSWORD)
    one_line_error(rc, err, "looks like the registered name 'ace'")
    # nothing was written for the refused names
    assert sorted(p.name for p in (home / "keys").iterdir()) == ["ace.key"]
    assert sorted(p.name for p in (home / "reviewers").iterdir()) == ["ace.pub"]
    assert not (home / "console").exists()
    # the registered name itself, and an unrelated one, still work
    rc, _out, err = await _cli(home, "reviewer", "add", "bob", "--password-stdin",
                               stdin=PASSWORD)
    assert rc == 0, err


async def test_run_refuses_a_spec_listing_a_mixed_or_look_alike_reviewer(
        temporal_env: Any, tmp_path: Path, docs: Path) -> None:
    """At submit, before anything starts: a pinned reviewer whose name mixes scripts, and
    an operator whose name imitates a reviewer the same spec lists."""
    home = tmp_path / "home"
    home.mkdir()
    address = temporal_env.client.service_client.config.target_host
    cases = [
        ({"reviewers": [reviewer_entry(MIXED)]}, "mixes scripts (Cyrillic, Latin)"),
        ({"reviewers": [reviewer_entry("ace")], "operators": [reviewer_entry(CYRILLIC_ACE)]},
         "looks like the registered name 'ace'"),
    ]
    for review, needle in cases:
        data = job_dict(tmp_path, docs, review={**review, "timeout": "10m"})
        job = tmp_path / f"{data['job_id']}.yaml"
        job.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
        rc, _out, err = await pressroom(home, address, "run", str(job))
        line = one_line_error(rc, err, needle, "field 'review'")
        assert MIXED not in line and CYRILLIC_ACE not in line
        await never_started(temporal_env.client, data["job_id"])


@pytest.mark.parametrize(("name", "known", "problem"), [
    ("alice", (), None),
    ("Ann Lee", ("ann_lee",), None),             # the registered name itself
    ("\u03a3\u03bf\u03c6\u03af\u03b1", (), None),  # Greek, one script
    ("山田はなこ", (), None),                    # Han with Hiragana: written together
    ("\u03a3\u03bf\u03c6i\u03b1", (), "mixes scripts (Greek, Latin)"),  # a Latin i
    ("b0b", ("bob",), "looks like the registered name 'bob'"),
    (CYRILLIC_ACE, ("bob",), None),
])
async def test_name_problems(name: str, known: tuple[str, ...], problem: str | None) -> None:
    found = name_problem(name, known)
    assert (found is None) if problem is None else (found is not None and problem in found)
