"""``franz console`` as a subprocess and headless Chromium driving it, for tests/console.

``ConsoleProcess`` starts ``python -m franz console --port 0`` against a bootstrap server and
reads the port from its start line (``franz console serving http://127.0.0.1:PORT/ for
...``), so there is no race for a free port; it stops it by PID.

``chromium()`` is Debian's ``chromium`` through Debian's ``chromedriver`` (the same
version: ``scripts/setup.sh`` installs both), headless, 1400x1000, via Selenium with the
driver's path given (Selenium Manager never downloads anything). ``screenshot(driver,
name)`` keeps a PNG under ``$FRANZ_TEST_ARTIFACTS/console`` (``test-artifacts/console`` by
default): the issue's "screenshots of the main pages are kept as test artefacts".
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["ARTIFACTS", "ConsoleProcess", "chromium", "screenshot", "wait_until"]

ARTIFACTS = Path(os.environ.get("FRANZ_TEST_ARTIFACTS", "test-artifacts")) / "console"
_SERVING = re.compile(r"franz console serving (http://\S+/) for")


class ConsoleProcess:
    """One ``franz console`` process; ``url`` is its base URL (ending in ``/``)."""

    def __init__(self, bootstrap: str, work_dir: Path, *extra: str) -> None:
        self.bootstrap = bootstrap
        self.work_dir = Path(work_dir)
        self.extra = list(extra)
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self._output_path = self.work_dir / "console.out"

    def start(self, timeout: float = 60.0) -> ConsoleProcess:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", "franz", "console", "--bootstrap-server", self.bootstrap,
                "--port", "0", *self.extra]  # fmt: skip
        with self._output_path.open("ab") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = _SERVING.search(self.output())
            if match:
                self.url = match.group(1)
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"franz console exited early:\n{self.output()}")
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"franz console did not start within {timeout} s:\n{self.output()}")

    def output(self) -> str:
        try:
            return self._output_path.read_bytes().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        return code

    def __enter__(self) -> ConsoleProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def chromium() -> Any:
    """A headless Chromium WebDriver (module docstring); the caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or "/usr/bin/chromium"
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000", "--disable-extensions", "--no-first-run"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    return driver


def screenshot(driver: Any, name: str) -> Path:
    """Save the page as ``ARTIFACTS/<name>.png`` (the whole page's height) and return it."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    height = int(driver.execute_script("return document.documentElement.scrollHeight") or 1000)
    driver.set_window_size(1400, max(1000, min(height + 40, 6000)))
    driver.save_screenshot(str(path))
    driver.set_window_size(1400, 1000)
    return path


def wait_until(check: Callable[[], Any], timeout: float = 30.0, every: float = 0.2) -> Any:
    """``check()`` until it returns something truthy (returned) or ``timeout`` passes
    (``AssertionError`` with the last value)."""
    deadline = time.monotonic() + timeout
    value = check()
    while not value and time.monotonic() < deadline:
        time.sleep(every)
        value = check()
    assert value, f"not true within {timeout} s: {value!r}"
    return value
