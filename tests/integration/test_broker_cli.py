"""`franz broker` as a real process: starts on the embedded default, stops cleanly on signals."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from franz.clock import SystemClock
from franz.config.topic import LogConfig
from franz.protocol.records.inflated import RecordBatchBuilder
from franz.storage.files import TopicPartition
from franz.storage.log_manager import LogManager

#: Every broker here listens on an ephemeral port: the default, Kafka's 127.0.0.1:9092, is one
#: per machine, and another broker (a parallel test worker's, another checkout's) may hold it.
EPHEMERAL = ["--override", "listeners=PLAINTEXT://127.0.0.1:0"]


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "franz", "broker", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_for_line(proc: subprocess.Popen[str], needle: str, timeout: float = 30) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if needle in line:
            return lines
    pytest.fail(f"{needle!r} not seen; output: {''.join(lines)}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_broker_runs_with_defaults_and_shuts_down_cleanly(tmp_path, sig):
    proc = _start(EPHEMERAL, tmp_path)
    try:
        lines = _wait_for_line(proc, "started")
        assert "franz-data" in "".join(lines)
        assert re.search(r"listener PLAINTEXT://127\.0\.0\.1:[1-9]\d*", lines[-1]), lines[-1]
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "stopped" in out
    data = tmp_path / "franz-data"
    assert (data / ".kafka_cleanshutdown").exists()
    assert "broker.id=0" in (data / "meta.properties").read_text()
    assert not (tmp_path / "franz-data" / ".lock.tmp").exists()


def test_broker_loads_existing_logs_from_a_properties_file_with_overrides(tmp_path):
    data = tmp_path / "logs"
    manager = LogManager([data], default_config=LogConfig(), clock=SystemClock(), broker_id=7)
    manager.startup()
    log = manager.get_or_create_log(TopicPartition("events", 0))
    builder = RecordBatchBuilder()
    builder.append(1, b"k", b"v")
    log.append_as_leader(builder.build(), leader_epoch=0)
    manager.close_without_shutdown()  # a crash: the broker must recover it

    props = tmp_path / "server.properties"
    props.write_text(f"broker.id=1\nlog.dirs={data}\n")
    proc = _start([str(props), "--override", "broker.id=7", *EPHEMERAL], tmp_path)
    try:
        lines = _wait_for_line(proc, "started")
        assert "1 partition(s)" in lines[-1]
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    recovered = LogManager([data], default_config=LogConfig(), clock=SystemClock(), broker_id=7)
    recovered.startup()
    try:
        assert recovered.had_clean_shutdown[data.resolve()]
        assert recovered.get_log(TopicPartition("events", 0)).log_end_offset == 1
    finally:
        recovered.shutdown()


def test_broker_refuses_a_dir_locked_by_another_broker(tmp_path):
    first = _start(["--override", f"log.dirs={tmp_path / 'd'}", *EPHEMERAL], tmp_path)
    try:
        _wait_for_line(first, "started")
        second = subprocess.run(
            [
                *(sys.executable, "-m", "franz", "broker"),
                *("--override", f"log.dirs={tmp_path / 'd'}", *EPHEMERAL),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert second.returncode == 1
        assert "Failed to acquire lock" in second.stderr and str(tmp_path / "d") in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=30)


def test_broker_rejects_a_bad_override(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "franz", "broker", "--override", "log.segment.bytes=lots"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert "log.segment.bytes" in result.stderr
