"""The suite's parsing of its clients' output, its tables and ratios, settings, and one smoke run.

The JSON lines below were printed by ``python -m bench.peer_clients`` against real servers
(Redis 7.0.15, NATS 2.9.10) and by ``broker_clients``' latency child; ``kcat -V``'s output is
a fixture captured from the installed kcat.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from bench.broker_bench import latency_run
from bench.broker_clients import ChildRun, ProcSample, parse_json_line
from bench.harness import run_suite
from bench.suite import (
    CAVEATS,
    FRANZ,
    MOCK_KCAT,
    Suite,
    child_measure,
    header,
    issue_targets,
    measure,
    parse_args,
    parse_kcat_version,
    settings_from_args,
)
from bench.suite_results import Measure, Results, Target

FIXTURES = Path(__file__).parent / "fixtures"

REDIS_PRODUCE = (
    '{"records": 50000, "bytes": 5000000, "seconds": 0.3150242249994335, "cpu_s": 0.30587, '
    '"cut": false, "stored": 50000}'
)
NATS_PRODUCE_CUT = (
    '{"records": 20000, "bytes": 2000000, "seconds": 1.0000242450005317, "cpu_s": 0.967976, '
    '"cut": true, "stored": 19000, "stream_bytes": 2640000}'
)
NATS_CONSUME = (
    '{"records": 20000, "bytes": 2000000, "seconds": 0.45110993500020413, "cpu_s": 0.43648, '
    '"cut": false, "expected": 20000}'
)
KAFKA_CONSUME_ERRORS = (
    '{"records": 10, "bytes": 1000, "seconds": 0.5, "cpu_s": 0.1, "cut": false, '
    '"expected": 10, "errors": 2}'
)


def child(seconds: float = 2.0, cpu_s: float = 0.5) -> ChildRun:
    return ChildRun(args=["x"], seconds=seconds, returncode=0, cpu_s=cpu_s, maxrss_mib=10.0)


def test_kcat_version_line():
    assert parse_kcat_version((FIXTURES / "kcat-V.txt").read_text()) == ("1.7.1", "2.0.2")
    assert parse_kcat_version("garbage") == ("?", "?")


def test_measure_uses_the_wall_time_and_the_servers_proc_deltas():
    before, after = ProcSample(10.0, 40.0, 41.0), ProcSample(10.5, 44.0, 45.0)
    m = measure(child(), before, after, records=1_000_000, nbytes=100_000_000)
    assert (m.seconds, m.client_cpu_s, m.broker_cpu_s) == (2.0, 0.5, 0.5)
    assert (m.rss_mib, m.hwm_mib) == (44.0, 45.0)
    assert m.records_s == 500_000
    assert m.mb_s == 50.0
    assert m.cpu_s_per_gb == pytest.approx(5.0)  # 0.5 CPU-s per 0.1 GB


def test_measure_without_a_server_process_has_no_broker_cpu():
    m = measure(child(), None, None, records=10, nbytes=1000)
    assert m.broker_cpu_s is None and m.cpu_s_per_gb is None and m.rss_mib is None


def test_child_measure_takes_the_childs_own_loop_time_and_cpu():
    m, problem = child_measure(
        parse_json_line("noise\n" + REDIS_PRODUCE), child(9.0, 3.0), None, None
    )
    assert problem is None
    assert (m.records, m.nbytes, m.seconds, m.client_cpu_s, m.cut) == (
        50000,
        5_000_000,
        0.3150242249994335,
        0.30587,
        False,
    )


def test_child_measure_reports_cut_runs_and_missing_records():
    m, problem = child_measure(parse_json_line(NATS_PRODUCE_CUT), child(), None, None)
    assert m.cut is True
    assert problem == "19,000 stored of 20,000 sent"
    m, problem = child_measure(parse_json_line(NATS_CONSUME), child(), None, None)
    assert problem is None and m.records_s == pytest.approx(20000 / 0.45110993500020413)
    _, problem = child_measure(parse_json_line(KAFKA_CONSUME_ERRORS), child(), None, None)
    assert problem == "2 errors"


def results_with_two_systems() -> Results:
    res = Results()
    for franz_s, ref_s in ((1.0, 2.0), (1.0, 1.0), (2.0, 1.0)):
        res.add(
            "produce", "c", FRANZ, Measure(1000, 100_000, franz_s, broker_cpu_s=0.01), franz=True
        )
        res.add("produce", "c", MOCK_KCAT, Measure(1000, 100_000, ref_s), franz=False)
    return res


def test_ratio_is_franz_over_the_reference_run_by_run():
    res = results_with_two_systems()
    ref = res.rows[("produce", "c", MOCK_KCAT)]
    stats = res.ratio(ref)
    assert stats is not None
    assert (stats["median"], stats["min"], stats["max"]) == (1.0, 0.5, 2.0)
    assert res.ratio(res.rows[("produce", "c", FRANZ)]) is None


def test_scenario_table_shows_median_range_cpu_and_ratio():
    res = results_with_two_systems()
    table = res.table("produce")
    lines = table.splitlines()
    assert "records/s median" in lines[0] and "franz / this" in lines[0]
    franz_line = next(ln for ln in lines[2:] if "| franz " in ln)
    assert "1,000" in franz_line and "500-1,000" in franz_line and "100.00" in franz_line
    mock_line = next(ln for ln in lines if MOCK_KCAT in ln)
    assert "100% (50%-200%)" in mock_line
    cells = [c.strip() for c in mock_line.split("|")]
    assert cells[6] == "-"  # broker CPU-s/GB: the mock inside kcat has no process of its own


def test_stored_table_compares_each_level_with_the_first():
    res = Results()
    res.add("stored", "0 GiB", FRANZ, Measure(1000, 1, 1.0), franz=True, x=0.0)
    res.add("stored", "1 GiB", FRANZ, Measure(900, 1, 1.0), franz=True, x=1.0)
    table = res.table("stored")
    assert "vs first level" in table
    assert "| 90%" in table.splitlines()[-1].replace("  ", " ") or "90%" in table.splitlines()[-1]
    assert res.series("stored") == {
        FRANZ: [(0.0, 1000.0, 1000.0, 1000.0), (1.0, 900.0, 900.0, 900.0)]
    }


def test_cut_runs_are_marked():
    res = Results()
    res.add("sizes", "10 B", "NATS JetStream", Measure(10, 100, 1.0, cut=True), franz=False)
    assert "1 (1 cut)" in res.table("sizes")


def test_latency_table_and_targets():
    res = results_with_two_systems()
    res.add_latency(FRANZ, "long poll", latency_run([300, 400, 500, 20_000], 5))
    table = res.latency_table()
    assert "| franz" in table and "0.400" in table and "20.000" in table
    assert table.splitlines()[-1].rstrip("| ").endswith("1")
    res.targets = [
        Target("p50", "latency", "", FRANZ, "p50", 2.0, False),
        Target("p99", "latency", "", FRANZ, "p99", 10.0, False),
        Target("ratio", "produce", "c", MOCK_KCAT, "ratio", 0.8),
        Target("rate", "produce", "c", FRANZ, "records_s", 821_557),
        Target("absent", "consume", "x", FRANZ, "records_s", 1),
    ]
    rows = {ln.split("|")[1].strip(): ln for ln in res.targets_table().splitlines()[2:]}
    assert "0.400" in rows["p50"] and "PASS" in rows["p50"]
    assert "20.000" in rows["p99"] and "short" in rows["p99"]  # nearest rank of 4 values
    assert "100 %" in rows["ratio"] and ">= 80%" in rows["ratio"] and "PASS" in rows["ratio"]
    assert "short" in rows["rate"]
    assert "not measured" in rows["absent"]
    markdown = res.markdown()
    assert "### Produce throughput" in markdown and "### End-to-end latency" in markdown
    assert "### The broker issue's targets" in markdown


def test_issue_targets_name_rows_the_suite_makes():
    cfg = settings_from_args(parse_args(["--quick"]))
    names = {(t.scenario, t.case, t.system) for t in issue_targets(cfg)}
    assert ("produce", "kcat -P 200,000, acks=1", FRANZ) in names
    assert ("consume", "kcat -C -e (C client)", FRANZ) in names


def test_settings_full_and_quick():
    full = settings_from_args(parse_args([]))
    quick = settings_from_args(parse_args(["--quick", "--only", "sizes,latency"]))
    assert (full.runs, full.records, full.stored_levels_gib[-1]) == (3, 2_000_000, 10.0)
    assert full.partition_counts == (1, 6, 64, 1000)
    assert full.sizes == (10, 100, 1024, 10240, 102400)
    assert (quick.runs, quick.scenarios, quick.stored_levels_gib[-1]) == (
        1,
        ("sizes", "latency"),
        1.0,
    )
    # Apache Kafka runs beside franz in every scenario since issue 15 (and the perftest
    # scenario is new), so the budgets grew from 170 / 840 s
    assert sum(quick.budgets.values()) <= 330  # under 6 minutes with start-up
    assert sum(full.budgets.values()) <= 1440  # under 25 minutes with start-up
    assert full.kafka and not settings_from_args(parse_args(["--no-kafka"])).kafka
    assert full.results_dir.name.startswith("suite-")
    with pytest.raises(SystemExit):
        settings_from_args(parse_args(["--only", "nope"]))
    with pytest.raises(SystemExit):
        settings_from_args(parse_args(["--runs", "0"]))


@pytest.mark.skipif(
    not all(shutil.which(t) for t in ("kcat", "redis-server", "nats-server")),
    reason="kcat, redis-server and nats-server are needed",
)
def test_smoke_run_of_the_size_sweep_writes_the_report_and_a_plot(tmp_path, capsys):
    cfg = settings_from_args(
        parse_args(["--quick", "--only", "sizes", "--results-dir", str(tmp_path)])
    )
    cfg = dataclasses.replace(  # Kafka has a smoke test of its own (test_kafka_peer)
        cfg, sizes=(100, 1024), size_bytes=200_000, peer_seconds=1.0, run_timeout=20.0, kafka=False
    )
    assert run_suite("suite", cfg, Results(), Suite, header, CAVEATS) == 0
    report = next(cfg.results_dir.glob("suite-*.md")).read_text()
    assert "### Message size sweep" in report
    for system in ("| franz", "| mock in kcat", "| Redis Streams", "| NATS JetStream"):
        assert system in report
    assert (cfg.results_dir / "sizes.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (cfg.results_dir / "results.json").exists()
    assert "Warnings:" not in report, report


def test_quick_targets_carry_a_caption_saying_they_mean_nothing():
    res = results_with_two_systems()
    res.targets = [Target("rate", "produce", "c", FRANZ, "records_s", 1)]
    assert "Quick mode" not in res.markdown()
    res.targets_caption = "Quick mode: not a verdict."
    text = res.markdown()
    assert text.index("Quick mode: not a verdict.") > text.index("### The broker issue's targets")
