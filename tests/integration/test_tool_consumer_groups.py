"""``franz consumer-groups`` as a subprocess against a real broker (Kafka's
``kafka-consumer-groups.sh`` flags and output).

Groups are made by real clients: active groups by ``ConfluentMember`` consumers
(tests/support/groups.py), inactive ones by a confluent-kafka consumer that commits offsets
and leaves. Every reset strategy is planned with the default dry run (nothing changes: the
committed offsets are read back on the wire), then executed and checked by describing the
group with the tool. One broker serves the whole module; each test uses its own topics and
groups.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import confluent_kafka
import pytest

from tests.support.broker import BrokerProcess
from tests.support.clients import OutRecord, create_topic, produce_with
from tests.support.groups import (
    GROUP_BROKER_OVERRIDES,
    TP,
    ConfluentMember,
    close_all,
    committed_offsets,
    wait_for_assignment,
)

#: Records of the reset topic's partition 0 are stamped one second apart from this instant.
OLD_START_MS = 1_704_067_200_000  # 2024-01-01T00:00:00.000Z

DRY_RUN_WARNING = "WARN: No action will be performed as the --execute option is missing."


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("cg") / "broker", GROUP_BROKER_OVERRIDES)
    proc.start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


def tool(
    cluster: BrokerProcess, *argv: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "franz", "consumer-groups", "--bootstrap-server",
         cluster.bootstrap, *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def ok(cluster: BrokerProcess, *argv: str) -> subprocess.CompletedProcess[str]:
    result = tool(cluster, *argv)
    assert result.returncode == 0, f"{argv}: exit {result.returncode}\n{result.stderr}"
    return result


def table(stdout: str, header_start: str) -> list[list[str]]:
    """The rows (split on whitespace) of the table whose header line starts with
    ``header_start``; checks every row's cells start under their header cells."""
    lines = stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    header = lines[at]
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")]
    rows = []
    for line in lines[at + 1 :]:
        if not line.strip():
            break
        cells = line.split()
        cell_starts = [
            i for i, ch in enumerate(line) if ch != " " and (i == 0 or line[i - 1] == " ")
        ]
        assert len(cells) >= len(header.split()), (header, line)
        if "(ID)" not in header:  # the coordinator cell "host:port  (id)" holds a space
            assert cell_starts[: len(starts)] == starts, f"misaligned:\n{header}\n{line}"
        rows.append(cells)
    return rows


def commit(cluster: BrokerProcess, group: str, offsets: Mapping[TP, int]) -> None:
    """Commit ``offsets`` for ``group`` with a confluent-kafka consumer that never joins
    (the group stays Empty, as after its consumers stopped)."""
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        consumer.commit(
            offsets=[confluent_kafka.TopicPartition(t, p, o) for (t, p), o in offsets.items()],
            asynchronous=False,
        )
    finally:
        consumer.close()


def committed(cluster: BrokerProcess, group: str) -> dict[TP, int]:
    return {tp: offset for tp, (offset, _) in committed_offsets(cluster.bootstrap, group).items()}


def described_offsets(cluster: BrokerProcess, group: str) -> dict[TP, tuple[str, str, str]]:
    """``--describe``: ``{(topic, partition): (CURRENT-OFFSET, LOG-END-OFFSET, LAG)}``."""
    rows = table(ok(cluster, "--describe", "--group", group).stdout, "GROUP ")
    assert all(r[0] == group for r in rows)
    return {(r[1], int(r[2])): (r[3], r[4], r[5]) for r in rows}


def produce_counts(cluster: BrokerProcess, topic: str, counts: Mapping[int, int]) -> None:
    records = [
        OutRecord(b"k", f"v{i}".encode(), partition=p) for p, n in counts.items() for i in range(n)
    ]
    produce_with("confluent-kafka", cluster.bootstrap, topic, records)


# -- --list / --describe -----------------------------------------------------------------------


def test_help_and_bad_flags(cluster: BrokerProcess) -> None:
    result = tool(cluster, "--help")
    assert result.returncode == 0
    assert "franz consumer-groups --bootstrap-server HOST:PORT --list" in result.stdout
    bad = tool(cluster, "--reset-offsets", "--group", "g", "--all-topics")
    assert bad.returncode == 2
    assert "--reset-offsets needs one of --to-earliest" in bad.stderr
    assert tool(cluster, "--describe").returncode == 2
    invalid_state = tool(cluster, "--list", "--state", "Sleeping")
    assert invalid_state.returncode == 2
    assert "Invalid state list 'Sleeping'. Valid states are: PreparingRebalance" in (
        invalid_state.stderr
    )


def test_describe_lists_offsets_lag_and_owner(cluster: BrokerProcess) -> None:
    create_topic(cluster.bootstrap, "desc", 2)
    produce_counts(cluster, "desc", {0: 10, 1: 6})
    member = ConfluentMember(cluster.bootstrap, "desc-g", ["desc"], name="desc-client").start()
    try:
        wait_for_assignment([member], [("desc", 0), ("desc", 1)])
        member.commit({("desc", 0): 4})
        member_id = member.member_id()
        out = ok(cluster, "--describe", "--group", "desc-g")
        assert out.stdout.startswith("\nGROUP ")
        assert out.stdout.splitlines()[1].split() == [
            "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
            "CONSUMER-ID", "HOST", "CLIENT-ID",
        ]
        rows = table(out.stdout, "GROUP ")
        assert rows == [
            ["desc-g", "desc", "0", "4", "10", "6", member_id, rows[0][7], "desc-client"],
            ["desc-g", "desc", "1", "-", "6", "-", member_id, rows[0][7], "desc-client"],
        ]
        assert rows[0][7].startswith("/127.0.0.1")
        assert out.stderr == ""

        members = ok(cluster, "--describe", "--group", "desc-g", "--members", "--verbose")
        assert table(members.stdout, "GROUP ") == [
            ["desc-g", member_id, rows[0][7], "desc-client", "2", "desc(0,1)"]
        ]
        assert members.stdout.splitlines()[1].split()[-1] == "ASSIGNMENT"
        plain = ok(cluster, "--describe", "--group", "desc-g", "--members")
        assert table(plain.stdout, "GROUP ") == [
            ["desc-g", member_id, rows[0][7], "desc-client", "2"]
        ]

        state = ok(cluster, "--describe", "--group", "desc-g", "--state")
        [row] = table(state.stdout, "GROUP ")
        assert row == ["desc-g", cluster.bootstrap, "(0)", "range", "Stable", "1"]

        listed = ok(cluster, "--list").stdout.splitlines()
        assert "desc-g" in listed
        with_state = table(ok(cluster, "--list", "--state").stdout, "GROUP ")
        assert ["desc-g", "Stable"] in with_state
        assert ["desc-g", "Stable"] in table(
            ok(cluster, "--list", "--state", "stable").stdout, "GROUP "
        )
        assert all(r[0] != "desc-g" for r in table(
            ok(cluster, "--list", "--state", "Empty").stdout, "GROUP "
        ))

        refused = tool(cluster, "--reset-offsets", "--group", "desc-g", "--all-topics",
                       "--to-earliest", "--execute")
        assert refused.returncode == 1
        assert refused.stderr.strip().endswith(
            "Assignments can only be reset if the group 'desc-g' is inactive, but the current "
            "state is Stable."
        )
        assert committed(cluster, "desc-g") == {("desc", 0): 4}

        not_deleted = tool(cluster, "--delete", "--group", "desc-g")
        assert not_deleted.returncode == 1
        assert not_deleted.stderr.splitlines() == [
            "Error: Deletion of some consumer groups failed:",
            "* Group 'desc-g' could not be deleted due to: "
            "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.",
        ]
    finally:
        close_all([member])

    after = ok(cluster, "--describe", "--group", "desc-g")
    assert after.stderr == "\nConsumer group 'desc-g' has no active members.\n"
    assert table(after.stdout, "GROUP ") == [
        ["desc-g", "desc", "0", "4", "10", "6", "-", "-", "-"]
    ]
    state = ok(cluster, "--describe", "--group", "desc-g", "--state")
    # Kafka 3.9 prints an empty ASSIGNMENT-STRATEGY for a group without members.
    assert state.stdout.splitlines()[2].split() == [
        "desc-g", cluster.bootstrap, "(0)", "Empty", "0"
    ]
    assert ["desc-g", "Empty"] in table(
        ok(cluster, "--list", "--state", "Empty").stdout, "GROUP "
    )


def test_describe_unknown_group_and_all_groups(cluster: BrokerProcess) -> None:
    missing = tool(cluster, "--describe", "--group", "no-such-group")
    assert missing.returncode == 1
    assert missing.stdout == ""
    assert missing.stderr == (
        "franz consumer-groups: error: Consumer group 'no-such-group' does not exist.\n"
    )
    create_topic(cluster.bootstrap, "allg", 1)
    commit(cluster, "allg-a", {("allg", 0): 0})
    commit(cluster, "allg-b", {("allg", 0): 0})
    out = ok(cluster, "--describe", "--all-groups")
    # one table per group, in group order, each after an empty line
    blocks = [table(block, "GROUP ") for block in out.stdout.split("\n\n") if block.strip()]
    groups = [rows[0][0] for rows in blocks]
    assert groups == sorted(groups)
    assert {"allg-a", "allg-b"} <= set(groups)
    assert ["allg-b", "allg", "0", "0", "0", "0", "-", "-", "-"] in blocks[groups.index("allg-b")]


def test_unreachable_broker_fails_in_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "franz", "consumer-groups", "--bootstrap-server", "127.0.0.1:1",
         "--list", "--timeout", "1000"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "franz consumer-groups: error: no answer from 127.0.0.1:1 within 1000 ms (listing "
        "groups): check that a broker is running there, or raise --timeout"
    ]


# -- --reset-offsets ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reset_topic(cluster: BrokerProcess) -> str:
    """``reset``: partition 0 holds 10 records stamped OLD_START_MS + i s; partition 1 holds
    10 records stamped now - 10 h + i h (hours, so that --by-duration's cut, half an hour from
    the nearest record, does not move however late in the module the test runs)."""
    create_topic(cluster.bootstrap, "reset", 2)
    now = int(time.time() * 1000)
    records = [
        OutRecord(b"k", b"old", partition=0, timestamp_ms=OLD_START_MS + i * 1000)
        for i in range(10)
    ] + [
        OutRecord(b"k", b"new", partition=1, timestamp_ms=now - 36_000_000 + i * 3_600_000)
        for i in range(10)
    ]
    produce_with("confluent-kafka", cluster.bootstrap, "reset", records)
    return "reset"


#: (name, scenario flags, scope flags, expected new offsets); committed before: p0=3, p1=7.
STRATEGIES = [
    ("earliest", ["--to-earliest"], ["--all-topics"], {0: 0, 1: 0}),
    ("latest", ["--to-latest"], ["--topic", "reset"], {0: 10, 1: 10}),
    ("current", ["--to-current"], ["--topic", "reset"], {0: 3, 1: 7}),
    ("offset", ["--to-offset", "4"], ["--topic", "reset"], {0: 4, 1: 4}),
    ("offset-clamped", ["--to-offset", "99"], ["--topic", "reset:1"], {1: 10}),
    ("shift-forward", ["--shift-by", "2"], ["--topic", "reset"], {0: 5, 1: 9}),
    ("shift-back-clamped", ["--shift-by", "-5"], ["--topic", "reset:0,1"], {0: 0, 1: 2}),
    ("datetime", ["--to-datetime", "2024-01-01T00:00:05.000"], ["--topic", "reset:0"], {0: 5}),
    ("datetime-zone", ["--to-datetime", "2024-01-01T01:00:07.000+01:00"], ["--topic", "reset:0"],
     {0: 7}),
    ("duration", ["--by-duration", "PT5H30M"], ["--topic", "reset:1"], {1: 5}),
]


@pytest.mark.parametrize(
    ("name", "scenario", "scope", "expected"), STRATEGIES, ids=[s[0] for s in STRATEGIES]
)
def test_reset_strategy_dry_run_then_execute(
    cluster: BrokerProcess,
    reset_topic: str,
    name: str,
    scenario: list[str],
    scope: list[str],
    expected: dict[int, int],
) -> None:
    group = f"reset-{name}"
    before = {(reset_topic, 0): 3, (reset_topic, 1): 7}
    commit(cluster, group, before)
    argv = ["--reset-offsets", "--group", group, *scope, *scenario]

    dry = ok(cluster, *argv)
    assert DRY_RUN_WARNING in dry.stderr
    assert dry.stdout.splitlines()[1].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    planned = {int(r[2]): int(r[3]) for r in table(dry.stdout, "GROUP ")}
    assert planned == expected
    assert committed(cluster, group) == before

    done = ok(cluster, *argv, "--execute")
    assert DRY_RUN_WARNING not in done.stderr
    assert {int(r[2]): int(r[3]) for r in table(done.stdout, "GROUP ")} == expected
    after = {tp: int(offsets[0]) for tp, offsets in described_offsets(cluster, group).items()}
    assert after == {**before, **{(reset_topic, p): o for p, o in expected.items()}}
    if name.endswith("clamped"):
        assert "Value will be set to" in dry.stderr


def test_reset_export_then_from_file(
    cluster: BrokerProcess, reset_topic: str, tmp_path: Path
) -> None:
    commit(cluster, "export-g", {(reset_topic, 0): 3, (reset_topic, 1): 7})
    exported = ok(cluster, "--reset-offsets", "--group", "export-g", "--topic", reset_topic,
                  "--shift-by", "1", "--dry-run", "--export")
    assert exported.stdout == "reset,0,4\nreset,1,8\n\n"
    assert committed(cluster, "export-g") == {(reset_topic, 0): 3, (reset_topic, 1): 7}

    plan = tmp_path / "plan.csv"
    plan.write_text("reset,0,6\nreset,1,42\n")
    done = ok(cluster, "--reset-offsets", "--group", "export-g", "--from-file", str(plan),
              "--execute")
    assert {int(r[2]): int(r[3]) for r in table(done.stdout, "GROUP ")} == {0: 6, 1: 10}
    assert "New offset (42) is higher than latest offset" in done.stderr
    assert described_offsets(cluster, "export-g") == {
        (reset_topic, 0): ("6", "10", "4"),
        (reset_topic, 1): ("10", "10", "0"),
    }

    two_groups = tmp_path / "two.csv"
    commit(cluster, "export-h", {(reset_topic, 0): 1})
    two_groups.write_text("export-g,reset,0,2\nexport-h,reset,0,9\n")
    ok(cluster, "--reset-offsets", "--group", "export-g", "--group", "export-h",
       "--from-file", str(two_groups), "--execute")
    assert committed(cluster, "export-g")[(reset_topic, 0)] == 2
    assert committed(cluster, "export-h") == {(reset_topic, 0): 9}


def test_reset_errors(cluster: BrokerProcess, reset_topic: str) -> None:
    commit(cluster, "reset-err", {(reset_topic, 0): 3})
    unknown_topic = tool(cluster, "--reset-offsets", "--group", "reset-err", "--topic",
                         "no-such-topic", "--to-earliest", "--execute")
    assert unknown_topic.returncode == 1
    assert "Topic 'no-such-topic' does not exist" in unknown_topic.stderr
    bad_partition = tool(cluster, "--reset-offsets", "--group", "reset-err", "--topic",
                         f"{reset_topic}:5", "--to-earliest", "--execute")
    assert bad_partition.returncode == 1
    assert 'The partitions "reset-5" do not exist' in bad_partition.stderr
    no_commit = tool(cluster, "--reset-offsets", "--group", "reset-err", "--topic",
                     f"{reset_topic}:1", "--shift-by", "1", "--execute")
    assert no_commit.returncode == 1
    assert "Cannot shift offset for partition reset-1 since there is no current committed" in (
        no_commit.stderr
    )
    assert committed(cluster, "reset-err") == {(reset_topic, 0): 3}


# -- --delete / --delete-offsets ---------------------------------------------------------------


def test_delete_groups(cluster: BrokerProcess) -> None:
    create_topic(cluster.bootstrap, "del", 1)
    commit(cluster, "del-a", {("del", 0): 0})
    commit(cluster, "del-b", {("del", 0): 0})
    out = ok(cluster, "--delete", "--group", "del-a", "--group", "del-b")
    assert out.stdout == (
        "Deletion of requested consumer groups ('del-a', 'del-b') was successful.\n"
    )
    assert "del-a" not in ok(cluster, "--list").stdout.splitlines()
    assert tool(cluster, "--describe", "--group", "del-a").returncode == 1
    again = tool(cluster, "--delete", "--group", "del-a")
    assert again.returncode == 1
    assert "* Group 'del-a' could not be deleted due to: " in again.stderr


def test_delete_offsets(cluster: BrokerProcess) -> None:
    create_topic(cluster.bootstrap, "doa", 2)
    create_topic(cluster.bootstrap, "dob", 1)
    commit(cluster, "do-g", {("doa", 0): 1, ("doa", 1): 1, ("dob", 0): 0})
    out = ok(cluster, "--delete-offsets", "--group", "do-g", "--topic", "doa:0")
    assert out.stdout.splitlines()[0] == (
        "Request succeed for deleting offsets with topic doa:0 group do-g"  # Kafka's words
    )
    assert table(out.stdout, "TOPIC ") == [["doa", "0", "Successful"]]
    assert committed(cluster, "do-g") == {("doa", 1): 1, ("dob", 0): 0}

    mixed = tool(cluster, "--delete-offsets", "--group", "do-g", "--topic", "dob",
                 "--topic", "no-such-topic")
    assert mixed.returncode == 1
    assert mixed.stderr.strip() == (
        "Error: Encountered some partition-level error, see the follow-up details."
    )
    assert table(mixed.stdout, "TOPIC ") == [
        ["dob", "0", "Successful"],
        ["no-such-topic", "-", "Error:", "This", "server", "does", "not", "host", "this",
         "topic-partition."],
    ]
    assert committed(cluster, "do-g") == {("doa", 1): 1}

    member = ConfluentMember(cluster.bootstrap, "do-g", ["doa"], name="do-client").start()
    try:
        wait_for_assignment([member], [("doa", 0), ("doa", 1)])
        busy = tool(cluster, "--delete-offsets", "--group", "do-g", "--topic", "doa:1")
        assert busy.returncode == 1
        assert "partition-level error" in busy.stderr
        [row] = table(busy.stdout, "TOPIC ")
        assert " ".join(row[2:]) == (
            "Error: Deleting offsets of a topic is forbidden while the consumer group is "
            "actively subscribed to it."
        )
        assert committed(cluster, "do-g") == {("doa", 1): 1}
    finally:
        close_all([member])

    gone = tool(cluster, "--delete-offsets", "--group", "no-such-group", "--topic", "doa:0")
    assert gone.returncode == 1
    assert gone.stderr.strip() == "Error: The group id does not exist."


def test_reset_to_current_without_commit_takes_log_end(
    cluster: BrokerProcess, reset_topic: str
) -> None:
    commit(cluster, "current-half", {(reset_topic, 0): 3})
    done = ok(cluster, "--reset-offsets", "--group", "current-half", "--topic", reset_topic,
              "--to-current", "--execute")
    assert {int(r[2]): int(r[3]) for r in table(done.stdout, "GROUP ")} == {0: 3, 1: 10}
    assert described_offsets(cluster, "current-half") == {
        (reset_topic, 0): ("3", "10", "7"),
        (reset_topic, 1): ("10", "10", "0"),
    }
