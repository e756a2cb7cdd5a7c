"""A real Franz broker as a subprocess, for integration tests and benchmarks.

The broker listens on an ephemeral loopback port (``listeners=PLAINTEXT://127.0.0.1:0``) and
announces the port it bound in its start line::

    franz broker 0 started: listener PLAINTEXT://127.0.0.1:40123, log dirs /tmp/x, 0 partition(s)

so there is no race for a "free" port. ``BrokerProcess`` starts it, waits for that line,
and stops it by PID (SIGTERM, or SIGKILL for crash tests). Output goes to a file in the data
dir so a test failure can show it.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

__all__ = ["BrokerProcess"]

_STARTED = re.compile(r"started: listener [A-Za-z0-9_]+://([\d.]+):(\d+)")


class BrokerProcess:
    """One ``franz broker`` process with its own data dir.

    ``overrides`` are ``server.properties`` keys passed as ``--override key=value``.
    ``start()`` may be called again after ``stop()`` or ``kill()`` (same data dir; the port
    may differ, read ``bootstrap`` again).
    """

    def __init__(
        self,
        data_dir: Path,
        overrides: dict[str, str] | None = None,
        *,
        log_level: str = "INFO",
    ) -> None:
        self.data_dir = Path(data_dir)
        self.overrides = {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(self.data_dir / "logs"),
            **(overrides or {}),
        }
        self.log_level = log_level
        self.proc: subprocess.Popen[bytes] | None = None
        self.host = "127.0.0.1"
        self.port = 0
        self._output_path = self.data_dir / "broker.out"
        self._output_offset = 0

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 60.0) -> BrokerProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", "franz", "broker", "--log-level", self.log_level]
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        self._output_offset = (
            self._output_path.stat().st_size if self._output_path.exists() else 0
        )
        out = self._output_path.open("ab")
        try:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        finally:
            out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = _STARTED.search(self.output())
            if match:
                self.host, self.port = match.group(1), int(match.group(2))
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"franz broker exited early:\n{self.output()}")
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"franz broker did not start within {timeout} s:\n{self.output()}")

    def output(self) -> str:
        """What this run of the broker printed so far."""
        try:
            with self._output_path.open("rb") as f:
                f.seek(self._output_offset)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; returns the exit code (0 on a clean shutdown)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        return code

    def kill(self) -> None:
        """SIGKILL (a crash) and reap."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
