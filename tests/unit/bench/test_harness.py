"""The benches' shared driver: settings parsing, rotation, budgets, scenarios, the lifecycle.

No broker and no mock here: :func:`bench.harness.run_suite` drives a stand-in suite object
(it only needs ``run()`` and ``close()``) and writes its report into ``tmp_path``.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from bench.broker_clients import CHILDREN, register
from bench.harness import (
    budgeted,
    compose_report,
    parse_names,
    parse_overrides,
    rotate,
    run_scenarios,
    run_suite,
    stop_owned,
)
from bench.report import Findings

# -- settings ---------------------------------------------------------------------------------


def test_parse_names_keeps_the_given_order_and_skips_blanks():
    assert parse_names(" b, a,,", ("a", "b", "c")) == ("b", "a")
    assert parse_names("", ("a",)) == ()


def test_parse_names_rejects_unknown_names_naming_them():
    with pytest.raises(SystemExit, match=r"unknown scenario\(s\): x, y"):
        parse_names("a,y,x", ("a", "b"))
    with pytest.raises(SystemExit, match=r"unknown case\(s\): z"):
        parse_names("z", ("a",), "case(s)")


def test_parse_overrides_splits_at_the_first_equals_sign_and_strips():
    got = parse_overrides([" a.b = 1 ", "c=x=y", "a.b=2", "empty="])
    assert got == {"a.b": "2", "c": "x=y", "empty": ""}


@pytest.mark.parametrize("bad", ["novalue", "=1"])
def test_parse_overrides_wants_key_equals_value(bad: str):
    with pytest.raises(SystemExit, match="--override wants KEY=VALUE"):
        parse_overrides([bad])


# -- driving the scenarios --------------------------------------------------------------------


def test_rotate_starts_each_run_with_the_next_system():
    items = ["a", "b", "c"]
    assert [rotate(items, i) for i in range(4)] == [
        ["a", "b", "c"],
        ["b", "c", "a"],
        ["c", "a", "b"],
        ["a", "b", "c"],
    ]
    assert rotate([], 3) == []


def test_budgeted_yields_everything_within_the_budget():
    warnings: list[str] = []
    assert list(budgeted(range(5), 60.0, "produce", warnings.append)) == [0, 1, 2, 3, 4]
    assert warnings == []


def test_budgeted_stops_and_warns_once_the_budget_is_spent():
    warnings: list[str] = []
    got = []
    for item in budgeted(range(5), 0.05, "commit", warnings.append):
        got.append(item)
        if item == 1:
            time.sleep(0.06)
    assert got == [0, 1]
    assert warnings == ["commit: 0 s budget spent; runs skipped"]


def test_budgeted_starts_the_clock_at_the_first_item():
    warnings: list[str] = []
    items = budgeted(range(2), 0.05, "x", warnings.append)
    time.sleep(0.06)  # a generator's body (and its deadline) starts at the first next()
    assert list(items) == [0, 1]
    assert warnings == []


class _Scenarios:
    def __init__(self) -> None:
        self.ran: list[str] = []

    def scenario_a(self) -> None:
        self.ran.append("a")

    def scenario_b(self) -> None:
        self.ran.append("b")
        raise ValueError("boom")

    def scenario_c(self) -> None:
        self.ran.append("c")


def test_run_scenarios_runs_the_selected_in_order_and_survives_an_error():
    suite, warnings = _Scenarios(), []
    run_scenarios(suite, ("a", "b", "c"), ("c", "b"), warnings.append)
    assert suite.ran == ["b", "c"]
    assert warnings == ["b: stopped by an error: ValueError('boom')"]


class _Proc:
    def __init__(self, pid: int) -> None:
        self.pid = pid


class _Owner:
    def __init__(self, log: list[str], name: str, code: Any = None, fail: bool = False) -> None:
        self.log, self.name, self.code, self.fail = log, name, code, fail

    def stop(self) -> Any:
        self.log.append(f"stop {self.name}")
        if self.fail:
            raise OSError("stuck")
        return self.code

    def kill(self) -> None:
        self.log.append(f"kill {self.name}")


def test_stop_owned_stops_last_started_first_and_kills_the_stuck():
    log: list[str] = []
    warnings: list[str] = []
    broker = _Owner(log, "broker", code=1)
    broker.proc = _Proc(2_000_000_001)  # type: ignore[attr-defined]
    register(2_000_000_001, broker)
    owned: list[Any] = [broker, _Owner(log, "mock", fail=True), _Owner(log, "ok", code=0)]
    try:
        stop_owned(owned, warnings.append)
        assert log == ["stop ok", "stop mock", "kill mock", "stop broker"]
        assert warnings == ["franz exited with 1 on SIGTERM"]
        assert owned == []
        assert 2_000_000_001 not in CHILDREN
    finally:
        CHILDREN.pop(2_000_000_001, None)


# -- the report and the lifecycle ---------------------------------------------------------------


def test_compose_report_puts_caveats_and_time_after_the_tables():
    text = compose_report("# H", "| t |", ["one", "two"], 12.4, "0.1 0.2 0.3")
    assert text == (
        "# H\n\n| t |\n\nCaveats:\n- one\n- two\n\nTook 12 s; load average at end 0.1 0.2 0.3.\n"
    )


@dataclass(frozen=True)
class _Settings:
    mode: str
    scenarios: tuple[str, ...]
    results_dir: Path
    interrupt: bool


class _Results(Findings):
    def markdown(self) -> str:
        return "\n".join(["body", *self.findings_lines()])


class _Suite:
    made: ClassVar[list[_Suite]] = []

    def __init__(self, cfg: _Settings, base: Path, results: _Results) -> None:
        self.base, self.results, self.interrupt = base, results, cfg.interrupt
        self.closed = False
        self.saw_base = base.is_dir()
        _Suite.made.append(self)

    def run(self) -> None:
        self.results.note("ran")
        if self.interrupt:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5.0)  # the handler raises KeyboardInterrupt long before this ends

    def close(self) -> None:
        self.closed = True


def _header(cfg: _Settings, machine: dict[str, Any], stamp: str) -> str:
    return f"# Demo {stamp} ({cfg.mode}) load {machine['loadavg_end']}"


def _run(tmp_path: Path, interrupt: bool) -> tuple[int, _Suite, _Results]:
    cfg = _Settings("quick", ("a", "b"), tmp_path / "results", interrupt)
    results = _Results()
    _Suite.made.clear()
    code = run_suite("demo", cfg, results, _Suite, _header, ["a caveat"])
    (suite,) = _Suite.made
    return code, suite, results


def test_run_suite_writes_the_report_and_cleans_up(tmp_path: Path):
    previous = signal.getsignal(signal.SIGTERM)
    code, suite, results = _run(tmp_path, interrupt=False)
    assert code == 0
    assert suite.saw_base and suite.closed and not suite.base.exists()
    assert suite.base.name.startswith("franz-demo-bench-")
    assert signal.getsignal(signal.SIGTERM) == previous
    (out,) = (tmp_path / "results").iterdir()
    assert out.name.startswith("demo-") and out.suffix == ".md"
    text = out.read_text()
    assert text.startswith("# Demo " + out.stem.removeprefix("demo-") + " (quick) load ")
    assert "\n\nbody\n\nNotes:\n- ran\n\nCaveats:\n- a caveat\n\nTook 0 s; load average at" in text
    assert results.warnings == []


def test_run_suite_turns_sigterm_into_a_partial_report_and_exit_130(tmp_path: Path):
    previous = signal.getsignal(signal.SIGTERM)
    code, suite, results = _run(tmp_path, interrupt=True)
    assert code == 130
    assert suite.closed and not suite.base.exists()
    assert signal.getsignal(signal.SIGTERM) == previous
    assert results.warnings == ["interrupted: the figures below are partial"]
    (out,) = (tmp_path / "results").iterdir()
    assert "Warnings:\n- interrupted: the figures below are partial" in out.read_text()
