"""The browser harness itself, against a tiny inline Starlette app: a real headless
Chromium loads a form, fills and submits it, reads the echoed (escaped) value and takes a
screenshot; plus the skip-locally / fail-in-CI rule for missing binaries."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.webconsole.browser import browser_paths, screenshot, wait_visible

FORM = """<!doctype html><html><head><title>harness</title></head><body>
<form method="post" action="/echo">
  <input type="text" name="text" id="text">
  <button type="submit" id="send">Send</button>
</form></body></html>"""


async def form_page(request: Request) -> HTMLResponse:
    return HTMLResponse(FORM)


async def echo(request: Request) -> HTMLResponse:
    form = await request.form()
    value = str(form.get("text", ""))
    return HTMLResponse("<!doctype html><html><head><title>echo</title></head><body>"
                        f'<p id="echo">{html.escape(value)}</p></body></html>')


def echo_app() -> Starlette:
    return Starlette(routes=[Route("/", form_page), Route("/echo", echo, methods=["POST"])])


def submit(driver: webdriver.Chrome, base_url: str, value: str) -> str:
    driver.get(base_url + "/")
    field = wait_visible(driver, "input#text")
    field.send_keys(value)
    driver.find_element(By.CSS_SELECTOR, "button#send").click()
    return wait_visible(driver, "p#echo").text


def test_form_round_trip_in_a_real_browser(
        chrome: webdriver.Chrome, serve_asgi: Callable[[Any], str]) -> None:
    base_url = serve_asgi(echo_app())
    assert submit(chrome, base_url, "hello pressroom") == "hello pressroom"
    assert chrome.title == "echo"
    assert chrome.current_url == base_url + "/echo"

    path = screenshot(chrome, "harness echo")
    assert path == Path(__file__).resolve().parents[2] / "reports/console/harness_echo.png"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert path.stat().st_size > 1000


def test_markup_in_the_value_is_read_back_as_text(
        chrome: webdriver.Chrome, serve_asgi: Callable[[Any], str]) -> None:
    base_url = serve_asgi(echo_app())
    value = "<script>document.title='owned'</script><b>bold?</b>"
    assert submit(chrome, base_url, value) == value
    assert chrome.title == "echo"
    assert chrome.find_elements(By.CSS_SELECTOR, "p#echo b") == []
    assert chrome.find_elements(By.CSS_SELECTOR, "p#echo script") == []


def test_two_servers_at_once_get_their_own_ports(serve_asgi: Callable[[Any], str]) -> None:
    first, second = serve_asgi(echo_app()), serve_asgi(echo_app())
    assert first != second and first.startswith("http://127.0.0.1:")


def test_missing_browser_skips_locally_and_fails_in_ci(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PRESSROOM_CHROMIUM", str(tmp_path / "no-chromium"))
    monkeypatch.setenv("PRESSROOM_CHROMEDRIVER", str(tmp_path / "no-chromedriver"))
    monkeypatch.setenv("PRESSROOM_CI", "1")
    with pytest.raises(pytest.fail.Exception, match="PRESSROOM_CI=1 but chromium and "
                       "chromedriver not found"):
        browser_paths()
    monkeypatch.delenv("PRESSROOM_CI")
    with pytest.raises(pytest.skip.Exception, match="`chromium` and `chromium-driver`"):
        browser_paths()
