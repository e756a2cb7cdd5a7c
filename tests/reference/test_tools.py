"""Issue 15, item 3: Kafka 3.9's own tools against Franz, and ``franz <tool>`` against Kafka.

Every check runs both implementations of a tool (Kafka's Java class, ``franz <tool>``) on
both brokers (the session's Apache Kafka, a Franz broker) after the same steps, and compares
the four results: exit code, stdout and stderr line by line. On one broker the two tools
must print the same bytes per line; across brokers only what differs by construction is
masked (topic ids, ``host:port``), and each mask says so.

Kafka's tool against Franz is the broker conformance check; ``franz <tool>`` against Kafka
is the tool conformance check. The perf tests' figures differ from run to run: only their
lines' shape and the counts are compared. ``kafka-reassign-partitions`` moves replicas, which
needs several brokers: ``test_reassign_partitions.py`` runs it on a Kafka cluster.
"""

from __future__ import annotations

import difflib
import json
import re
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import confluent_kafka
import pytest

from tests.support.broker import BrokerProcess
from tests.support.clients import consume_with, create_topic, end_offsets
from tests.support.kafka_ref import (
    HasBootstrap,
    KafkaBroker,
    run_franz_tool,
    run_kafka_tool,
    start_kafka_tool,
)

#: Kafka 3.9's main class behind each script, by Franz's tool name.
KAFKA_MAIN = {
    "topics": "org.apache.kafka.tools.TopicCommand",
    "console-producer": "kafka.tools.ConsoleProducer",
    "console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "configs": "kafka.admin.ConfigCommand",
    "get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "transactions": "org.apache.kafka.tools.TransactionsCommand",
}
TOOLS = ("kafka", "franz")
BROKERS = ("kafka", "franz")
Key = tuple[str, str]  # (tool, broker)
Results = dict[Key, subprocess.CompletedProcess[str]]


def run(
    brokers: dict[str, HasBootstrap],
    tool: str,
    *args: str,
    input: str | None = None,
    tools: tuple[str, ...] = TOOLS,
) -> Results:
    """``tool`` with ``args`` (``{bootstrap}`` replaced) by each implementation on each broker.

    The runs on one broker go one after the other (a step may change its state); the two
    brokers' runs go side by side (JVM start-up dominates, about 1.5 s per Kafka tool).
    """

    def on(broker_name: str) -> Results:
        argv = [a.replace("{bootstrap}", brokers[broker_name].bootstrap) for a in args]
        out: Results = {}
        for impl in tools:
            if impl == "kafka":
                out[impl, broker_name] = run_kafka_tool(KAFKA_MAIN[tool], *argv, input=input)
            else:
                out[impl, broker_name] = run_franz_tool(tool, *argv, input=input)
        return out

    with ThreadPoolExecutor(len(brokers)) as pool:
        parts = list(pool.map(on, brokers))
    return {key: result for part in parts for key, result in part.items()}


def view(result: subprocess.CompletedProcess[str], mask: Callable[[str], str]) -> list[str]:
    return [
        f"exit {result.returncode}",
        *(f"out| {mask(line)}" for line in result.stdout.splitlines()),
        *(f"err| {mask(line)}" for line in result.stderr.splitlines()),
    ]


def assert_same(results: Results, mask: Callable[[str], str] = lambda s: s) -> None:
    """All results equal to Kafka's tool on Kafka; ``mask`` applies across brokers only."""
    reference = results["kafka", "kafka"]
    problems = []
    for (impl, broker), result in results.items():
        same_broker = results["kafka", broker]
        for base, m in ((same_broker, lambda s: s), (reference, mask)):
            expected, got = view(base, m), view(result, m)
            if expected != got:
                diff = "\n".join(difflib.unified_diff(expected, got, lineterm="", n=1))
                problems.append(f"{impl} tool on {broker} broker:\n{diff}")
                break
    assert not problems, "\n\n".join(problems)


def mask_topic_ids(line: str) -> str:
    """Topic ids are random per cluster."""
    return re.sub(r"TopicId: [A-Za-z0-9_-]{22}", "TopicId: <id>", line)


def mask_addresses(line: str) -> str:
    """Each broker has its own port (and the column after it is as wide as the address)."""
    return re.sub(r"127\.0\.0\.1:\d+ +", "<host:port> ", line)


def test_topics_create_list_describe(brokers: dict[str, HasBootstrap]) -> None:
    for tool in TOOLS:
        created = run(
            brokers, "topics", "--bootstrap-server", "{bootstrap}", "--create",
            "--topic", f"rt-{tool}-made", "--partitions", "3",
            "--config", "cleanup.policy=compact", "--config", "max.message.bytes=2000",
            tools=(tool,),
        )  # fmt: skip
        assert [(r.returncode, r.stdout, r.stderr) for r in created.values()] == [
            (0, f"Created topic rt-{tool}-made.\n", "")
        ] * 2
    assert_same(run(brokers, "topics", "--bootstrap-server", "{bootstrap}", "--list",
                    "--topic", "rt-.*-made"))  # fmt: skip
    described = run(
        brokers,
        "topics",
        "--bootstrap-server",
        "{bootstrap}",
        "--describe",
        "--topic",
        "rt-.*-made",
    )
    assert_same(described, mask_topic_ids)
    assert described["kafka", "kafka"].stdout.count("Leader: 0") == 6


@pytest.fixture(scope="module")
def console_topic(kafka: KafkaBroker, franz: BrokerProcess) -> str:
    """``rt-console`` (one partition) on both brokers holding the same six records, written
    by both console producers (keys, headers)."""
    topic = "rt-console"
    lines = "".join(f"h1:a{i},h2:b\tk{i}\tvalue {i}\n" for i in range(3))
    for broker in (kafka, franz):
        create_topic(broker.bootstrap, topic)
    results = run(
        {"kafka": kafka, "franz": franz}, "console-producer", "--bootstrap-server", "{bootstrap}",
        "--topic", topic, "--property", "parse.key=true", "--property", "parse.headers=true",
        input=lines,
    )  # fmt: skip
    assert all(r.returncode == 0 and r.stdout == "" for r in results.values()), results
    return topic


def test_console_consumer_prints_the_console_producers_records(
    brokers: dict[str, HasBootstrap], console_topic: str
) -> None:
    consumed = run(
        brokers, "console-consumer", "--bootstrap-server", "{bootstrap}",
        "--topic", console_topic, "--from-beginning", "--max-messages", "6",
        "--property", "print.key=true", "--property", "print.offset=true",
        "--property", "print.partition=true", "--property", "print.headers=true",
    )  # fmt: skip
    assert_same(consumed)
    assert consumed["kafka", "kafka"].stdout.splitlines()[:2] == [
        "Partition:0\tOffset:0\th1:a0,h2:b\tk0\tvalue 0",
        "Partition:0\tOffset:1\th1:a1,h2:b\tk1\tvalue 1",
    ]


def test_get_offsets(brokers: dict[str, HasBootstrap], console_topic: str) -> None:
    for time_arg in ("-1", "-2"):
        results = run(
            brokers, "get-offsets", "--bootstrap-server", "{bootstrap}",
            "--topic", console_topic, "--time", time_arg,
        )  # fmt: skip
        assert_same(results)
    assert results["kafka", "kafka"].stdout == f"{console_topic}:0:0\n"


def test_consumer_groups_describe(brokers: dict[str, HasBootstrap], console_topic: str) -> None:
    """A group that consumed 4 of the 6 records (Kafka's console consumer commits them)."""
    consumed = run(
        brokers, "console-consumer", "--bootstrap-server", "{bootstrap}", "--topic", console_topic,
        "--from-beginning", "--max-messages", "4", "--group", "rt-group", tools=("kafka",),
    )  # fmt: skip
    assert all(r.returncode == 0 for r in consumed.values()), consumed
    base = ("--bootstrap-server", "{bootstrap}", "--describe", "--group", "rt-group")
    assert_same(run(brokers, "consumer-groups", *base))
    assert_same(run(brokers, "consumer-groups", *base, "--members"))
    assert_same(run(brokers, "consumer-groups", *base, "--state"), mask_addresses)
    listed = run(brokers, "consumer-groups", "--bootstrap-server", "{bootstrap}", "--list")
    assert all("rt-group" in r.stdout.splitlines() for r in listed.values())


def test_consumer_groups_reset_offsets(
    brokers: dict[str, HasBootstrap], console_topic: str
) -> None:
    """Each tool resets the group's offsets on both brokers; both then describe the same.

    Only the broker's effect is compared across tools here: Kafka 3.9's reset table is
    ``%-30s %-30s %-10s %-15s`` per row with no newline between rows (the Java port of
    ConsumerGroupCommand dropped the Scala version's ``\\n``) and in HashMap order, while
    ``franz consumer-groups`` prints one row per line, sorted, as Kafka up to 3.6 did.
    """
    group = "rt-reset"
    consumed = run(
        brokers, "console-consumer", "--bootstrap-server", "{bootstrap}", "--topic", console_topic,
        "--from-beginning", "--max-messages", "6", "--group", group, tools=("kafka",),
    )  # fmt: skip
    assert all(r.returncode == 0 for r in consumed.values()), consumed
    base = ("--bootstrap-server", "{bootstrap}", "--group", group)
    for tool, how in (("kafka", ("--to-offset", "2")), ("franz", ("--shift-by", "1"))):
        reset = run(
            brokers, "consumer-groups", *base, "--reset-offsets", "--topic", console_topic,
            *how, "--execute", tools=(tool,),
        )  # fmt: skip
        assert view(reset[tool, "franz"], str) == view(reset[tool, "kafka"], str)
        described = run(brokers, "consumer-groups", *base, "--describe")
        assert_same(described)
    assert described["kafka", "kafka"].stdout.splitlines()[-1].split()[2:6] == ["0", "3", "6", "3"]


def test_consumer_groups_describe_a_live_member(
    brokers: dict[str, HasBootstrap], console_topic: str, tmp_path: Path
) -> None:
    """Kafka's console consumer stays in group ``rt-live`` on each broker; both tools describe
    its member (member ids are random: masked, same length).

    Not compared: ``--members --verbose``, whose ASSIGNMENT column Kafka 3.9 prints as
    ``(0)``, without the topic (the Java port groups partitions by topic and then drops the
    name); ``franz consumer-groups`` prints ``rt-console(0)``, as Kafka up to 3.6 did.
    """
    group, client = "rt-live", "rt-client"
    # No auto-commit: a commit between two tools' runs would change CURRENT-OFFSET.
    argv = ["--topic", console_topic, "--group", group, "--from-beginning",
            "--consumer-property", f"client.id={client}",
            "--consumer-property", "enable.auto.commit=false"]  # fmt: skip
    consumers = {
        name: start_kafka_tool(
            KAFKA_MAIN["console-consumer"],
            *("--bootstrap-server", broker.bootstrap, *argv),
            log=tmp_path / f"{name}.out",
        )
        for name, broker in brokers.items()
    }
    try:
        base = ("--bootstrap-server", "{bootstrap}", "--describe", "--group", group)
        deadline = time.monotonic() + 60
        while True:
            states = run(brokers, "consumer-groups", *base, "--state", tools=("franz",))
            if all(" Stable " in r.stdout for r in states.values()):
                break
            assert time.monotonic() < deadline, states
            time.sleep(0.5)

        def mask(line: str) -> str:
            return re.sub(rf"{client}-[0-9a-f-]{{36}}", f"{client}-<member-id-{'.' * 25}>", line)

        for extra in ((), ("--members",)):
            described = run(brokers, "consumer-groups", *base, *extra)
            for broker in BROKERS:  # the same member on one broker: no mask needed
                assert view(described["franz", broker], str) == view(
                    described["kafka", broker], str
                )
            assert_same(described, mask)
            assert f" /127.0.0.1 {' ' * 5}" in described["kafka", "kafka"].stdout
    finally:
        for proc in consumers.values():
            proc.terminate()
            proc.wait(30)


@pytest.mark.parametrize(
    "broker_name",
    [
        "kafka",
        pytest.param(
            "franz",
            marks=pytest.mark.xfail(
                strict=True,
                reason="Franz keeps an Empty group whose last offsets OffsetDelete removed; "
                "Kafka's GroupMetadataManager.cleanupGroupMetadata turns it Dead at once",
            ),
        ),
    ],
)
def test_deleting_the_last_offsets_of_an_empty_group_deletes_the_group(
    brokers: dict[str, HasBootstrap], console_topic: str, broker_name: str
) -> None:
    group = "rt-delete-offsets"
    one = {broker_name: brokers[broker_name]}
    consumed = run(
        one, "console-consumer", "--bootstrap-server", "{bootstrap}", "--topic", console_topic,
        "--from-beginning", "--max-messages", "1", "--group", group, tools=("kafka",),
    )  # fmt: skip
    assert consumed["kafka", broker_name].returncode == 0
    deleted = run(
        one, "consumer-groups", "--bootstrap-server", "{bootstrap}", "--delete-offsets",
        "--group", group, "--topic", console_topic, tools=("kafka",),
    )  # fmt: skip
    assert deleted["kafka", broker_name].stdout.startswith("Request succeed for deleting")
    listed = run(one, "consumer-groups", "--bootstrap-server", "{bootstrap}", "--list",
                 tools=("kafka",))  # fmt: skip
    assert group not in listed["kafka", broker_name].stdout.splitlines()


def test_configs_describe_and_alter(brokers: dict[str, HasBootstrap]) -> None:
    topic = "rt-configs"
    for broker in brokers.values():
        create_topic(broker.bootstrap, topic, config={"cleanup.policy": "compact"})
    base = ("--bootstrap-server", "{bootstrap}", "--entity-type", "topics", "--entity-name", topic)
    for tool in TOOLS:
        altered = run(
            brokers, "configs", *base, "--alter",
            "--add-config", f"max.message.bytes={2000 + len(tool)}", tools=(tool,),
        )  # fmt: skip
        assert [(r.returncode, r.stdout) for r in altered.values()] == [
            (0, f"Completed updating config for topic {topic}.\n")
        ] * 2
    described = run(brokers, "configs", *base, "--describe")
    assert_same(described)
    assert "  max.message.bytes=2005 " in described["kafka", "kafka"].stdout
    assert_same(
        run(brokers, "configs", "--bootstrap-server", "{bootstrap}", "--entity-type", "brokers",
            "--entity-name", "0", "--describe")
    )  # fmt: skip


#: ``kafka-configs --describe --all`` of a topic: the synonyms Franz's broker reports and
#: Kafka's does not (see ``franz.broker.configs``: Franz keeps the broker synonyms Kafka drops
#: with ``dropWhile(name != primary)``; the JUSTIFIED_DIFFERENCES of
#: ``tests/support/differential.py``).
FRANZ_EXTRA_SYNONYMS = {
    "flush.ms": "DEFAULT_CONFIG:log.flush.scheduler.interval.ms=9223372036854775807",
    "retention.ms": "DEFAULT_CONFIG:log.retention.hours=168",
    "segment.jitter.ms": "DEFAULT_CONFIG:log.roll.jitter.hours=0",
    "segment.ms": "DEFAULT_CONFIG:log.roll.hours=168",
}


def test_configs_describe_all_differs_only_in_known_synonyms(
    brokers: dict[str, HasBootstrap],
) -> None:
    topic = "rt-configs-all"
    for broker in brokers.values():
        create_topic(broker.bootstrap, topic)
    results = run(
        brokers, "configs", "--bootstrap-server", "{bootstrap}", "--entity-type", "topics",
        "--entity-name", topic, "--describe", "--all",
    )  # fmt: skip
    # Both tools print the same on each broker.
    for broker in BROKERS:
        assert view(results["franz", broker], str) == view(results["kafka", broker], str)
    on_kafka = results["kafka", "kafka"].stdout.splitlines()
    on_franz = results["kafka", "franz"].stdout.splitlines()
    assert len(on_kafka) == len(on_franz)
    differing = {}
    for k_line, f_line in zip(on_kafka, on_franz, strict=True):
        if k_line != f_line:
            name = k_line.split("=", 1)[0].strip()
            assert k_line.endswith("synonyms={}"), (k_line, f_line)
            assert f_line == k_line.removesuffix("}") + FRANZ_EXTRA_SYNONYMS.get(name, "?") + "}"
            differing[name] = FRANZ_EXTRA_SYNONYMS[name]
    assert differing == FRANZ_EXTRA_SYNONYMS


@pytest.fixture(scope="module")
def delete_topic(kafka: KafkaBroker, franz: BrokerProcess) -> str:
    """``rt-delete`` (two partitions) on both brokers, six records in partition 0, one batch
    each (so both brokers store the same bytes)."""
    topic = "rt-delete"
    for broker in (kafka, franz):
        create_topic(broker.bootstrap, topic, 2)
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(6):
            producer.produce(topic, f"value {i}".encode(), key=f"k{i}".encode(), partition=0)
            assert producer.flush(30) == 0
    return topic


def test_delete_records(
    brokers: dict[str, HasBootstrap], delete_topic: str, tmp_path: Path
) -> None:
    """Each tool deletes on both brokers (Kafka's up to offset 2, then Franz's up to 4); an
    offset past the high watermark is an error on that partition's line."""
    for tool, offset in (("kafka", 2), ("franz", 4)):
        plan = tmp_path / f"delete-{tool}.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": delete_topic, "partition": 0, "offset": offset},
            {"topic": delete_topic, "partition": 1, "offset": 0},
        ]}))  # fmt: skip
        deleted = run(
            brokers, "delete-records", "--bootstrap-server", "{bootstrap}",
            "--offset-json-file", str(plan), tools=(tool,),
        )  # fmt: skip
        assert view(deleted[tool, "franz"], str) == view(deleted[tool, "kafka"], str)
        assert f"partition: {delete_topic}-0\tlow_watermark: {offset}" in (
            deleted[tool, "kafka"].stdout
        )
        starts = run(
            brokers, "get-offsets", "--bootstrap-server", "{bootstrap}",
            "--topic", delete_topic, "--time", "-2",
        )  # fmt: skip
        assert_same(starts)
        assert starts["kafka", "kafka"].stdout == f"{delete_topic}:0:{offset}\n{delete_topic}:1:0\n"
    plan = tmp_path / "delete-too-far.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": delete_topic, "partition": 0, "offset": 7}]}))  # fmt: skip
    too_far = run(brokers, "delete-records", "--bootstrap-server", "{bootstrap}",
                  "--offset-json-file", str(plan))  # fmt: skip
    # Kafka's admin client also logs the partition's error through log4j on stderr (an
    # ERROR line with a timestamp, from DeleteRecordsHandler); franz delete-records does not.
    log4j = re.compile(r"^\[[-\d :,]+\] ERROR .*\(org\.apache\.kafka\.clients\.admin\..*\)$")
    for result in too_far.values():
        result.stderr = "".join(
            line for line in result.stderr.splitlines(keepends=True) if not log4j.match(line)
        )
    assert_same(too_far)
    assert "OffsetOutOfRangeException" in too_far["kafka", "kafka"].stdout


def test_log_dirs(brokers: dict[str, HasBootstrap], delete_topic: str) -> None:
    """Kafka's LogDirsCommand and ``franz log-dirs`` describe the same partitions, sizes and
    lags on both brokers (log dir paths differ by construction: masked), and refuse an
    unknown broker alike."""
    described = run(
        brokers, "log-dirs", "--bootstrap-server", "{bootstrap}", "--describe",
        "--topic-list", delete_topic,
    )  # fmt: skip
    assert_same(described, lambda line: re.sub(r'"logDir":"[^"]*"', '"logDir":"<dir>"', line))
    report = json.loads(described["kafka", "kafka"].stdout.splitlines()[-1])
    (log_dir,) = report["brokers"][0]["logDirs"]
    sizes = {p["partition"]: p["size"] for p in log_dir["partitions"]}
    assert sizes[f"{delete_topic}-1"] == 0 and sizes[f"{delete_topic}-0"] > 0
    unknown = run(
        brokers, "log-dirs", "--bootstrap-server", "{bootstrap}", "--describe",
        "--broker-list", "0,5",
    )  # fmt: skip
    assert_same(unknown)
    assert unknown["kafka", "kafka"].stderr == (
        "ERROR: The given brokers do not exist from --broker-list: 5. Current existent "
        "brokers: 0\n"
    )


def test_leader_election(
    brokers: dict[str, HasBootstrap], delete_topic: str, tmp_path: Path
) -> None:
    """On one broker every partition is led by its preferred replica, in the ISR: both
    election types find nothing to do, the same way on both brokers."""
    plan = tmp_path / "elect.json"
    plan.write_text(json.dumps({"partitions": [
        {"topic": delete_topic, "partition": p} for p in (0, 1)]}))  # fmt: skip
    for election in ("preferred", "unclean"):
        elected = run(
            brokers, "leader-election", "--bootstrap-server", "{bootstrap}",
            "--election-type", election, "--path-to-json-file", str(plan),
        )  # fmt: skip
        assert_same(elected)
    one = run(
        brokers, "leader-election", "--bootstrap-server", "{bootstrap}",
        "--election-type", "preferred", "--topic", delete_topic, "--partition", "1",
    )  # fmt: skip
    assert_same(one)
    assert one["kafka", "kafka"].stdout == (
        f"Valid replica already elected for partitions {delete_topic}-1\n"
    )


def mask_numbers(line: str) -> str:
    """Measured figures (rates, latencies, times) differ from run to run."""
    return re.sub(r"\d+(\.\d+)?", "<n>", line)


def test_perf_tests(brokers: dict[str, HasBootstrap]) -> None:
    """Each producer perf test sends 50,000 records of 100 bytes to both brokers; each
    consumer perf test then reads the 100,000 records back. The final lines have the same
    shape (figures masked), the consumed counts and megabytes are exact."""
    topic, records = "rt-perf", 50_000
    for broker in brokers.values():
        create_topic(broker.bootstrap, topic)
    for tool in TOOLS:
        produced = run(
            brokers, "producer-perf-test", "--topic", topic, "--num-records", str(records),
            "--record-size", "100", "--throughput", "-1",
            "--producer-props", "bootstrap.servers={bootstrap}", "acks=all", tools=(tool,),
        )  # fmt: skip
        for result in produced.values():
            assert result.returncode == 0, result.stderr
            last = result.stdout.splitlines()[-1]
            assert last.startswith(f"{records} records sent, "), result.stdout
        assert mask_numbers(produced[tool, "kafka"].stdout.splitlines()[-1]) == mask_numbers(
            produced[tool, "franz"].stdout.splitlines()[-1]
        )
    assert mask_numbers(produced["franz", "franz"].stdout.splitlines()[-1]) == (
        "<n> records sent, <n> records/sec (<n> MB/sec), <n> ms avg latency, <n> ms max "
        "latency, <n> ms <n>th, <n> ms <n>th, <n> ms <n>th, <n> ms <n>th."
    )
    consumed = run(
        brokers, "consumer-perf-test", "--bootstrap-server", "{bootstrap}", "--topic", topic,
        "--messages", str(2 * records),
    )  # fmt: skip
    for result in consumed.values():
        assert result.returncode == 0, result.stderr
    # The header and the figures' shape (figures differ on one broker too: masked for all).
    assert len({tuple(view(r, mask_numbers)) for r in consumed.values()}) == 1, consumed
    for result in consumed.values():
        fields = [f.strip() for f in result.stdout.splitlines()[-1].split(",")]
        assert (fields[2], fields[4]) == ("9.5367", str(2 * records)), result.stdout


def test_perf_test_transactions(brokers: dict[str, HasBootstrap]) -> None:
    """Kafka 3.9's transactions in the producer perf test: 4000 records at 1000/s with
    --transaction-duration-ms 1000, each tool on each broker to its own one-partition topic.
    The output has the same shape; a read_committed consumer reads every record once; the
    partition holds one COMMIT marker per transaction, about one a second (at least 3: the
    sends take 4 s; at most the run's seconds + 1); the default transactional id is left
    CompleteCommit. A transactional.id with transactions off fails both tools (exit 1:
    Kafka's producer refuses the first send) and writes nothing."""
    records = 4000
    for tool in TOOLS:
        topic = f"rt-perf-txn-{tool}"
        for broker in brokers.values():
            create_topic(broker.bootstrap, topic)
        started = time.monotonic()
        produced = run(
            brokers, "producer-perf-test", "--topic", topic, "--num-records", str(records),
            "--payload-monotonic", "--throughput", "1000", "--transaction-duration-ms", "1000",
            "--producer-props", "bootstrap.servers={bootstrap}", tools=(tool,),
        )  # fmt: skip
        took = time.monotonic() - started
        assert len({tuple(view(r, mask_numbers)) for r in produced.values()}) == 1, produced
        for (_, name), result in produced.items():
            assert result.returncode == 0, result.stderr
            assert result.stdout.splitlines()[-1].startswith(f"{records} records sent, ")
            bootstrap = brokers[name].bootstrap
            values = committed_values(bootstrap, topic, records)
            assert sorted(values) == sorted(str(i).encode() for i in range(records))
            markers = end_offset(bootstrap, topic) - records
            assert 3 <= markers <= int(took) + 1, (tool, name, markers, took)
    assert mask_numbers(produced["franz", "franz"].stdout.splitlines()[-1]) == (
        "<n> records sent, <n> records/sec (<n> MB/sec), <n> ms avg latency, <n> ms max "
        "latency, <n> ms <n>th, <n> ms <n>th, <n> ms <n>th, <n> ms <n>th."
    )
    listed = run(brokers, "transactions", "--bootstrap-server", "{bootstrap}", "list")
    for result in listed.values():
        assert result.returncode == 0, result.stderr
        rows = [line.split("\t") for line in result.stdout.splitlines()[1:]]
        states = {row[0].strip(): row[3].strip() for row in rows}
        assert states["performance-producer-default-transactional-id"] == "CompleteCommit"

    for broker in brokers.values():
        create_topic(broker.bootstrap, "rt-perf-txn-off")
    off = run(
        brokers, "producer-perf-test", "--topic", "rt-perf-txn-off", "--num-records", "10",
        "--record-size", "10", "--throughput", "-1",
        "--producer-props", "bootstrap.servers={bootstrap}", "transactional.id=off",
    )  # fmt: skip
    for (impl, name), result in off.items():
        assert result.returncode == 1, (impl, name, result.stdout, result.stderr)
        assert end_offset(brokers[name].bootstrap, "rt-perf-txn-off") == 0
    assert "before completing a call to initTransactions" in off["kafka", "kafka"].stderr


def committed_values(bootstrap: str, topic: str, count: int) -> list[bytes | None]:
    """Partition 0's values as a read_committed confluent-kafka consumer reads them."""
    consumed = consume_with(
        "confluent-kafka", bootstrap, topic, [0], count,
        config={"isolation.level": "read_committed"},
    )  # fmt: skip
    return [r.value for r in consumed]


def end_offset(bootstrap: str, topic: str) -> int:
    """Partition 0's log end offset (records and transaction markers)."""
    return end_offsets(bootstrap, topic, [0])[0][1]


def test_reference_class_path_is_cached(kafka_libs: Path) -> None:
    """The fetch leaves Kafka's jars where the fixtures look (no download on a warm run)."""
    names = {p.name for p in kafka_libs.iterdir()}
    assert any(n.startswith("kafka_2.13-") for n in names)
    assert any(n.startswith("kafka-tools-") for n in names)
