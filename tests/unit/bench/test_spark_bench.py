"""spark_bench's figures: rows over the micro-batches' triggerExecution times, and its table."""

from __future__ import annotations

from pathlib import Path

from bench.spark_bench import Measured, Results, parse_args, rate_from_progress, settings_from_args


def test_rate_counts_only_batches_that_read_rows() -> None:
    progress = [
        {"numInputRows": 0, "durationMs": {"triggerExecution": 900}},  # idle trigger
        {"numInputRows": 500_000, "durationMs": {"triggerExecution": 2_000}},
        {"numInputRows": 250_000, "durationMs": {"triggerExecution": 1_000, "addBatch": 800}},
        {"numInputRows": 0},  # a progress report without durations
    ]
    assert rate_from_progress(progress) == (750_000, 3.0)
    assert rate_from_progress([]) == (0, 0.0)


def test_table_has_the_ratio_to_the_rate_source_per_paired_run() -> None:
    results = Results()
    results.add("franz", Measured(rows=1_000, seconds=1.0, wall_s=2.0, broker_cpu_s=0.5))
    results.add("franz", Measured(rows=3_000, seconds=1.0, wall_s=4.0, broker_cpu_s=0.7))
    results.add("rate", Measured(rows=4_000, seconds=1.0, wall_s=1.0))
    results.add("rate", Measured(rows=4_000, seconds=1.0, wall_s=1.0))
    text = results.markdown()
    franz = next(line for line in text.splitlines() if line.startswith("| franz"))
    cells = [c.strip() for c in franz.strip("|").split("|")]
    # median rate 2,000; min-max; wall rows/s median of 500 and 750; CPU median; ratio median
    # of 1,000/4,000 and 3,000/4,000 = 0.5; two runs
    assert cells == ["franz", "2,000", "1,000-3,000", "625", "0.60", "0.50x", "2"]
    rate = next(line for line in text.splitlines() if line.startswith("| rate"))
    assert [c.strip() for c in rate.strip("|").split("|")][1] == "4,000"


def test_quick_and_full_settings() -> None:
    quick = settings_from_args(parse_args(["--quick"]))
    assert (quick.mode, quick.runs, quick.records) == ("quick", 1, 300_000)
    full = settings_from_args(parse_args(["--runs", "5", "--results-dir", "/x"]))
    assert (full.mode, full.runs, full.records, full.batch) == ("full", 5, 2_000_000, 500_000)
    assert full.results_dir == Path("/x")
