"""The operator's endpoint file (``contracts.model_endpoints``): what it accepts, how URLs are
compared, and that a bad entry is one error naming the file and the entry, never its value
(an operator may paste a key where a variable name belongs)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from contracts.job_spec import ModelSpecInput
from contracts.model_endpoints import (
    ModelEndpointError,
    ModelEndpointRefused,
    endpoint_of,
    load_endpoints,
)


def _file(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "endpoints.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_a_listed_url_is_found_however_it_is_written(tmp_path: Path) -> None:
    listed = load_endpoints(_file(tmp_path, {"endpoints": [
        {"name": "local", "url": "HTTP://LocalHost:8000/v1/", "key_required": False}]}))
    endpoint = listed.find("http://localhost:8000/v1")
    assert endpoint is not None and endpoint.url == "http://localhost:8000/v1"
    assert not endpoint.key_required and endpoint.key_env == "OPENAI_API_KEY"
    assert listed.find("http://localhost:8000/v2") is None
    model = ModelSpecInput(provider="openai", base_url="http://localhost:8000/v1/")
    assert endpoint_of(model, listed, {}) == endpoint
    with pytest.raises(ModelEndpointRefused, match=r"model\.base_url"):
        endpoint_of(ModelSpecInput(provider="openai", base_url="http://evil.example/v1"),
                    listed, {})
    # no base_url: the worker's default endpoint, whose entry (if any) says about its key
    assert endpoint_of(ModelSpecInput(provider="openai"), listed,
                       {"OPENAI_BASE_URL": "http://localhost:8000/v1"}) == endpoint
    assert endpoint_of(ModelSpecInput(provider="openai"), listed, {}) is None


def test_no_file_means_no_endpoint() -> None:
    assert load_endpoints(None).endpoints == ()


@pytest.mark.parametrize(("data", "needle"), [
    ({"endpoints": [{"name": "a", "url": "ftp://x/v1"}]}, "endpoints.0.url"),
    ({"endpoints": [{"name": "a", "url": "http://x/v1", "key_env": "sk-SECRETVALUE-1"}]},
     "endpoints.0.key_env"),
    ({"endpoints": [{"name": "a", "url": "http://x/v1"}, {"name": "a", "url": "http://y"}]},
     "endpoints.1: the same name"),
    ({"endpoints": [{"name": "a", "url": "http://x/v1"}, {"name": "b", "url": "http://x/v1/"}]},
     "endpoints.1: the same url"),
    ({"endpoints": [{"name": "a", "url": "http://x/v1", "token": "sk-SECRETVALUE-1"}]},
     "endpoints.0.token"),
    ({"servers": []}, "unknown top-level key"),
    (["http://x/v1"], "expected a mapping"),
])
def test_a_bad_file_is_one_error_naming_the_entry(tmp_path: Path, data: object,
                                                  needle: str) -> None:
    path = _file(tmp_path, data)
    with pytest.raises(ModelEndpointError) as caught:
        load_endpoints(path)
    text = str(caught.value)
    assert str(path) in text and needle in text and "\n" not in text
    assert "SECRETVALUE" not in text
