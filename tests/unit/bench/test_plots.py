"""The suite's PNG plots are written from small synthetic results (no benchmark run)."""

from __future__ import annotations

import json

from bench.broker_bench import latency_run
from bench.plots import bar_plot, line_plot, main, relative, write_plots
from bench.suite_results import Measure, Results, results_from_json

PNG = b"\x89PNG\r\n\x1a\n"


def is_png(path) -> bool:
    return path is not None and path.read_bytes()[:8] == PNG and path.stat().st_size > 1000


def test_line_plot_writes_one_png_per_call(tmp_path):
    series = {"franz": [(10.0, 5.0, 4.0, 6.0), (100.0, 3.0, 3.0, 3.0)], "ref": [(10.0, 7.0, 7, 7)]}
    path = line_plot(
        tmp_path / "a.png", "t", "x", [("records/s", series), ("MB/s", series)], logx=True
    )
    assert is_png(path)


def test_plots_with_nothing_to_draw_write_nothing(tmp_path):
    assert line_plot(tmp_path / "a.png", "t", "x", [("y", {})]) is None
    assert bar_plot(tmp_path / "b.png", "t", "y", {"x": {}}) is None
    assert list(tmp_path.iterdir()) == []


def test_bar_plot_with_missing_bars(tmp_path):
    path = bar_plot(tmp_path / "b.png", "t", "ms", {"a": {"p50": 1.0, "p99": 2.0}, "b": {"p50": 3}})
    assert is_png(path)


def synthetic() -> Results:
    res = Results()
    for size in (10, 100, 1000):
        for system, franz in (("franz", True), ("mock in kcat", False)):
            m = Measure(1000, 1000 * size, 0.5 if franz else 0.4)
            res.add("sizes", f"{size} B", system, m, franz=franz, x=size)
    for gib in (0.0, 1.0):
        res.add("stored", f"{gib} GiB", "franz", Measure(1000, 100, 1.0), franz=True, x=gib)
    for count in (1, 6, 64):
        m = Measure(1000, 100, 1.0, rss_mib=40.0 + count)
        res.add("partitions", f"{count} partitions", "franz", m, franz=True, x=count)
    res.add("produce", "kcat", "franz", Measure(1000, 100, 1.0), franz=True)
    res.add_latency("franz", "long poll", latency_run([100, 200, 300], 3))
    return res


def test_write_plots_draws_every_scenario_it_has_data_for(tmp_path):
    paths = write_plots(synthetic(), tmp_path / "out")
    names = sorted(p.name for p in paths)
    assert names == ["latency.png", "partitions.png", "sizes.png", "stored.png", "throughput.png"]
    assert all(is_png(p) for p in paths)


def test_write_plots_of_empty_results_writes_none(tmp_path):
    assert write_plots(Results(), tmp_path) == []


def test_relative_series_is_a_percentage_of_the_first_point():
    series = {"franz": [(0.0, 200.0, 100.0, 300.0), (1.0, 100.0, 50.0, 150.0)], "none": []}
    assert relative(series) == {"franz": [(0.0, 100.0, 50.0, 150.0), (1.0, 50.0, 25.0, 75.0)]}


def test_line_plot_takes_one_log_flag_per_panel(tmp_path):
    series = {"a": [(1.0, 5.0, 4.0, 6.0), (2.0, 3.0, 3.0, 3.0)]}
    path = line_plot(
        tmp_path / "a.png", "t", "x", [("y", series), ("%", series)], logy=[True, False]
    )
    assert is_png(path)


def test_plots_are_redrawn_from_results_json(tmp_path):
    res = synthetic()
    data = json.loads(json.dumps(res.to_json()))
    again = results_from_json(data)
    assert again.series("sizes") == res.series("sizes")
    assert again.table("partitions") == res.table("partitions")
    assert again.latency_table() == res.latency_table()
    (tmp_path / "results.json").write_text(json.dumps(data))
    assert main([str(tmp_path / "results.json")]) == 0
    assert is_png(tmp_path / "stored.png") and is_png(tmp_path / "latency.png")
