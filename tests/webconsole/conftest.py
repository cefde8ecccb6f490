"""Fixtures for the review console's tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver

from tests.webconsole.browser import chrome_session, served

# The durable-job fixtures (one real dev server per session, a fresh SQLite store, task
# queue and document source per test), shared with tests/workflows by import.
from tests.workflows.conftest import (  # noqa: F401
    client,
    docs,
    make_spec,
    runtime,
    store_url,
    task_queue,
    temporal_env,
)

# --- browser harness (helpers in tests/webconsole/browser.py) -----------------------------
# `chrome`: a fresh headless Chromium per test. `serve_asgi(app) -> base_url`: the ASGI app
# served on a free loopback port until the test ends. Without chromium/chromedriver these
# fixtures skip the test locally and fail it under PRESSROOM_CI=1.


@pytest.fixture
def chrome(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    """A headless Chromium (Selenium WebDriver) with a fresh profile under ``tmp_path``;
    chromedriver's log is ``tmp_path/chromedriver.log``. Quit at teardown."""
    with chrome_session(tmp_path / "chrome-profile",
                        log_path=tmp_path / "chromedriver.log") as driver:
        yield driver


@pytest.fixture
def serve_asgi() -> Iterator[Callable[[Any], str]]:
    """``serve_asgi(app)`` serves the ASGI ``app`` with uvicorn on 127.0.0.1 (free port)
    and returns its base URL, e.g. ``http://127.0.0.1:41234`` (no trailing slash); every
    server it started is shut down at teardown."""
    with ExitStack() as stack:
        def serve(app: Any) -> str:
            return stack.enter_context(served(app))

        yield serve

# --- end browser harness ------------------------------------------------------------------
