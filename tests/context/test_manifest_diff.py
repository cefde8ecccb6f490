"""``context.manifest_diff``: two sealed requests compared item by item (pure)."""

from __future__ import annotations

from typing import Any

from context.manifest_diff import diff_manifests


def _inc(item: str, zone: str = "evidence", tokens: int = 10, h: str = "a") -> dict[str, Any]:
    return {"item_id": item, "zone": zone, "partition": "p", "content_hash": h,
            "load_mode": "full", "tokens": tokens, "admission_reason": "admitted"}


def test_entered_left_changed_with_what_decided_and_the_token_difference() -> None:
    a = {"assembly_id": "A", "budget": {"estimated_used": 100},
         "included": [_inc("job_spec:j", h="q1"), _inc("note:x"), _inc("same")],
         "excluded": [{"item_id": "note:y", "reason": "over_budget", "hard_gate": None}],
         "candidate_items": [{"item_id": i} for i in ("job_spec:j", "note:x", "note:y", "same")]}
    b = {"assembly_id": "B", "budget": {"estimated_used": 90},
         "included": [_inc("job_spec:j", h="q2"), _inc("note:y"), _inc("same")],
         "excluded": [{"item_id": "note:x", "reason": "stale", "hard_gate": "freshness"}],
         "candidate_items": [{"item_id": i} for i in ("job_spec:j", "note:x", "note:y", "same")],
         "inherited": {"items": {"note:y": "p@turn 2"}}}
    diff = diff_manifests(a, b)
    got = {d.item_id: d for d in diff.items}
    assert set(got) == {"job_spec:j", "note:x", "note:y"}
    assert got["job_spec:j"].change == "changed" and "content_hash" in got["job_spec:j"].detail
    assert got["note:x"].change == "left" and "freshness" in got["note:x"].decided_by
    assert got["note:y"].change == "entered" and "over_budget" in got["note:y"].decided_by
    assert got["note:y"].inherited_from == "p@turn 2"
    assert diff.token_delta == -10 and diff.cost_delta is None


def test_two_jobs_items_pair_up_under_their_own_ids_and_tool_calls_are_compared() -> None:
    """A parent's and its fork's requests: each job's own id reads ``{job}``, so only what
    differs is listed; a tool call one history holds and the other not is listed by its
    result item; the turns' costs come from the caller (a manifest carries none)."""
    def pair(call: str, placement: str = "verbatim") -> dict[str, Any]:
        return {"call_id": call, "tool_name": "note", "placement": placement,
                "status": "success", "canonical_argument_hash": "h", "result_hash": "r",
                "turn": int(call[1:5])}

    a = {"assembly_id": "A", "budget": {"estimated_used": 50},
         "included": [_inc("notes:p:001"), _inc("job_spec:p", h="q1")],
         "tool_pairs": [pair("t0001-1", "logged"), pair("t0002-1")]}
    b = {"assembly_id": "B", "budget": {"estimated_used": 45},
         "included": [_inc("notes:p-fork:001"), _inc("job_spec:p-fork", h="q2")],
         "tool_pairs": [pair("t0001-1", "folded")],
         "inherited": {"inherited_from": "p@turn 2", "items": {}, "tool_calls": ["t0001-1"]}}
    diff = diff_manifests(a, b, jobs=("p", "p-fork"), cost_a=100, cost_b=70)
    got = {d.item_id: d for d in diff.items}
    assert set(got) == {"job_spec:{job}", "tool-result:t0001-1", "tool-result:t0002-1"}
    assert got["tool-result:t0002-1"].change == "left"
    assert got["tool-result:t0001-1"].change == "changed"
    assert "placement logged → folded" in got["tool-result:t0001-1"].detail
    assert got["tool-result:t0001-1"].inherited_from == "p@turn 2"
    assert diff.cost_delta == -30 and diff.token_delta == -5


def test_the_current_state_under_a_newer_number_is_one_changed_item() -> None:
    """A later turn, or a fork (whose copy of its parent's checkpoint is its own first),
    reads the current state under another checkpoint number: the one that left and the one
    that entered for a stage are one changed row, not an unrelated exit and entry — while
    a second checkpoint of the stage on one side keeps both as they are."""
    def cp(n: int, job: str = "p", h: str = "s1") -> dict[str, Any]:
        return {**_inc(f"checkpoint:{job}-cp-{n:04d}-research", zone="derived", h=h),
                "admission_reason": "current_state"}

    a = {"assembly_id": "A", "included": [cp(2), _inc("job_spec:p")]}
    b = {"assembly_id": "B", "included": [cp(1, "p-fork", h="s2"), _inc("job_spec:p-fork")]}
    diff = diff_manifests(a, b, jobs=("p", "p-fork"))
    assert [(d.item_id, d.change) for d in diff.items] == [
        ("checkpoint:{job}-cp-0001-research", "changed")]
    only = diff.items[0]
    assert only.detail == ("the current state, was checkpoint:{job}-cp-0002-research; "
                           "content_hash s1 → s2")
    assert only.zone_a == only.zone_b == "derived" and only.decided_by == "current_state"

    # one job, two turns: the same pairing without a job placeholder
    later = diff_manifests({"included": [cp(2)]}, {"included": [cp(5, h="s1")]})
    assert [(d.item_id, d.change, d.detail) for d in later.items] == [
        ("checkpoint:p-cp-0005-research", "changed",
         "the current state, was checkpoint:p-cp-0002-research")]

    # two on one side: nothing to pair them by, both listed as they are
    two = diff_manifests({"included": [cp(2)]}, {"included": [cp(3), cp(4)]})
    assert sorted(d.change for d in two.items) == ["entered", "entered", "left"]
