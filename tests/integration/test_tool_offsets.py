"""``franz get-offsets``, ``delete-records``, ``reassign-partitions`` and ``leader-election``
as subprocesses against a real broker (Kafka's kafka-get-offsets.sh, kafka-delete-records.sh,
kafka-reassign-partitions.sh, kafka-leader-election.sh).

State is set up with confluent-kafka (topics, records with chosen timestamps) and checked
with it afterwards (watermarks after delete-records).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker import BrokerProcess
from tests.support.clients import OutRecord, create_topic, end_offsets, produce_with

TIMEOUT = 60


def tool(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "franz", name, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the module: topic ``t`` (3 partitions) with 4, 3 and 0 records whose
    timestamps are 1000 + i (record i goes to partition i % 2), topic ``u`` (1 partition)
    with 2 records, and ``__consumer_offsets`` (created by a group lookup)."""
    broker = BrokerProcess(tmp_path_factory.mktemp("offsets") / "b").start()
    try:
        create_topic(broker.bootstrap, "t", partitions=3)
        create_topic(broker.bootstrap, "u")
        records = [OutRecord(b"k", b"v", partition=i % 2, timestamp_ms=1000 + i) for i in range(7)]
        produce_with("confluent-kafka", broker.bootstrap, "t", records)
        produce_with("confluent-kafka", broker.bootstrap, "u", [OutRecord(b"k", b"v")] * 2)
        yield broker
    finally:
        code = broker.stop()
    assert code == 0, broker.output()


def offsets(broker: BrokerProcess, *args: str) -> list[str]:
    result = tool("get-offsets", "--bootstrap-server", broker.bootstrap, *args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout.splitlines()


# -- get-offsets --------------------------------------------------------------------------------


def test_latest_is_the_default_and_lists_every_partition(loaded: BrokerProcess) -> None:
    assert offsets(loaded, "--topic", "t") == ["t:0:4", "t:1:3", "t:2:0"]
    assert offsets(loaded, "--topic", "t", "--time", "-1") == ["t:0:4", "t:1:3", "t:2:0"]
    assert offsets(loaded, "--topic", "t", "--time", "latest") == ["t:0:4", "t:1:3", "t:2:0"]


def test_earliest_and_max_timestamp(loaded: BrokerProcess) -> None:
    assert offsets(loaded, "--topic", "t", "--time", "-2") == ["t:0:0", "t:1:0", "t:2:0"]
    assert offsets(loaded, "--topic", "t", "--time", "earliest") == ["t:0:0", "t:1:0", "t:2:0"]
    # -3: the offset of the record with the largest timestamp; none in an empty partition.
    assert offsets(loaded, "--topic", "t", "--time", "-3") == ["t:0:3", "t:1:2"]


def test_a_timestamp_finds_the_first_offset_at_or_after_it(loaded: BrokerProcess) -> None:
    # Partition 0 holds timestamps 1000, 1002, 1004, 1006; partition 1 1001, 1003, 1005.
    assert offsets(loaded, "--topic", "t", "--time", "1004") == ["t:0:2", "t:1:2"]
    assert offsets(loaded, "--topic", "t", "--time", "0") == ["t:0:0", "t:1:0"]
    assert offsets(loaded, "--topic", "t", "--time", "99999999999999") == []


def test_partitions_and_topic_partitions_filters(loaded: BrokerProcess) -> None:
    assert offsets(loaded, "--topic", "t", "--partitions", "0,2") == ["t:0:4", "t:2:0"]
    assert offsets(loaded, "--topic-partitions", "t:1-") == ["t:1:3", "t:2:0"]
    assert offsets(loaded, "--topic-partitions", "t:-1,u") == ["t:0:4", "u:0:2"]
    assert offsets(loaded, "--topic-partitions", "t:1") == ["t:1:3"]
    assert offsets(loaded, "--topic", "t|u", "--partitions", "0") == ["t:0:4", "u:0:2"]


def test_all_topics_and_internal_topics(loaded: BrokerProcess) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": loaded.bootstrap, "group.id": "g"})
    try:
        consumer.committed([], timeout=10)  # creates __consumer_offsets via FindCoordinator
        consumer.list_topics(timeout=10)
    finally:
        consumer.close()
    every = offsets(loaded)
    internal = [line for line in every if line.startswith("__consumer_offsets:")]
    assert internal, every
    assert [line for line in every if not line.startswith("__")] == [
        "t:0:4",
        "t:1:3",
        "t:2:0",
        "u:0:2",
    ]
    # Kafka sorts by the text "<topic>-<partition>": __consumer_offsets-10 before -2.
    names = [line.rsplit(":", 1)[0].replace(":", "-") for line in every]
    assert names == sorted(names)
    assert offsets(loaded, "--exclude-internal-topics") == ["t:0:4", "t:1:3", "t:2:0", "u:0:2"]


def test_get_offsets_errors(loaded: BrokerProcess) -> None:
    nothing = tool("get-offsets", "--bootstrap-server", loaded.bootstrap, "--topic", "nope")
    assert nothing.returncode == 1
    assert nothing.stderr == (
        "franz get-offsets: error: Could not match any topic-partitions with the specified "
        "filters\n"
    )
    bad_time = tool("get-offsets", "--bootstrap-server", loaded.bootstrap, "--time", "soon")
    assert bad_time.returncode == 1
    assert "Malformed time argument soon." in bad_time.stderr
    both = tool(
        "get-offsets", "--bootstrap-server", loaded.bootstrap, "--topic", "t",
        "--topic-partitions", "t:0",
    )  # fmt: skip
    assert both.returncode == 1
    assert "--topic-partitions cannot be used with --topic or --partitions" in both.stderr
    bad_ids = tool("get-offsets", "--bootstrap-server", loaded.bootstrap, "--partitions", "a")
    assert bad_ids.returncode == 1
    assert "--partitions expects a comma separated list of numeric partition ids" in (
        bad_ids.stderr
    )
    assert tool("get-offsets", "--topic", "t").returncode == 2  # no --bootstrap-server


def test_unreachable_broker_is_one_line(tmp_path: Path) -> None:
    plan = write_json(tmp_path, {"partitions": [{"topic": "t", "partition": 0, "offset": 1}]})
    for name, extra in (
        ("get-offsets", ()),
        ("delete-records", ("--offset-json-file", plan)),
    ):
        result = tool(name, "--bootstrap-server", "127.0.0.1:1", "--timeout", "1000", *extra)
        assert result.returncode == 1
        assert result.stderr.splitlines() == [
            f"franz {name}: error: no broker answered at 127.0.0.1:1 within 1000 ms: check "
            "that the cluster is running and --bootstrap-server is right"
        ]


# -- delete-records -----------------------------------------------------------------------------


def write_json(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "offsets.json"
    path.write_text(json.dumps(data))
    return path


def test_delete_records_moves_the_log_start_offset(broker: BrokerProcess, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, "d", partitions=2)
    records = [OutRecord(b"k", str(i).encode(), partition=i % 2) for i in range(10)]
    produce_with("confluent-kafka", broker.bootstrap, "d", records)
    plan = {
        "partitions": [
            {"topic": "d", "partition": 0, "offset": 3},
            {"topic": "d", "partition": 1, "offset": -1},
        ],
        "version": 1,
    }
    result = tool(
        "delete-records", "--bootstrap-server", broker.bootstrap,
        "--offset-json-file", write_json(tmp_path, plan),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        "partition: d-0\tlow_watermark: 3",
        "partition: d-1\tlow_watermark: 5",
    ]
    assert end_offsets(broker.bootstrap, "d", [0, 1]) == {0: (3, 5), 1: (5, 5)}
    assert offsets(broker, "--topic", "d", "--time", "-2") == ["d:0:3", "d:1:5"]


def test_delete_records_reports_a_partition_error_on_its_line(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "e")
    produce_with("confluent-kafka", broker.bootstrap, "e", [OutRecord(b"k", b"v")] * 2)
    plan = {"partitions": [{"topic": "e", "partition": 0, "offset": 7}], "version": 1}
    result = tool(
        "delete-records", "--bootstrap-server", broker.bootstrap,
        "--offset-json-file", write_json(tmp_path, plan),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2] == (
        "partition: e-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: "
        "The requested offset is not within the range of offsets maintained by the server."
    )
    assert end_offsets(broker.bootstrap, "e", [0]) == {0: (0, 2)}


def test_delete_records_refuses_bad_json(broker: BrokerProcess, tmp_path: Path) -> None:
    cases = {
        "not json": "The input string is not a valid JSON",
        json.dumps({"version": 1}): "Missing partitions field",
        json.dumps({"partitions": [], "version": 2}): "Not supported version field value 2",
        json.dumps(
            {
                "partitions": [
                    {"topic": "t", "partition": 0, "offset": 1},
                    {"topic": "t", "partition": 0, "offset": 2},
                ]
            }
        ): "Offset json file contains duplicate topic partitions: t-0",
    }
    path = tmp_path / "plan.json"
    for text, message in cases.items():
        path.write_text(text)
        result = tool(
            "delete-records", "--bootstrap-server", broker.bootstrap, "--offset-json-file", path
        )
        assert result.returncode == 1, text
        assert result.stdout == ""
        assert result.stderr == f"franz delete-records: error: {message}\n"
    missing = tool(
        "delete-records", "--bootstrap-server", broker.bootstrap,
        "--offset-json-file", tmp_path / "absent.json",
    )  # fmt: skip
    assert missing.returncode == 1
    assert "cannot read --offset-json-file" in missing.stderr


# -- reassign-partitions ------------------------------------------------------------------------


def reassign(broker: BrokerProcess, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return tool("reassign-partitions", "--bootstrap-server", broker.bootstrap, *args)


def assignment_json(parts: list[tuple[str, int]]) -> str:
    body = ",".join(
        f'{{"topic":"{t}","partition":{p},"replicas":[0],"log_dirs":["any"]}}' for t, p in parts
    )
    return f'{{"version":1,"partitions":[{body}]}}'


def test_generate_proposes_the_current_assignment(loaded: BrokerProcess, tmp_path: Path) -> None:
    topics = write_json(tmp_path, {"topics": [{"topic": "t"}, {"topic": "u"}], "version": 1})
    result = reassign(
        loaded, "--generate", "--topics-to-move-json-file", topics, "--broker-list", "0"
    )
    assert result.returncode == 0, result.stderr
    same = assignment_json([("t", 0), ("t", 1), ("t", 2), ("u", 0)])
    assert result.stdout.splitlines() == [
        "Current partition replica assignment",
        same,
        "",
        "Proposed partition reassignment configuration",
        same,
    ]


def test_generate_errors(loaded: BrokerProcess, tmp_path: Path) -> None:
    unknown = write_json(tmp_path, {"topics": [{"topic": "nope"}], "version": 1})
    result = reassign(
        loaded, "--generate", "--topics-to-move-json-file", unknown, "--broker-list", "0"
    )
    assert result.returncode == 1
    assert result.stderr == "franz reassign-partitions: error: Topic nope not found.\n"
    topics = write_json(tmp_path, {"topics": [{"topic": "t"}], "version": 1})
    absent = reassign(
        loaded, "--generate", "--topics-to-move-json-file", topics, "--broker-list", "7"
    )
    assert absent.returncode == 1
    assert absent.stderr.endswith("Replication factor: 1 larger than available brokers: 0.\n")
    dup = reassign(
        loaded, "--generate", "--topics-to-move-json-file", topics, "--broker-list", "0,0"
    )
    assert dup.returncode == 1
    assert "Broker list contains duplicate entries: [0]" in dup.stderr
    assert reassign(loaded, "--generate", "--execute").returncode == 2  # one action only


def test_execute_refuses_bad_plans_before_asking(loaded: BrokerProcess, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[]}')
    empty = reassign(loaded, "--execute", "--reassignment-json-file", plan)
    assert empty.returncode == 1
    assert "Partition reassignment list cannot be empty" in empty.stderr
    plan.write_text(
        assignment_json([("t", 0)]).replace("[0]", "[0,0]").replace('["any"]', '["any","any"]')
    )
    twice = reassign(loaded, "--execute", "--reassignment-json-file", plan)
    assert twice.returncode == 1
    assert "t-0 contains multiple entries for 0" in twice.stderr
    missing = reassign(loaded, "--execute")
    assert (missing.returncode, missing.stderr) == (
        1,
        'franz reassign-partitions: error: Missing required argument "[reassignment-json-file]"\n',
    )


def test_verify_reports_completion_and_clears_throttles(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
    from confluent_kafka.admin._resource import ResourceType

    create_topic(broker.bootstrap, "v")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    throttle = ConfigResource(
        ResourceType.TOPIC,
        "v",
        incremental_configs=[
            ConfigEntry(
                "leader.replication.throttled.replicas",
                "0:0",
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    for future in admin.incremental_alter_configs([throttle]).values():
        future.result(10)

    def throttled() -> str | None:
        resource = ConfigResource(ResourceType.TOPIC, "v")
        configs = admin.describe_configs([resource])[resource].result(10)
        entry = configs["leader.replication.throttled.replicas"]
        return None if entry.is_default else entry.value

    assert throttled() == "0:0"
    plan = tmp_path / "plan.json"
    plan.write_text(assignment_json([("v", 0)]))
    result = reassign(broker, "--verify", "--reassignment-json-file", plan, "--preserve-throttles")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition v-0 is completed.",
        "",
    ]
    assert throttled() == "0:0"
    result = reassign(broker, "--verify", "--reassignment-json-file", plan)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[3:] == [
        "Clearing broker-level throttles on broker 0",
        "Clearing topic-level throttles on topic v",
    ]
    assert throttled() is None
    plan.write_text(assignment_json([("v", 0)]).replace("[0]", "[3]"))
    other = reassign(broker, "--verify", "--reassignment-json-file", plan)
    assert other.returncode == 0, other.stderr
    assert other.stdout.splitlines()[1] == (
        "There is no active reassignment of partition v-0, but replica set is 0 rather than 3."
    )


# -- leader-election ----------------------------------------------------------------------------


def test_leader_election_finds_every_partition_led_by_its_preferred_replica(
    loaded: BrokerProcess, tmp_path: Path
) -> None:
    """One broker: every partition is led by its only (preferred) replica, so the broker
    answers ELECTION_NOT_NEEDED and the tool prints Kafka's "Valid replica already elected"
    line; an unknown partition is Kafka's error line and exit 1; the all-partitions form
    has nothing to report (Kafka leaves ELECTION_NOT_NEEDED out of it)."""
    plan = write_json(
        tmp_path, {"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 2}]}
    )
    for election in ("preferred", "unclean"):
        base = (
            "leader-election",
            "--bootstrap-server",
            loaded.bootstrap,
            "--election-type",
            election,
        )
        one = tool(*base, "--topic", "t", "--partition", "0")
        assert (one.returncode, one.stderr) == (0, ""), one.stderr
        assert one.stdout == "Valid replica already elected for partitions t-0\n"
        many = tool(*base, "--path-to-json-file", str(plan))
        assert (many.returncode, many.stderr) == (0, ""), many.stderr
        # Kafka's HashSet<TopicPartition> order (franz.admin.client.java_hash_set_order).
        assert many.stdout == "Valid replica already elected for partitions t-2, t-0\n"
        everything = tool(*base, "--all-topic-partitions")
        assert (everything.returncode, everything.stdout, everything.stderr) == (0, "", "")
        missing = tool(*base, "--topic", "nope", "--partition", "0")
        assert missing.returncode == 1
        assert missing.stdout.startswith(
            f"Error completing leader election ({election.upper()}) for partition: nope-0: "
        ), missing.stdout
    # Nothing moved.
    assert offsets(loaded, "--topic", "t", "--partitions", "0") == ["t:0:4"]


def test_leader_election_flag_errors(loaded: BrokerProcess) -> None:
    base = ("leader-election", "--bootstrap-server", loaded.bootstrap)
    cases = {
        ("--election-type", "PREFERRED"): "One and only one of the following options is "
        "required: topic, all-topic-partitions, path-to-json-file",
        ("--election-type", "PREFERRED", "--topic", "t"): "Missing required option(s): partition",
        ("--election-type", "PREFERRED", "--all-topic-partitions", "--partition", "0"): (
            "Option partition is only allowed if topic is used"
        ),
        ("--election-type", "PREFERRED", "--all-topic-partitions", "--topic", "t"): (
            "One and only one of the following options is required"
        ),
        ("--election-type", "sometimes", "--all-topic-partitions"): "invalid choice",
    }
    for args, message in cases.items():
        result = tool(*base, *args)
        assert result.returncode == 2, args
        assert message in result.stderr, result.stderr
