"""``pressroom resolve`` flags become exactly one ``ResolveInput`` or one clear error."""

from __future__ import annotations

import pytest

from cli.resolution import build_resolution
from contracts.errors import JobError


def test_each_flag_maps_to_its_action() -> None:
    src = build_resolution(add_source="{kind: document, name: extra, path: /tmp/x}")
    assert src.action == "add_source" and src.source is not None and src.source.name == "extra"
    assert build_resolution(refresh="handbook").source_name == "handbook"
    assert build_resolution(budget=9000).evidence_budget == 9000
    assert build_resolution(context_limit=64000).context_limit == 64000
    acc = build_resolution(accept="job_spec:j1=2")
    assert (acc.canonical_key, acc.revision) == ("job_spec:j1", "2")
    assert build_resolution().action == "retry"
    assert build_resolution(abandon=True, note="gone").action == "abandon"


@pytest.mark.parametrize(("flags", "message"), [
    ({"budget": 1, "refresh": "x"}, "one resolution at a time"),
    ({"abandon": True, "refresh": "x"}, "--refresh and --abandon"),
    ({"budget": 0}, "positive token count"),
    ({"context_limit": -1}, "positive token count"),
    ({"accept": "no-equals"}, "CANONICAL_KEY=REVISION"),
    ({"add_source": "{kind: ftp}"}, "not a valid source spec"),
    ({"add_source": "{kind: document, name: a}"}, "document.path: Field required"),
    ({"add_source": "[unclosed"}, "not YAML"),
])
def test_bad_flags_are_one_clear_error(flags: dict[str, object], message: str) -> None:
    with pytest.raises(JobError, match=message) as err:
        build_resolution(**flags)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)
