"""``bench.metrics_bench``'s parts that run without brokers: the on / off ratios of
throughput and CPU per record, the report table, a process's CPU seconds."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

from bench.metrics_bench import Measure, Results, _cpu_s, parse_args


def test_ratios_pair_each_runs_on_and_off() -> None:
    results = Results(value_size=100)
    results.add("produce", "off", Measure(1_000_000, 1.0))
    results.add("produce", "on", Measure(1_000_000, 1.02))
    results.add("produce", "off", Measure(1_000_000, 2.0))
    results.add("produce", "on", Measure(1_000_000, 2.0))
    ratios = results.ratios("produce")
    assert len(ratios) == 2
    assert abs(ratios[0] - 1 / 1.02) < 1e-9
    assert ratios[1] == 1.0
    assert results.ratios("consume") == []


def test_table_states_the_target_and_the_scrapes() -> None:
    results = Results(value_size=100)
    results.add("consume", "off", Measure(100, 1.0))
    results.add("consume", "on", Measure(90, 1.0))
    results.scrapes, results.scrape_seconds, results.scrape_bytes = 4, 0.02, 4 * 2048
    table = results.table()
    assert "| consume | on | 90 | 0.0 | 0.00 | 1 |" in table
    assert "| consume | 90.0% | 90.0% | >= 97% (NOT met) |" in table
    assert "4 scrapes of the `on` broker, 5.0 ms and 2 KiB each on average" in table


def test_defaults() -> None:
    args = parse_args([])
    assert (args.quick, args.runs, args.records, args.value_size) == (False, None, None, 100)
    assert parse_args(["--quick"]).quick


def test_cpu_ratios_compare_cpu_per_record() -> None:
    results = Results(value_size=100)
    results.add("produce", "off", Measure(1_000_000, 1.0, broker_cpu_s=2.0))
    results.add("produce", "on", Measure(1_000_000, 1.5, broker_cpu_s=2.02))
    results.add("consume", "off", Measure(1_000_000, 1.0, broker_cpu_s=0.0))  # unreadable
    results.add("consume", "on", Measure(1_000_000, 1.0, broker_cpu_s=1.0))
    assert results.measures[("produce", "off")][0].cpu_us_per_record == 2.0
    assert [round(r, 4) for r in results.cpu_ratios("produce")] == [1.01]
    assert results.cpu_ratios("consume") == []
    table = results.table()
    assert "| produce | 101.0% | 101.0% | <= 103% (met) |" in table
    assert "| produce | on | 666,667 | 66.7 | 2.02 | 1 |" in table


def test_cpu_seconds_of_a_live_process() -> None:
    spent = sum(i * i for i in range(200_000))  # some CPU of our own
    assert spent > 0
    this: Any = SimpleNamespace(pid=os.getpid())
    gone: Any = SimpleNamespace(pid=2**22 + 12345)  # above pid_max: no such process
    assert _cpu_s(this) > 0
    assert _cpu_s(gone) == 0.0
