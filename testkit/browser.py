"""Headless Chromium for the web UI tests: Debian's ``chromium`` package driven by Playwright.

Playwright's own browser download does not work offline, so ``launch`` points it at the system Chromium
(``./run.sh test`` installs Debian's package when it is missing). The flags keep Chromium off the network:
without the background-networking ones it keeps trying Google's hosts, which this closed network refuses.

``UiPage`` wraps a Playwright page with what the tests do as a person would: open the UI, ask, wait for the
end of a turn, and save a screenshot under ``tests/output/webui/`` (ignored by git).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from testkit.agent_server import PROJECT_ROOT

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
UI_DIST = PROJECT_ROOT / "ui" / "dist"
SCREENSHOTS = PROJECT_ROOT / "tests" / "output" / "webui"
THREAD_URL = re.compile(r"/ui/threads/([0-9a-f-]{36})$")


def chromium_executable() -> str | None:
    return shutil.which("chromium") or (str(Path("/usr/bin/chromium")) if Path("/usr/bin/chromium").exists() else None)


@contextmanager
def headless_chromium() -> Iterator[Browser]:
    """The system Chromium, launched for a test module; skips without Chromium, fails without the UI bundle."""
    executable = chromium_executable()
    if executable is None:
        pytest.skip("chromium is not installed, and ./run.sh test could not install Debian's chromium package")
    if not (UI_DIST / "index.html").is_file():
        pytest.fail("ui/dist is missing: build the UI with `npm ci && npm run build` in ui (./run.sh test does)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@dataclass
class UiPage:
    page: Page
    base_url: str
    name: str

    def open(self, path: str = "/ui") -> UiPage:
        self.page.goto(self.base_url + path)
        expect(self.page.locator("#question")).to_be_attached()
        return self

    def ask(self, question: str, *, max_tool_calls: int | None = None) -> Locator:
        """Type the question and send it with Ctrl+Enter; returns the new turn."""
        if max_tool_calls is not None:
            self.page.fill("#max-tool-calls", str(max_tool_calls))
        count = self.turns.count()
        self.page.fill("#question", question)
        self.page.press("#question", "Control+Enter")
        turn = self.turns.nth(count)
        expect(turn.locator(".question-text")).to_have_text(question)
        return turn

    @property
    def turns(self) -> Locator:
        return self.page.locator("article.turn")

    def turn(self, index: int = -1) -> Locator:
        return self.turns.nth(index) if index >= 0 else self.turns.last

    def wait_for_end(self, turn: Locator, timeout_s: float = 45) -> Locator:
        end = turn.locator(".end")
        expect(end).to_be_visible(timeout=timeout_s * 1000)
        return end

    @property
    def thread_id(self) -> str:
        match = THREAD_URL.search(self.page.url)
        assert match, f"no thread id in the URL {self.page.url}"
        return match.group(1)

    def screenshot(self, label: str = "") -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{self.name}{'-' + label if label else ''}.png"
        # From the top: a full-page shot of a scrolled page paints the sticky header mid-page.
        self.page.evaluate("window.scrollTo(0, 0)")
        self.page.screenshot(path=str(path), full_page=True)
        return path
