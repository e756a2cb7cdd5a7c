"""The group benchmark's harness: settle detection, commit summaries, ratios, tables, CLI.

No broker, no mock and no client here: the pure parts of ``bench.group_bench`` and
``bench.group_clients``.
"""

from __future__ import annotations

import math

import pytest

from bench.group_bench import (
    CASES,
    HEARTBEAT_MS,
    MOCK_CASES,
    Results,
    paired_ratios,
    parse_args,
    settings_from_args,
)
from bench.group_clients import Assigned, CommitRun, RebalanceRun, commit_run, settled_at


def a(at: float, *partitions: int) -> Assigned:
    return Assigned(at, frozenset(partitions))


def revoked(at: float) -> Assigned:
    return Assigned(at, frozenset(), revoked=True)


# -- settled_at ----------------------------------------------------------------------------


def test_settled_at_is_the_last_members_assignment_time():
    histories = [[a(1.0, 0, 1)], [a(1.2, 2, 3)], [a(1.5, 4, 5)]]
    assert settled_at(histories, since=0.5, partitions=6) == 1.5


def test_settled_at_ignores_assignments_before_since():
    # the two old members still hold their 3-partition assignments of the previous generation
    histories = [[a(1.0, 0, 1, 2)], [a(1.0, 3, 4, 5)], [a(2.5, 4, 5)]]
    assert settled_at(histories, since=2.0, partitions=6) is None


def test_settled_at_needs_every_member_to_have_an_event():
    assert settled_at([[a(1.0, 0, 1, 2)], []], since=0.0, partitions=6) is None


def test_settled_at_is_none_while_a_member_is_revoked():
    histories = [[a(1.0, 0, 1, 2), revoked(2.1)], [a(2.2, 3, 4, 5)]]
    assert settled_at(histories, since=2.0, partitions=6) is None


def test_settled_at_rejects_overlapping_assignments_of_two_generations():
    # member 0 still on the old generation's 0-2 after a revoke+assign of member 1 with 2-5
    histories = [[a(2.1, 0, 1, 2)], [a(2.2, 2, 3, 4, 5)]]
    assert settled_at(histories, since=2.0, partitions=6) is None


def test_settled_at_rejects_a_partial_cover():
    histories = [[a(2.1, 0, 1)], [a(2.2, 2, 3)]]
    assert settled_at(histories, since=2.0, partitions=6) is None


def test_settled_at_takes_the_latest_event_of_each_member():
    histories = [
        [a(1.0, 0, 1, 2), revoked(3.0), a(3.4, 0, 1)],
        [a(1.0, 3, 4, 5), revoked(3.1), a(3.4, 2, 3)],
        [a(3.5, 4, 5)],
    ]
    assert settled_at(histories, since=2.0, partitions=6) == 3.5


def test_settled_at_accepts_an_assignment_exactly_at_since():
    assert settled_at([[a(2.0, 0)]], since=2.0, partitions=1) == 2.0


# -- commit runs ---------------------------------------------------------------------------


def test_commit_run_summarises_latencies_in_ms():
    latencies = [0.001] * 98 + [0.010, 0.050]  # 100 commits, seconds
    run = commit_run(latencies, seconds=0.25, partitions=100)
    assert run.commits == 100
    assert run.commits_s == pytest.approx(400.0)
    assert run.offsets_s == pytest.approx(40_000.0)
    assert run.p50_ms == pytest.approx(1.0)
    assert run.p99_ms == pytest.approx(10.0)  # nearest rank: the 99th of 100 sorted values
    assert run.max_ms == pytest.approx(50.0)


def test_commit_run_with_no_commits_is_nan_not_an_error():
    run = commit_run([], seconds=1.0, partitions=100)
    assert run.commits == 0 and run.commits_s == 0.0
    assert math.isnan(run.p50_ms) and math.isnan(run.p99_ms)


def test_broker_cpu_per_commit_is_in_ms():
    run = CommitRun(500, 1.0, 100, 1.0, 2.0, 3.0, broker_cpu_s=0.75)
    assert run.broker_cpu_ms_per_commit == pytest.approx(1.5)
    assert CommitRun(0, 1.0, 100, 1.0, 2.0, 3.0, broker_cpu_s=0.5).broker_cpu_ms_per_commit is None
    assert CommitRun(5, 1.0, 100, 1.0, 2.0, 3.0).broker_cpu_ms_per_commit is None


def test_commit_rate_of_a_zero_second_run_is_zero():
    assert CommitRun(5, 0.0, 100, 1.0, 2.0, 3.0).commits_s == 0.0


# -- ratios and tables ---------------------------------------------------------------------


def test_paired_ratios_pair_by_index_and_skip_zeros():
    assert paired_ratios([2.0, 3.0, 0.0], [1.0, 6.0, 1.0, 9.0]) == [2.0, 0.5]


def _results() -> Results:
    res = Results()
    res.case_labels["ck-default"] = "confluent-kafka, defaults"
    res.rebalance[("ck-default", "franz")] = [RebalanceRun(1.5, 6.0, 0.02), RebalanceRun(2.5, 6.1)]
    res.rebalance[("ck-default", "mock")] = [RebalanceRun(44.0, 3.0, 0.01)]
    res.commit["franz"] = [CommitRun(1000, 2.0, 100, 1.6, 3.0, 7.7, broker_cpu_s=1.5,
                                     broker_rss_mib=44.0)]  # fmt: skip
    res.commit["mock"] = [CommitRun(10_000, 2.0, 100, 0.2, 0.4, 5.0, broker_cpu_s=0.3)]
    return res


def test_rebalance_table_shows_median_and_span():
    table = _results().rebalance_table()
    franz = next(line for line in table.splitlines() if "| franz" in line)
    assert "2.000" in franz and "1.500-2.500" in franz and "6.05" in franz
    mock = next(line for line in table.splitlines() if "| mock" in line)
    assert "44.000" in mock and "0.010" in mock


def test_commit_table_shows_rates_latencies_and_broker_cost():
    table = _results().commit_table()
    franz = next(line for line in table.splitlines() if line.startswith("| franz"))
    for cell in ("500", "50,000", "1.60", "3.00", "7.7", "3.00", "44"):
        assert cell in franz


def test_ratio_rows_pair_the_runs_of_franz_and_the_mock():
    rows = _results().ratio_rows("franz", "mock")
    rebalance = next(r for r in rows if r[0].startswith("rebalance"))
    assert rebalance[1:] == ["0.03", "0.03-0.03", "1"]  # only run 0 has a pair
    commits = next(r for r in rows if r[0].startswith("commits/s"))
    assert commits[1:] == ["0.10", "0.10-0.10", "1"]


def test_markdown_holds_every_section_and_the_warnings():
    res = _results()
    res.warn("something went wrong")
    res.note("a note")
    res.note("a note")
    text = res.markdown()
    for heading in ("### Rebalance", "### Synchronous commits", "### Franz / mock"):
        assert heading in text
    assert text.count("- a note") == 1
    assert "- something went wrong" in text


def test_markdown_of_nothing_is_just_the_legend():
    text = Results().markdown()
    assert "###" not in text and "Rebalance s:" in text


# -- CLI -----------------------------------------------------------------------------------


def test_defaults_are_three_runs_and_one_mock_rebalance():
    cfg = settings_from_args(parse_args([]))
    assert (cfg.mode, cfg.runs, cfg.mock_rebalance_runs) == ("full", 3, 1)
    assert cfg.scenarios == ("rebalance", "commit")
    assert cfg.cases == tuple(c[0] for c in CASES)
    assert cfg.commit_partitions == 100 and cfg.rebalance_partitions == 6


def test_quick_is_one_run_without_the_mock_rebalance():
    cfg = settings_from_args(parse_args(["--quick"]))
    assert (cfg.mode, cfg.runs, cfg.mock_rebalance_runs) == ("quick", 1, 0)
    assert cfg.commit_seconds < settings_from_args(parse_args([])).commit_seconds


def test_options_override_the_mode():
    cfg = settings_from_args(
        parse_args(["--quick", "--runs", "5", "--only", "commit", "--commit-seconds", "1.5",
                    "--override", "group.initial.rebalance.delay.ms=0"])
    )  # fmt: skip
    assert cfg.runs == 5 and cfg.scenarios == ("commit",) and cfg.commit_seconds == 1.5
    assert cfg.overrides == {"group.initial.rebalance.delay.ms": "0"}


@pytest.mark.parametrize(
    "argv",
    [
        ["--runs", "0"],
        ["--only", "produce"],
        ["--cases", "ck-default,nope"],
        ["--commit-seconds", "0"],
        ["--override", "novalue"],
    ],
)
def test_bad_options_exit(argv):
    with pytest.raises(SystemExit):
        settings_from_args(parse_args(argv))


def test_every_case_has_a_heartbeat_and_the_mock_cases_exist():
    keys = {c[0] for c in CASES}
    assert set(HEARTBEAT_MS) == keys
    assert set(MOCK_CASES) <= keys
