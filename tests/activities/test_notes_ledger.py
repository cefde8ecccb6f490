"""The notes ledger a research turn shows: what each line keeps, and what it says once.

The ledger is resent every turn (``activities.candidates.notes_ledger``); a source's
commit repeated on every line was 40 hex digits a note. Pure function over real
``ContextItem`` notes: nothing to fake.
"""

from __future__ import annotations

from activities.candidates import LEDGER_COMMITS, NOTES_HEADING, notes_ledger
from context.items import ContextItem, ScopeRef, SourceRef
from context.vocabulary import Role, SourceType, Trust

COMMIT = "f0ee4edd56fb4814cb15d4859098732e49b8cfc9"
SCOPE = ScopeRef(tenant="t", project="p", task="k")


def note(call: str, path: str, line: int, topic: str) -> ContextItem:
    return ContextItem.build(
        item_id=f"note:{topic}:{call}#1", source_type=SourceType.REPOSITORY_SOURCE,
        producer="note", content=f"quoted {line}", scope=SCOPE,
        trust=Trust.REPOSITORY_EVIDENCE, intended_role=Role.UNTRUSTED_DATA, topics=(topic,),
        source_ref=SourceRef(repo="stdlib", commit=COMMIT, path=path, line_start=line,
                             line_end=line),
        metadata={"cited_call": "t0002-1"})


def test_the_commit_is_stated_once_and_every_line_keeps_path_lines_and_ids() -> None:
    notes = [note("t0003-1", "Lib/a.py", 10, "gather"), note("t0003-2", "Lib/b.py", 20, "shield")]
    text = notes_ledger(notes)
    lines = text.split("\n")
    assert lines[0] == NOTES_HEADING
    assert lines[1] == f"{LEDGER_COMMITS}stdlib@{COMMIT}"
    assert text.count(COMMIT) == 1
    assert lines[2] == ("- gather | stdlib:Lib/a.py#L10-L10 | note:gather:t0003-1#1 | "
                        "t0002-1 | quoted 10")
    assert lines[3].startswith("- shield | stdlib:Lib/b.py#L20-L20 | note:shield:t0003-2#1 | ")
