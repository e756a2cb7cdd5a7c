"""The broker benchmark's harness: /proc and output parsing, percentiles, aggregation, tables.

No broker and no mock here: the pure parts of ``bench.broker_bench`` and
``bench.broker_clients``, plus the timed-child runner on ``python -c`` one-liners.
"""

from __future__ import annotations

import math
import sys

import pytest

from bench.broker_bench import (
    RATIOS,
    TARGETS,
    LatencyRun,
    Measure,
    Results,
    Row,
    Target,
    kcat_consume_args,
    latency_run,
    paired_ratios,
    parse_args,
    settings_from_args,
)
from bench.broker_clients import (
    CHILDREN,
    make_input,
    parse_json_line,
    parse_proc_stat,
    parse_proc_status,
    run_timed,
)
from bench.report import Ratio, percentile

# -- /proc ---------------------------------------------------------------------------------

# A real line's shape: pid, (comm), state, ppid, pgrp, session, tty, tpgid, flags, minflt,
# cminflt, majflt, cmajflt, utime, stime, cutime, cstime, ...
STAT = "4242 (python3) S 1 4242 4242 0 -1 4194560 9000 0 3 0 1234 567 8 9 20 0 5 0 100 0"


def test_parse_proc_stat_reads_utime_and_stime():
    assert parse_proc_stat(STAT) == (1234, 567)


def test_parse_proc_stat_survives_spaces_and_parentheses_in_comm():
    tricky = STAT.replace("(python3)", "(my (odd) proc name)")
    assert parse_proc_stat(tricky) == (1234, 567)


def test_parse_proc_status_keeps_vm_and_rss_lines_in_kib():
    text = (
        "Name:\tpython3\nState:\tS (sleeping)\nVmPeak:\t  300000 kB\nVmHWM:\t   65724 kB\n"
        "VmRSS:\t   63952 kB\nRssAnon:\t   40000 kB\nThreads:\t5\n"
    )
    assert parse_proc_status(text) == {
        "VmPeak": 300000,
        "VmHWM": 65724,
        "VmRSS": 63952,
        "RssAnon": 40000,
    }


def test_parse_json_line_takes_the_last_object_line():
    out = 'noise\n{"a": 1}\n%5|MOCK| log line\n{"b": [1, 2]}\n\n'
    assert parse_json_line(out) == {"b": [1, 2]}


def test_parse_json_line_without_a_result_says_so():
    with pytest.raises(ValueError, match="no JSON result line"):
        parse_json_line("Traceback ...\nKafkaException: boom\n")


# -- percentiles and latency ---------------------------------------------------------------


def test_percentile_is_nearest_rank():
    values = list(range(1, 101))  # 1..100
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile(values, 99.9) == 100
    assert percentile(values, 100) == 100
    assert percentile([7.0], 50) == 7.0
    assert percentile([1, 2, 3, 4], 50) == 2  # rank ceil(2) = 2, no interpolation


def test_percentile_rejects_nothing_and_bad_q():
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1], 0)
    with pytest.raises(ValueError):
        percentile([1], 101)


def test_latency_run_converts_us_to_ms_and_counts_lost():
    lat = latency_run([3000, 1000, 2000, 10_000], sent=5)
    assert (lat.p50, lat.p99, lat.p999, lat.max) == (2.0, 10.0, 10.0, 10.0)
    assert (lat.received, lat.lost) == (4, 1)


def test_latency_run_with_nothing_received():
    lat = latency_run([], sent=3)
    assert math.isnan(lat.p50) and lat.received == 0 and lat.lost == 3


# -- measurements and aggregation ----------------------------------------------------------


def test_measure_rates():
    m = Measure(records=2_000_000, seconds=2.0)
    assert m.records_s == 1_000_000
    assert m.mb_s == pytest.approx(100.0)  # 100 B payloads, 10^6 B per MB
    assert Measure(records=5, seconds=0.0).records_s == 0.0


def test_paired_ratios_pair_by_run_and_skip_empty_runs():
    franz = [Measure(100, 1.0), Measure(300, 1.0), Measure(0, 1.0)]
    ref = [Measure(200, 1.0), Measure(300, 1.0), Measure(100, 1.0)]
    assert paired_ratios(franz, ref) == pytest.approx([0.5, 1.0])


def test_row_stats_ignore_missing_figures():
    row = Row("k", "produce", "case", "sys", True)
    assert row.stats("records_s") is None
    row.runs += [Measure(100, 1.0, broker_cpu_s=0.5), Measure(300, 1.0)]
    assert row.stats("records_s") == {"median": 200.0, "min": 100.0, "max": 300.0, "n": 2}
    assert row.stats("broker_cpu_s") == {"median": 0.5, "min": 0.5, "max": 0.5, "n": 1}


def _results() -> Results:
    res = Results()
    franz = res.row("produce/franz", "produce", "kcat -P", "franz", franz=True)
    mock = res.row("produce/mock-kcat", "produce", "kcat -P", "mock in kcat", franz=False)
    franz.runs += [Measure(900_000, 1.0, 1.0, 2.0, 40.0, 44.0), Measure(800_000, 1.0)]
    mock.runs += [Measure(1_000_000, 1.0, 0.5), Measure(1_000_000, 1.0)]
    res.ratios.append(
        Ratio("r", "kcat -P: franz / mock", "produce/franz", "produce/mock-kcat", 0.8)
    )
    res.ratios.append(Ratio("x", "missing rows", "produce/franz", "produce/nobody", 0.8))
    return res


def test_ratio_stats_are_of_paired_runs():
    res = _results()
    stats = res.ratio_stats(res.ratios[0])
    assert stats == pytest.approx({"median": 0.85, "min": 0.8, "max": 0.9, "n": 2})
    assert res.ratio_stats(res.ratios[1]) is None


def test_throughput_table_shows_medians_ranges_and_the_reference():
    table = _results().throughput_table()
    lines = table.splitlines()
    assert lines[0].startswith("| scenario")
    franz = next(line for line in lines if "| franz" in line)
    assert "850,000" in franz and "800,000-900,000" in franz
    assert "85% of mock in kcat" in franz
    assert "40/44" in franz  # RSS after / HWM
    mock = next(line for line in lines if "| mock in kcat" in line)
    assert "-/-" in mock and mock.rstrip().endswith("| -            |") is False


def test_ratios_table_says_pass_or_short():
    res = _results()
    assert "| PASS" in res.ratios_table()
    res.ratios[0] = Ratio("r", "strict", "produce/franz", "produce/mock-kcat", 0.9)
    assert "| short" in res.ratios_table()
    assert "missing rows" not in res.ratios_table()


def test_targets_use_the_franz_medians():
    res = _results()
    res.latency["latency/franz"] = (
        "franz",
        "fetch.wait.max.ms=500",
        [LatencyRun(1.0, 12.0, 20.0, 25.0, 5000, 0), LatencyRun(3.0, 8.0, 9.0, 9.5, 5000, 0)],
    )
    res.targets = list(TARGETS)
    values = {t.label: res.target_value(t) for t in res.targets}
    assert values[TARGETS[0].label] == 850_000
    assert values[TARGETS[1].label] is None  # no consume row
    assert values[TARGETS[2].label] == 2.0
    assert values[TARGETS[3].label] == 10.0
    table = res.targets_table()
    produce, consume, p50, p99 = table.splitlines()[2:]
    assert "PASS" in produce and "821,557" in produce
    assert "not measured" in consume
    assert "PASS" in p50 and "<= 2.00 ms" in p50
    assert "PASS" in p99  # 10.0 <= 10.0


def test_target_verdicts():
    high = Target("t", 100.0, "rec/s", "r", "records_s")
    low = Target("t", 2.0, "ms", "latency/r", "p50", higher_is_better=False)
    assert (high.verdict(100.0), high.verdict(99.0), high.verdict(None)) == (
        "PASS",
        "short",
        "not measured",
    )
    assert (low.verdict(1.5), low.verdict(2.5), low.verdict(math.nan)) == (
        "PASS",
        "short",
        "not measured",
    )


def test_latency_and_rss_tables():
    res = Results()
    res.latency["latency/franz"] = (
        "franz",
        "fetch.wait.max.ms=500",
        [LatencyRun(0.4, 2.0, 3.0, 4.0, 1000, 0), LatencyRun(0.6, 4.0, 5.0, 30.0, 999, 1)],
    )
    res.rss.append(("started, idle", 0, 40.25, 41.0, 1.0))
    md = res.markdown()
    line = next(ln for ln in md.splitlines() if ln.startswith("| franz"))
    assert "0.500 (0.400-0.600)" in line and "30.000" in line and "1999" in line
    assert "| started, idle" in md and "40.2" in md
    assert "### Throughput" not in md  # no throughput rows, no empty table


def test_notes_are_not_repeated():
    res = Results()
    for _ in range(3):
        res.note("franz: topics auto-created")
    assert res.notes == ["franz: topics auto-created"]


def test_ratio_table_covers_each_issue_target_once():
    issue = [(prefix, ref, low) for prefix, _, ref, low in RATIOS if low is not None]
    assert issue == [
        ("produce", "mock-kcat", 0.8),
        ("client-p", "mock-client", 0.9),
        ("client-c", "mock-client", 0.9),
    ]


# -- settings ------------------------------------------------------------------------------


def test_settings_defaults_full_and_quick():
    full = settings_from_args(parse_args([]))
    assert (full.mode, full.runs, full.records, full.client_records) == (
        "full",
        3,
        2_000_000,
        1_000_000,
    )
    assert full.scenarios == ("produce", "consume", "client", "latency", "rss")
    assert full.latency_seconds == 5.0 and full.partitions == 6
    quick = settings_from_args(parse_args(["--quick"]))
    assert quick.runs == 1 and quick.records < full.records and quick.latency_seconds == 1.0
    assert all(quick.budgets[s] < full.budgets[s] for s in full.budgets)


def test_settings_options():
    cfg = settings_from_args(
        parse_args(
            [
                *("--only", "produce, rss", "--runs", "5", "--records", "1000"),
                *("--override", "num.network.threads=3", "--override", "a.b= c"),
            ]
        )
    )
    assert cfg.scenarios == ("produce", "rss")
    assert (cfg.runs, cfg.records, cfg.client_records) == (5, 1000, 1000)
    assert cfg.overrides == {"num.network.threads": "3", "a.b": "c"}


@pytest.mark.parametrize(
    "argv",
    [["--only", "produce,nope"], ["--runs", "0"], ["--records", "0"], ["--override", "novalue"]],
)
def test_settings_refuse_bad_options(argv):
    with pytest.raises(SystemExit):
        settings_from_args(parse_args(argv))


# -- inputs and commands -------------------------------------------------------------------


def test_make_input_writes_distinct_lines_of_the_value_size(tmp_path):
    path = tmp_path / "in.txt"
    size = make_input(path, 120_001, 100)
    data = path.read_bytes()
    assert size == len(data) == 120_001 * 101
    lines = data.split(b"\n")
    assert lines[-1] == b"" and len(lines) == 120_002
    assert {len(line) for line in lines[:-1]} == {100}
    assert len(set(lines[:-1])) == 120_001


def test_kcat_consume_reads_everything_once_with_one_byte_per_record():
    args = kcat_consume_args("127.0.0.1:9092", "t")
    assert args[:2] == ["kcat", "-C"]
    assert args[args.index("-o") + 1] == "beginning"
    assert "-e" in args and "-q" in args and args[args.index("-f") + 1] == "x"


# -- the timed-child runner ----------------------------------------------------------------


def test_run_timed_counts_output_and_reports_cpu():
    code = "import sys; sys.stdout.write('x' * 5000); sys.stderr.write('warn')"
    run = run_timed([sys.executable, "-c", code], timeout=30.0, stdout="count")
    assert run.ok and run.out_bytes == 5000 and run.stderr == "warn"
    assert run.first_out_s is not None and run.last_out_s is not None
    assert 0 < run.first_out_s <= run.last_out_s <= run.seconds
    assert run.cpu_s > 0 and run.maxrss_mib > 0
    assert not CHILDREN


def test_run_timed_kills_at_the_deadline():
    run = run_timed([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert run.timed_out and not run.ok and run.seconds < 10
    assert "timed out" in run.describe_failure()
    assert not CHILDREN


def test_run_timed_captures_and_reports_exit_codes():
    run = run_timed(
        [sys.executable, "-c", "print('{\"ok\": 1}'); raise SystemExit(3)"],
        timeout=30.0,
        stdout="capture",
    )
    assert run.returncode == 3 and not run.ok
    assert parse_json_line(run.stdout) == {"ok": 1}


def test_run_timed_reports_progress_while_the_child_runs():
    ticks: list[float] = []
    code = "import time; time.sleep(0.7); print('{}')"
    for mode in ("capture", "devnull"):
        ticks.clear()
        run = run_timed(
            [sys.executable, "-c", code],
            timeout=30.0,
            stdout=mode,
            progress=ticks.append,
            progress_every=0.2,
        )
        assert run.ok and len(ticks) >= 2 and ticks == sorted(ticks)
    quiet = run_timed([sys.executable, "-c", code], timeout=30.0, progress_every=0.1)
    assert quiet.ok
