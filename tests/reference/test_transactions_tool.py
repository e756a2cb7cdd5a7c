"""Issue 19, item 6: ``franz transactions`` against Kafka 3.9's own ``kafka-transactions.sh``
(``org.apache.kafka.tools.TransactionsCommand``), on the same broker after the same steps.

The broker holds, written once per module:

* three transactional ids (confluent-kafka ``Producer({'transactional.id': ...})``) on topic
  ``rt-txn``: one committed, one aborted, one left open (its producer is kept alive with a
  15-minute transaction timeout, and aborted at the end);
* *hanging* transactions on the four partitions of ``rt-txn-hang``: transactional batches
  produced by two idempotent producer ids (InitProducerId without a transactional id, then
  Produce with a transactional batch, while KIP-890's partition verification is turned off
  so that the broker appends it without asking the coordinator), so no coordinator knows
  them. Their timestamps are 30 minutes old,
  past find-hanging's default 15-minute bound.

Then ``franz dump-log-segments`` and Kafka's ``DumpLogSegments`` read the files the broker
wrote (its log dir): the data segments with their control batches, the ``.txnindex`` files
and the ``__transaction_state`` segments (``--transaction-log-decoder``).

Every check runs both tools and compares exit code, stdout and stderr line by line; only
columns that depend on the moment the tool runs (``TransactionDurationMs``,
``Duration(min)``) are masked, and each mask checks the value's range.

Brokers: ``BROKERS`` lists the brokers the module runs on, Kafka 3.9 and Franz (the
``broker`` fixture maps the name to the session fixture of that name, and every
broker-specific value, producer ids included, is read from the broker itself). On Franz both
tools talk to Franz and Kafka's ``DumpLogSegments`` reads Franz's files.
"""

from __future__ import annotations

import contextlib
import difflib
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from franz.admin.wire import connect
from franz.protocol.records.inflated import build_batch
from tests.support.clients import create_topic
from tests.support.kafka_ref import (
    DUMP_LOG_SEGMENTS,
    HasBootstrap,
    KafkaBroker,
    run_franz_tool,
    run_kafka_tool,
)

TRANSACTIONS_MAIN = "org.apache.kafka.tools.TransactionsCommand"
#: The brokers this module runs on (see the module docstring).
BROKERS = ["kafka", "franz"]
TOPIC = "rt-txn"
HANG_TOPIC = "rt-txn-hang"
HANG_PARTITIONS = 4
COMMITTED, ABORTED, OPEN = "rt-txn-committed", "rt-txn-aborted", "rt-txn-open"
#: How old the hanging batches' timestamps are: past find-hanging's 15-minute default.
HANG_AGE_MS = 30 * 60_000
VERIFICATION = "transaction.partition.verification.enable"


@dataclass
class TxnState:
    broker: HasBootstrap
    hang_producers: dict[int, tuple[int, int]]  # partition -> (producer id, epoch)
    hang_offsets: dict[int, int]  # partition -> the hanging transaction's start offset


@pytest.fixture(scope="module", params=BROKERS)
def broker(request: pytest.FixtureRequest) -> HasBootstrap:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


def _transactional(bootstrap: str, tid: str) -> confluent_kafka.Producer:
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": tid,
            "transaction.timeout.ms": 900_000,
            "linger.ms": 0,
        }
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    return producer


@contextlib.contextmanager
def _verification_off(bootstrap: str) -> Iterator[None]:
    """Turn off KIP-890's ``transaction.partition.verification.enable`` (a dynamic broker
    config) on every broker for the block: with it on, a broker asks the coordinator whether
    a transactional batch's partition is in the transaction, and refuses the batch that
    makes a hanging transaction. The override is deleted afterwards."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    brokers = sorted(admin.list_topics(timeout=30).brokers)

    def alter(op: AlterConfigOpType) -> None:
        entry = ConfigEntry(VERIFICATION, "false", incremental_operation=op)
        resources = [ConfigResource("BROKER", str(b), incremental_configs=[entry]) for b in brokers]
        for future in admin.incremental_alter_configs(resources).values():
            future.result(timeout=30)

    alter(AlterConfigOpType.SET)
    try:
        yield
    finally:
        alter(AlterConfigOpType.DELETE)


def _write_hanging(bootstrap: str, partitions: list[int]) -> dict[int, tuple[int, int, int]]:
    """A transactional batch per partition from one idempotent producer id, unknown to any
    coordinator: ``partition -> (producer id, epoch, base offset)``."""
    out: dict[int, tuple[int, int, int]] = {}
    with connect(bootstrap, 30, "rt-txn-hanging") as conn:
        init = conn.request(
            22, {"transactional_id": None, "transaction_timeout": 60_000}, max_version=4
        )
        assert int(init.error_code) == 0, init
        pid, epoch = int(init.producer_id), int(init.producer_epoch)
        stamp = time.time_ns() // 1_000_000 - HANG_AGE_MS
        for partition in partitions:
            batch = build_batch(
                [(stamp, b"k", b"hanging"), (stamp, b"k", b"hanging-2")],
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=0,
                is_transactional=True,
            )
            request = {
                # A transactional batch needs a transactional id (Kafka refuses it with
                # TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise): one no producer uses.
                "transactional_id": "rt-txn-ghost",
                "acks": -1,
                "timeout": 30_000,
                "topic_data": [
                    {
                        "name": HANG_TOPIC,
                        "partition_data": [{"index": partition, "records": bytes(batch)}],
                    }
                ],
            }
            # The dynamic config reaches the broker through ZooKeeper a moment later.
            deadline = time.monotonic() + 30
            while True:
                response = conn.request(0, request, max_version=9)
                [answer] = response.responses[0].partition_responses
                if int(answer.error_code) == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert int(answer.error_code) == 0, answer
            out[partition] = (pid, epoch, int(answer.base_offset))
    return out


@pytest.fixture(scope="module")
def txns(broker: HasBootstrap) -> Iterator[TxnState]:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, TOPIC, partitions=2, timeout=90)
    create_topic(bootstrap, HANG_TOPIC, partitions=HANG_PARTITIONS, timeout=90)
    committed = _transactional(bootstrap, COMMITTED)
    for i in range(3):
        committed.produce(TOPIC, f"c{i}".encode(), partition=i % 2)
    committed.commit_transaction(60)
    aborted = _transactional(bootstrap, ABORTED)
    for i in range(2):
        aborted.produce(TOPIC, f"a{i}".encode(), partition=0)
    aborted.flush(30)
    aborted.abort_transaction(60)
    open_txn = _transactional(bootstrap, OPEN)
    open_txn.produce(TOPIC, b"o0", partition=1)
    assert open_txn.flush(30) == 0
    with _verification_off(bootstrap):
        hanging = {**_write_hanging(bootstrap, [0, 1]), **_write_hanging(bootstrap, [2, 3])}
    try:
        yield TxnState(
            broker,
            {p: (pid, epoch) for p, (pid, epoch, _) in hanging.items()},
            {p: offset for p, (_, _, offset) in hanging.items()},
        )
    finally:
        open_txn.abort_transaction(60)
        for producer in (committed, aborted, open_txn):
            producer.flush(10)


Results = dict[str, subprocess.CompletedProcess[str]]


def run_both(broker: HasBootstrap, *args: str) -> Results:
    """Kafka's tool, then Franz's, with ``--bootstrap-server`` first as Kafka's parser wants."""
    argv = ("--bootstrap-server", broker.bootstrap, *args)
    return {
        "kafka": run_kafka_tool(TRANSACTIONS_MAIN, *argv),
        "franz": run_franz_tool("transactions", *argv),
    }


def view(result: subprocess.CompletedProcess[str], mask: Callable[[str], str]) -> list[str]:
    return [
        f"exit {result.returncode}",
        *(f"out| {mask(line)}" for line in result.stdout.splitlines()),
        *(f"err| {line}" for line in result.stderr.splitlines()),
    ]


def assert_same(results: Results, mask: Callable[[str], str] = lambda s: s) -> None:
    expected, got = view(results["kafka"], mask), view(results["franz"], mask)
    diff = "\n".join(difflib.unified_diff(expected, got, "kafka", "franz", lineterm="", n=1))
    assert expected == got, diff


def mask_column(index: int, check: Callable[[str], bool]) -> Callable[[str], str]:
    """Replace the tab-separated cell ``index`` of data lines by ``<masked>`` after checking
    it (the header line is left as it is)."""

    def mask(line: str) -> str:
        cells = line.split("\t")
        if len(cells) > index and not cells[0].strip()[:1].isupper():
            assert check(cells[index].strip()), line
            cells[index] = "<masked>"
        return "\t".join(cells)

    return mask


def rows(result: subprocess.CompletedProcess[str]) -> list[list[str]]:
    return [[c.strip() for c in line.split("\t")[:-1]] for line in result.stdout.splitlines()]


def test_list(txns: TxnState) -> None:
    results = run_both(txns.broker, "list")
    assert_same(results)
    table = rows(results["kafka"])
    assert table[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    # Other tests of the session share the broker and may have left transactional ids of
    # their own: only this module's ids are checked here (both tools list all of them).
    states = {r[0]: r[3] for r in table[1:] if r[0].startswith("rt-txn-")}
    assert states == {COMMITTED: "CompleteCommit", ABORTED: "CompleteAbort", OPEN: "Ongoing"}
    assert_same(run_both(txns.broker, "list", "--duration-filter", "-1"))
    # The coordinator filters on the time since each transaction started, whatever its
    # state: all three started more than 0 ms ago, none an hour ago.
    assert_same(run_both(txns.broker, "list", "--duration-filter", "0"))
    filtered = run_both(txns.broker, "list", "--duration-filter", "3600000")
    assert_same(filtered)
    assert rows(filtered["kafka"]) == [table[0]]


@pytest.mark.parametrize("tid", [COMMITTED, ABORTED, OPEN])
def test_describe(txns: TxnState, tid: str) -> None:
    results = run_both(txns.broker, "describe", "--transactional-id", tid)
    # TransactionDurationMs is "now" minus the start: it grows between the two runs.
    assert_same(results, mask_column(7, lambda v: v == "None" or int(v) >= 0))
    [header, row] = rows(results["kafka"])
    assert header[4] == "TransactionState" and header[8] == "TopicPartitions"
    expected = {OPEN: ("Ongoing", f"{TOPIC}-1"), COMMITTED: ("CompleteCommit", ""),
                ABORTED: ("CompleteAbort", "")}  # fmt: skip
    assert (row[4], row[8]) == expected[tid]
    assert int(row[6]) > 0  # a completed transaction keeps its start time


def test_describe_an_unknown_transactional_id(txns: TxnState) -> None:
    results = run_both(txns.broker, "describe", "--transactional-id", "rt-txn-nobody")
    assert_same(results)
    assert results["kafka"].returncode == 1
    assert "failed because the ID could not be found" in results["kafka"].stderr


@pytest.mark.parametrize(
    ("topic", "partition", "extra"),
    [(TOPIC, 0, ()), (TOPIC, 1, ()), (TOPIC, 1, ("--broker-id", "0")), (HANG_TOPIC, 2, ())],
)
def test_describe_producers(
    txns: TxnState, topic: str, partition: int, extra: tuple[str, ...]
) -> None:
    results = run_both(
        txns.broker, "describe-producers", "--topic", topic, "--partition", str(partition), *extra
    )
    assert_same(results)
    table = rows(results["kafka"])
    assert table[0][-1] == "CurrentTransactionStartOffset"
    if topic == HANG_TOPIC:
        pid, epoch = txns.hang_producers[partition]
        assert table[1] == [
            str(pid), str(epoch), "-1", "1", table[1][4], str(txns.hang_offsets[partition])
        ]  # fmt: skip
    elif partition == 1:
        # The committed producer (c1 at 0, its marker at 1) and the open one (o0 at 2).
        assert sorted(r[-1] for r in table[1:]) == ["2", "None"]


def _duration_is_the_age(value: str) -> bool:
    return int(value) in (HANG_AGE_MS // 60_000, HANG_AGE_MS // 60_000 + 1)


@pytest.mark.parametrize(
    "scope",
    [
        ("--topic", HANG_TOPIC),
        ("--broker-id", "0"),
        ("--topic", HANG_TOPIC, "--partition", "3"),
        ("--topic", TOPIC, "--max-transaction-timeout", "0"),
    ],
    ids=["topic", "broker", "partition", "open-but-known"],
)
def test_find_hanging(txns: TxnState, scope: tuple[str, ...]) -> None:
    results = run_both(txns.broker, "find-hanging", *scope)
    assert_same(results, mask_column(7, _duration_is_the_age))
    table = rows(results["kafka"])
    assert table[0][-1] == "Duration(min)"
    found = {(r[0], int(r[1])) for r in table[1:]}
    if scope[1] == TOPIC:
        assert found == set()  # the open transaction is its coordinator's: not hanging
    elif "--partition" in scope:
        assert found == {(HANG_TOPIC, 3)}
    else:
        assert {tp for tp in found if tp[0] == HANG_TOPIC} == {
            (HANG_TOPIC, p) for p in range(HANG_PARTITIONS)
        }


@pytest.mark.parametrize(
    "args",
    [(), ("--partition", "0"), ("--topic", "rt-txn-no-such-topic")],
    ids=["no-scope", "partition-without-topic", "unknown-topic"],
)
def test_find_hanging_refuses(txns: TxnState, args: tuple[str, ...]) -> None:
    results = run_both(txns.broker, "find-hanging", *args)
    assert_same(results)
    assert results["kafka"].returncode == 1


@pytest.mark.parametrize(
    "args",
    [
        ("--topic", HANG_TOPIC, "--partition", "0"),
        ("--topic", HANG_TOPIC, "--partition", "0", "--producer-id", "5"),
        ("--topic", HANG_TOPIC, "--partition", "0", "--producer-id", "5", "--producer-epoch", "0"),
        ("--topic", HANG_TOPIC, "--partition", "0", "--start-offset", "12345"),
    ],
    ids=["unidentified", "no-epoch", "no-coordinator-epoch", "no-such-start-offset"],
)
def test_abort_refuses(txns: TxnState, args: tuple[str, ...]) -> None:
    results = run_both(txns.broker, "abort", *args)
    assert_same(results)
    assert results["kafka"].returncode == 1 and results["kafka"].stderr


def _open_offset(broker: HasBootstrap, partition: int) -> list[str]:
    result = run_franz_tool(
        "transactions", "--bootstrap-server", broker.bootstrap, "describe-producers",
        "--topic", HANG_TOPIC, "--partition", str(partition),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return [r[-1] for r in rows(result)[1:]]


def test_abort_hanging_transactions(txns: TxnState) -> None:
    """Each tool aborts one hanging transaction by its start offset and one by its producer
    id and epochs; the partitions then have no open transaction, and find-hanging (both
    tools) finds none. Runs after the read-only tests (pytest keeps file order)."""
    bootstrap = txns.broker.bootstrap
    base = ("--bootstrap-server", bootstrap, "abort", "--topic", HANG_TOPIC)
    by_tool: dict[str, Callable[..., subprocess.CompletedProcess[str]]] = {
        "kafka": lambda *a: run_kafka_tool(TRANSACTIONS_MAIN, *a),
        "franz": lambda *a: run_franz_tool("transactions", *a),
    }
    plan: list[tuple[str, int, tuple[str, ...]]] = []
    for tool, (by_offset, by_id) in zip(by_tool, ((0, 2), (1, 3)), strict=True):
        pid, epoch = txns.hang_producers[by_id]
        plan.append((tool, by_offset, ("--start-offset", str(txns.hang_offsets[by_offset]))))
        plan.append(
            (tool, by_id, ("--producer-id", str(pid), "--producer-epoch", str(epoch),
                           "--coordinator-epoch", "-1"))
        )  # fmt: skip
    outcomes: list[Any] = []
    for tool, partition, how in plan:
        assert _open_offset(txns.broker, partition) == [str(txns.hang_offsets[partition])]
        result = by_tool[tool](*base, "--partition", str(partition), *how)
        outcomes.append((tool, partition, result.returncode, result.stdout, result.stderr))
        assert _open_offset(txns.broker, partition) == ["None"], (tool, partition)
    assert [o[2:] for o in outcomes] == [(0, "", "")] * len(plan), outcomes
    results = run_both(txns.broker, "find-hanging", "--topic", HANG_TOPIC)
    assert_same(results)
    assert len(rows(results["kafka"])) == 1


# -- the files Kafka wrote: dump-log-segments ------------------------------------------------


def log_dir(broker: HasBootstrap) -> Path:
    """The broker's (first) log dir: ``KafkaBroker.log_dir``, or a Franz broker's
    ``log.dirs``."""
    if isinstance(broker, KafkaBroker):
        return broker.log_dir
    return Path(str(getattr(broker, "overrides", {})["log.dirs"]).split(",")[0])


def segment_files(broker: HasBootstrap, prefix: str, suffix: str) -> list[Path]:
    return sorted(
        f
        for d in log_dir(broker).iterdir()
        if d.is_dir() and d.name.rsplit("-", 1)[0] == prefix
        for f in d.iterdir()
        if f.suffix == suffix and f.stat().st_size > 0
    )


def compare_dumps(files: list[Path], *flags: str) -> str:
    """Kafka's ``DumpLogSegments`` and ``franz dump-log-segments`` on the same files: the
    same exit code, stdout and stderr; Kafka's stdout."""
    assert files
    joined = ",".join(map(str, files))
    kafka = run_kafka_tool(DUMP_LOG_SEGMENTS, "--files", joined, *flags)
    franz = run_franz_tool("dump-log-segments", "--files", joined, *flags)
    assert kafka.returncode == 0, kafka.stderr
    assert (franz.returncode, franz.stderr.splitlines()) == (0, kafka.stderr.splitlines())
    expected, got = kafka.stdout.splitlines(), franz.stdout.splitlines()
    assert got == expected, "\n".join(difflib.unified_diff(expected, got, lineterm="", n=1))
    return kafka.stdout


@pytest.mark.parametrize("flags", [(), ("--deep-iteration",), ("--print-data-log",)])
def test_dump_log_prints_control_batches_as_kafka(txns: TxnState, flags: tuple[str, ...]) -> None:
    """The data partitions' segments, with their COMMIT and ABORT markers (control batches:
    ``endTxnMarker: COMMIT coordinatorEpoch: N`` in deep iteration)."""
    files = segment_files(txns.broker, TOPIC, ".log") + segment_files(
        txns.broker, HANG_TOPIC, ".log"
    )
    out = compare_dumps(files, *flags)
    assert "isTransactional: true isControl: true" in out
    if flags:
        assert "endTxnMarker: COMMIT coordinatorEpoch: " in out
        assert "endTxnMarker: ABORT coordinatorEpoch: " in out


def test_dump_log_prints_transaction_indexes_as_kafka(txns: TxnState) -> None:
    """``.txnindex``: the aborted transaction of ``rt-txn-0`` and the four aborted hanging
    ones (after ``test_abort_hanging_transactions``)."""
    files = segment_files(txns.broker, TOPIC, ".txnindex") + segment_files(
        txns.broker, HANG_TOPIC, ".txnindex"
    )
    out = compare_dumps(files)
    entries = [line for line in out.splitlines() if line.startswith("version: 0 producerId: ")]
    assert len(entries) >= 1 + HANG_PARTITIONS, out


@pytest.mark.parametrize("flags", [("--transaction-log-decoder",), ("--deep-iteration",)])
def test_dump_log_decodes_the_transaction_log_as_kafka(
    txns: TxnState, flags: tuple[str, ...]
) -> None:
    """``__transaction_state`` segments with ``--transaction-log-decoder``: every state change
    of the three transactional ids."""
    out = compare_dumps(segment_files(txns.broker, "__transaction_state", ".log"), *flags)
    if "--transaction-log-decoder" in flags:
        for tid in (COMMITTED, ABORTED, OPEN):
            assert f"key: transaction_metadata::transactionalId={tid} payload: " in out
        assert "state=CompleteCommit,partitions=[]" in out
        assert f"state=Ongoing,partitions=[{TOPIC}-1]" in out
