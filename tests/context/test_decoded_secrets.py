"""Secrets are found in what the model reads, not in the encoding that carries it.

A ``read`` result is JSON (``\\"`` for every quote), a saved page writes quotes as
``&quot;``, a key word can hide behind ``\\u0070``: the detector scans the decoded views
too (``context.admission.carriers``) and redacts in the carrier at whole escapes, so the
result stays what it was (valid JSON stays valid JSON). ``secret_spans`` maps every
redaction back to the text's own positions (for a caller that cuts a text, a hit line).

Values are assembled from parts so this file holds no literal credential shape.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context.admission import carriers
from context.admission.security import Detector, _redact_carrier, _redact_spans
from tests.context.test_secret_shapes import FILLER, POSITIVES, WORDS

DET = Detector()
DB = "Xk29" + "fjQm2vB7"
API = "q8Lz" + "3RtY6wPn1sDf"
PW = "Tr0u" + "b4dorZz81k"
SECRET_LINES = [f'DB_PASSWORD = "{DB}"', f'api_key = "{API}"', f'password: "{PW}"']


def _read_result(lines: list[str]) -> str:
    """A ``read`` result as ``activities.tool_call`` stores it."""
    return json.dumps({"source": "handbook", "path": "config.md", "revision": "sha256:ab",
                       "start_line": 1, "end_line": len(lines), "total_lines": len(lines),
                       "lines": lines}, sort_keys=True, ensure_ascii=False)


def test_json_quoted_secrets_in_a_read_result_are_redacted_inside_the_json() -> None:
    content = _read_result(["# settings", *SECRET_LINES, 'mode = "fast"'])
    scan = DET.scan_secrets(content)
    assert scan is not None and scan.kinds == ("assigned_secret",)
    for value in (DB, API, PW):
        assert value not in scan.redacted
    decoded = json.loads(scan.redacted)  # still the same JSON, only the values replaced
    assert decoded["lines"] == ["# settings", 'DB_PASSWORD = "[REDACTED:assigned_secret]"',
                                'api_key = "[REDACTED:assigned_secret]"',
                                'password: "[REDACTED:assigned_secret]"', 'mode = "fast"']
    assert {k: v for k, v in decoded.items() if k != "lines"} == {
        k: v for k, v in json.loads(content).items() if k != "lines"}
    assert DET.scan_secrets(scan.redacted) is None  # the gate's re-check holds
    found, _flags = DET.assess("h:read", content)
    assert found == scan


@pytest.mark.parametrize("text", [
    f"<p>DB_PASSWORD = &quot;{DB}&quot;</p>",  # a saved web page
    f"<p>api_key = &#34;{API}&#34; and password: &#x22;{PW}&#x22;</p>",
    f'cfg = "\\u0070assword = \\"{DB}\\""',  # the key word spelled as an escape
    f"var s = 'api_key = \\'{API}\\'';",  # JavaScript / Python single quotes
    f"https://x.example/login?next=%2F&q=password%3D%22{PW}%22",  # percent-encoding
    _read_result([f'  "password": "{DB}",']),  # a JSON file through a JSON result
    _read_result([f"<p>password = &quot;{PW}&quot;</p>"]),  # a page through a result
    json.dumps(json.dumps({"note": SECRET_LINES[1]})),  # two levels of JSON
])
def test_secrets_are_found_in_each_carrier_and_replaced_there(text: str) -> None:
    assert any(v in json.loads(json.dumps(text)) for v in (DB, API, PW))
    scan = DET.scan_secrets(text)
    assert scan is not None, text
    assert not any(v in scan.redacted for v in (DB, API, PW)), scan.redacted
    assert "[REDACTED:assigned_secret]" in scan.redacted
    assert DET.scan_secrets(scan.redacted) is None


def test_a_secret_holding_an_escape_is_replaced_with_the_whole_escape() -> None:
    text = _read_result([f'token = "{DB[:4]}\\u00e9{DB[4:]}\\u0037"'])
    scan = DET.scan_secrets(text)
    assert scan is not None
    assert json.loads(scan.redacted)["lines"] == ['token = "[REDACTED:assigned_secret]"']
    assert "u0037" not in scan.redacted and "00e9" not in scan.redacted


@pytest.mark.parametrize("text", [
    _read_result(['token = "abc"', 'password = "${DB_PASSWORD}"', 'x = "\\d+"']),
    "<p>password = &quot;changeme&quot; &amp; api_key = &lt;your-key&gt;</p>",
    '{"query": "max_tokens = \\"100000000\\""}',
    "50% of retries; %zz is no escape; \\q neither",
])
def test_decoded_near_misses_are_not_secrets(text: str) -> None:
    assert DET.scan_secrets(text) is None, text


def test_a_span_over_two_json_strings_keeps_the_quotes_between_them() -> None:
    text = '["pre ab\\"cd", "ef gh", 1]'
    view = carriers.decode(text)
    assert view is not None
    start, end = text.index("ab"), text.index(" gh")
    out = _redact_carrier(text, view, [(start, end, "k")])
    assert json.loads(out) == ["pre [REDACTED:k]", "[REDACTED:k] gh", 1]


@pytest.mark.parametrize(("kind", "text", "secret", "kept"), POSITIVES)
def test_secret_spans_are_where_the_redaction_is(kind: str, text: str, secret: str,
                                                 kept: str) -> None:
    """Replacing each span of the text itself gives exactly ``scan_secrets``'s redaction,
    however the shapes that ran before shifted the text."""
    for prefix in ("", FILLER):
        full = prefix + text
        spans = DET.secret_spans(full)
        scan = DET.scan_secrets(full)
        assert scan is not None and spans
        out, pos = [], 0
        for a, b, found in spans:
            out += [full[pos:a], f"[REDACTED:{found}]"]
            pos = b
        out.append(full[pos:])
        assert "".join(out) == scan.redacted


def test_secret_spans_of_a_decoded_view_are_in_the_carrier() -> None:
    text = f"a DB_PASSWORD=hunter2hunter2 then &quot;token&quot;: &quot;{API}&quot;"
    spans = DET.secret_spans(text)
    assert [text[a:b] for a, b, _ in spans] == ["hunter2hunter2", API]
    assert _redact_spans(text, [(a, b) for a, b, _ in spans], "x").count("[REDACTED:x]") == 2


def test_views_decode_level_by_level_and_map_back() -> None:
    inner = json.dumps({"k": 'a "b"'})
    outer = json.dumps(inner)
    chain = carriers.views(outer)
    # escapes are decoded, the quotes around a string are not (they are the carrier's)
    assert [v.text for v in chain] == [f'"{inner}"', '"{"k": "a "b""}"']
    start = chain[-1].text.index("b")
    a, b = carriers.encoded_span(chain, start, start + 1)
    assert outer[a:b] == "b"
    assert carriers.decode("plain text") is None


ESCAPED_WORDS = [*WORDS, '\\"', "\\'", "\\\\", "\\n", "\\u0070", "\\x41", "\\/", "&quot;",
                 "&#34;", "&#x70;", "&amp;", "&colon;", "%22", "%3D", "%70", "%2F", DB]


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.sampled_from(ESCAPED_WORDS), min_size=1, max_size=30))
def test_the_cheap_path_finds_what_the_full_decoded_scan_finds(parts: list[str]) -> None:
    """Skipping the decoded view of a text that passes no prefilter and holds no escape
    that may spell a prefilter word changes no result."""
    text = "".join(parts)
    cheap = DET.scan_secrets(text)
    original = carriers.may_spell
    carriers.may_spell = lambda _text: True  # type: ignore[assignment]
    try:
        full = DET.scan_secrets(text)
    finally:
        carriers.may_spell = original
    assert cheap == full
