"""Browser-test harness for the review console: a real headless Chromium driven by Selenium,
against any ASGI app served by uvicorn on a free loopback port.

The browser is Debian's ``chromium`` with its ``chromium-driver`` (paths from
``PRESSROOM_CHROMIUM`` / ``PRESSROOM_CHROMEDRIVER``, else found on ``PATH``). Selenium
Manager is never consulted: both paths are passed explicitly, ``SE_OFFLINE=true`` is set
and Selenium Manager itself is patched to refuse while the driver starts, so nothing is
ever downloaded. Without the binaries the browser tests skip locally (the reason names
the packages) and fail under ``PRESSROOM_CI=1``, like the PostgreSQL tests.

The pytest fixtures (``chrome``, ``serve_asgi``) live in ``conftest.py``; this module
holds the plain functions and context managers behind them, usable on their own.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

import pytest
import uvicorn
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.wait import WebDriverWait

from tests.waiting import wait_for

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "reports" / "console"
PACKAGES = "Debian packages `chromium` and `chromium-driver`"

# Everything that would make the browser talk to the network on its own, or pop UI over
# the page (password-save bubbles, first-run, translate), is switched off.
CHROME_ARGUMENTS = (
    "--headless=new",
    "--no-sandbox",  # CI and this machine run as root
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-sync",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    "--no-first-run",
    "--no-default-browser-check",
    "--no-pings",
    "--metrics-recording-only",
    "--safebrowsing-disable-auto-update",
    "--password-store=basic",
    "--use-mock-keychain",
    "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication,"
    "CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions",
)
CHROME_PREFS: dict[str, Any] = {
    "credentials_enable_service": False,
    "profile.password_manager_enabled": False,
    "profile.password_manager_leak_detection": False,
    "translate.enabled": False,
}


def browser_paths() -> tuple[str, str]:
    """``(chromium, chromedriver)``, or skip (locally) / fail (``PRESSROOM_CI=1``) when
    either is missing."""
    chromium = os.environ.get("PRESSROOM_CHROMIUM") or shutil.which("chromium")
    driver = os.environ.get("PRESSROOM_CHROMEDRIVER") or shutil.which("chromedriver")
    missing = [name for name, path in (("chromium", chromium), ("chromedriver", driver))
               if not path or not os.access(path, os.X_OK)]
    if chromium and driver and not missing:
        return chromium, driver
    what = f"{' and '.join(missing)} not found (install the {PACKAGES})"
    if os.environ.get("PRESSROOM_CI") == "1":
        pytest.fail(f"PRESSROOM_CI=1 but {what}")
    pytest.skip(f"browser tests skipped: {what}")


def _no_selenium_manager(*_args: object, **_kwargs: object) -> dict[str, str]:
    raise AssertionError("Selenium Manager was consulted; the harness passes explicit "
                         "chromium/chromedriver paths and must never download a browser")


def start_chrome(chromium: str, chromedriver: str, profile_dir: Path,
                 *, log_path: Path | None = None) -> webdriver.Chrome:
    """A headless Chromium with a fresh profile in ``profile_dir``; the caller quits it."""
    options = Options()
    options.binary_location = chromium
    for argument in CHROME_ARGUMENTS:
        options.add_argument(argument)
    options.add_argument(f"--user-data-dir={profile_dir}")
    options.add_experimental_option("prefs", CHROME_PREFS)
    service = Service(executable_path=chromedriver,
                      log_output=str(log_path) if log_path is not None else None)
    os.environ["SE_OFFLINE"] = "true"  # read by Selenium Manager, should anything reach it
    with mock.patch("selenium.webdriver.common.driver_finder.SeleniumManager.binary_paths",
                    _no_selenium_manager):
        driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(30)
    return driver


@contextmanager
def chrome_session(profile_dir: Path, *, log_path: Path | None = None
                   ) -> Iterator[webdriver.Chrome]:
    """``start_chrome`` with the configured binaries, quit on exit."""
    chromium, chromedriver = browser_paths()
    driver = start_chrome(chromium, chromedriver, profile_dir, log_path=log_path)
    try:
        yield driver
    finally:
        driver.quit()


def _run(coro: Awaitable[T]) -> T:
    """Run ``coro`` to completion from sync code, even if this thread already runs a loop
    (an async test calling a sync helper)."""
    async def main() -> T:
        return await coro

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    result: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(main()))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, name="harness-wait")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result[0]


def _accepts(port: int) -> bool:
    with closing(socket.create_connection(("127.0.0.1", port), timeout=1)):
        return True


@contextmanager
def served(app: Callable[..., Any], *, startup_deadline: float = 15.0,
           shutdown_deadline: float = 10.0) -> Iterator[str]:
    """Serve the ASGI ``app`` with uvicorn in a background thread on 127.0.0.1 (a free
    port, bound here so there is no race for it); yield its base URL (no trailing slash)
    once it accepts connections; stop it on exit."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # log_config=None: leave the test process's logging (and caplog) alone
    config = uvicorn.Config(app, log_config=None, log_level="warning", lifespan="auto",
                            access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name=f"uvicorn-{port}", daemon=True)
    thread.start()
    try:
        def ready() -> bool:
            if not thread.is_alive():
                raise AssertionError("uvicorn thread exited during startup (see its log)")
            return server.started and _accepts(port)

        _run(wait_for(ready, startup_deadline, f"uvicorn on 127.0.0.1:{port}"))
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=shutdown_deadline)
        if thread.is_alive():  # open connections outlived the grace period
            server.force_exit = True
            thread.join(timeout=shutdown_deadline)
        sock.close()
        if thread.is_alive():
            raise AssertionError(f"uvicorn on port {port} did not stop within "
                                 f"{2 * shutdown_deadline:g} s")


def wait_visible(driver: webdriver.Chrome, css: str, timeout: float = 10) -> WebElement:
    """The element matching the CSS selector ``css`` once it is visible; a
    ``TimeoutException`` naming the selector after ``timeout`` seconds."""
    element: WebElement = WebDriverWait(driver, timeout).until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, css)),
        message=f"{css!r} not visible within {timeout:g} s")
    return element


def screenshot(driver: webdriver.Chrome, name: str) -> Path:
    """Save a PNG of the current viewport to ``reports/console/<name>.png`` (``reports/``
    is git-ignored) and return its path."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "screenshot"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{safe}.png"
    if not driver.save_screenshot(str(path)):
        raise AssertionError(f"screenshot {path} was not written")
    return path


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()`` and the seconds it took."""
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start
