"""Apache Kafka as the suite's peer: the perf tools' summaries, the broker's configuration, the
skip when the jars are missing, the Franz / Kafka table, and one real run of the perf-test
scenario (ZooKeeper + Kafka from the reference jars, franz, Kafka's two perf tools on both).

The perf tools' output in ``fixtures/`` was printed by Kafka 3.9.2's ProducerPerformance and
ConsumerPerformance (``--hide-header``) against a broker started by :mod:`bench.kafka_peer`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bench.broker_bench import latency_run
from bench.harness import run_suite
from bench.kafka_peer import (
    KAFKA_JVM_FLAGS,
    KafkaUnavailable,
    consumer_perf_args,
    kafka_libs,
    kafka_version,
    parse_consumer_performance,
    parse_producer_performance,
    producer_perf_args,
    server_properties,
)
from bench.plots import write_plots
from bench.suite import (
    CAVEATS,
    FRANZ,
    MOCK_KCAT,
    Suite,
    header,
    issue_targets,
    parse_args,
    settings_from_args,
)
from bench.suite_results import KAFKA, Measure, Results, kafka_first

FIXTURES = Path(__file__).parent / "fixtures"


def test_producer_performance_summary_is_the_line_with_percentiles():
    perf = parse_producer_performance((FIXTURES / "producer-performance.txt").read_text())
    assert perf.records == 200_000
    assert perf.records_s == pytest.approx(32478.077298)
    assert (perf.p50_ms, perf.p99_ms, perf.max_ms) == (903.0, 1252.0, 1516.0)
    with pytest.raises(ValueError):
        parse_producer_performance("107278 records sent, 21348.9 records/sec (2.04 MB/sec)")


def test_consumer_performance_summary_gives_records_fetch_and_join_time():
    perf = parse_consumer_performance((FIXTURES / "consumer-performance.txt").read_text())
    assert perf.records == 200_000
    assert (perf.rebalance_ms, perf.fetch_ms) == (4408.0, 1911.0)
    assert perf.seconds == pytest.approx(19.0735 / 3.0184)
    with pytest.raises(ValueError):
        parse_consumer_performance("start.time, end.time, data.consumed.in.MB, MB.sec\n")


def test_kafka_runs_with_the_scripts_jvm_flags_and_the_shipped_properties(tmp_path):
    assert KAFKA_JVM_FLAGS[:2] == ("-Xmx1G", "-Xms1G")
    assert "-XX:+UseG1GC" in KAFKA_JVM_FLAGS and "-XX:MaxGCPauseMillis=20" in KAFKA_JVM_FLAGS
    props = server_properties(9092, "127.0.0.1:2181/kafka", tmp_path, 6)
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert props["zookeeper.connect"] == "127.0.0.1:2181/kafka"
    assert props["num.partitions"] == "6" and props["num.network.threads"] == "3"
    # the flush defaults are Kafka's (never fsync on the produce path), as franz's
    assert not any(key.startswith("log.flush") for key in props)
    libs = tmp_path / "libs"
    args = producer_perf_args(libs, "h:1", "t", 10, 100, "all")
    assert "org.apache.kafka.tools.ProducerPerformance" in args and "acks=all" in args
    assert args[:5] == ["setpriv", "--pdeathsig", "KILL", "--", "java"]
    assert "--hide-header" in consumer_perf_args(libs, "h:1", "t", 10)


def test_missing_jars_say_how_to_fetch_them(tmp_path, monkeypatch):
    monkeypatch.setenv("FRANZ_REFERENCE_CACHE", str(tmp_path))
    with pytest.raises(KafkaUnavailable, match=r"scripts/fetch-kafka-reference\.sh"):
        kafka_libs()
    assert kafka_version().startswith("3.9.")


def kafka_results() -> Results:
    res = Results()
    for franz_s, kafka_s in ((1.0, 2.0), (1.0, 4.0)):
        res.add("produce", "c", MOCK_KCAT, Measure(1000, 10**9, 0.5), franz=False)
        res.add("produce", "c", FRANZ, Measure(1000, 10**9, franz_s, broker_cpu_s=1.0,
                                               rss_mib=50.0), franz=True)  # fmt: skip
        res.add("produce", "c", KAFKA, Measure(1000, 10**9, kafka_s, broker_cpu_s=4.0,
                                               rss_mib=500.0), franz=False)  # fmt: skip
    res.add_latency(FRANZ, "long poll", latency_run([1000, 2000, 3000], 3))
    res.add_latency(KAFKA, "long poll", latency_run([2000, 4000, 6000], 3))
    return res


def test_kafka_leads_each_case_and_the_report_opens_with_franz_over_kafka():
    res = kafka_results()
    assert [r.system for r in kafka_first(res.scenario_rows("produce"))] == [
        KAFKA, FRANZ, MOCK_KCAT
    ]  # fmt: skip
    table = res.kafka_table()
    produce = next(ln for ln in table.splitlines() if ln.startswith("| produce"))
    cells = [c.strip() for c in produce.split("|")[1:-1]]
    # franz twice then four times as fast; a quarter of Kafka's CPU/GB, a tenth of its RSS
    assert cells[2:] == ["375", "1,000", "300%", "4.00", "1.00", "25%", "500", "50", "10%"]
    p50 = next(ln for ln in table.splitlines() if "p50 ms" in ln)
    assert "4.000" in p50 and "2.000" in p50 and "50%" in p50
    text = res.markdown()
    assert text.index("### Franz / Apache Kafka") < text.index("### Produce throughput")
    assert res.latency_table().splitlines()[2].startswith(f"| {KAFKA}")


def test_kafka_plot_draws_the_ratios(tmp_path):
    res = kafka_results()
    assert res.kafka_ratios() == {
        "produce: c": {"records/s": 300.0, "broker CPU-s/GB": 25.0, "broker RSS": 10.0}
    }
    assert tmp_path / "kafka.png" in write_plots(res, tmp_path)
    assert (tmp_path / "kafka.png").read_bytes()[:4] == b"\x89PNG"


def test_kafka_targets_read_the_ratios_cpu_and_rss():
    cfg = settings_from_args(parse_args(["--quick"]))
    c = f"kcat -P {cfg.records:,}, acks=1"
    res = Results()
    res.add("produce", c, FRANZ, Measure(10, 10**9, 1.0, broker_cpu_s=1.0, rss_mib=50.0),
            franz=True)  # fmt: skip
    res.add("produce", c, KAFKA, Measure(10, 10**9, 2.0, broker_cpu_s=2.0, rss_mib=400.0),
            franz=False)  # fmt: skip
    res.targets = issue_targets(cfg)
    rows = {ln.split("|")[1].strip(): ln for ln in res.targets_table().splitlines()[2:]}
    assert "200 %" in rows["kcat -P acks=1: franz / Kafka"]
    assert "PASS" in rows["kcat -P acks=1: franz / Kafka"]
    cpu = rows["kcat -P acks=1 broker CPU-s/GB: franz / Kafka"]
    assert "50 %" in cpu and "PASS" in cpu
    rss = rows["broker RSS after kcat -P acks=1: franz / Kafka"]
    assert "12 %" in rss and "short" in rss  # 50 / 400 MiB: not yet a tenth
    without = issue_targets(dataclasses.replace(cfg, kafka=False))
    assert not any(t.system == KAFKA for t in without)


@pytest.mark.slow
def test_perftest_scenario_runs_kafkas_tools_against_kafka_and_franz(tmp_path):
    try:
        kafka_libs()
    except KafkaUnavailable as exc:
        pytest.skip(str(exc))
    cfg = settings_from_args(
        parse_args(["--quick", "--only", "perftest", "--results-dir", str(tmp_path)])
    )
    cfg = dataclasses.replace(cfg, perf_records=5_000, run_timeout=60.0)
    assert run_suite("suite", cfg, Results(), Suite, header, CAVEATS) == 0
    report = next(cfg.results_dir.glob("suite-*.md")).read_text()
    assert "Warnings:" not in report, report
    assert "### Franz / Apache Kafka" in report and "ZooKeeper" in report
    table = report.split("### Franz / Apache Kafka")[1].split("###")[0]
    for case in ("ProducerPerformance 5,000 x 100 B, acks=1", "ConsumerPerformance 5,000"):
        line = next(ln for ln in table.splitlines() if case in ln)
        assert line.count("%") >= 2, line  # records/s and CPU ratios
