"""The reassignment scenarios both cluster kinds run: on Apache Kafka 3.9 with Kafka's tool and
``franz reassign-partitions`` (``tests/reference/test_reassign_partitions.py``), on Franz with
``franz reassign-partitions`` (``tests/cluster/test_reassign_partitions.py``).

Each scenario takes the implementations of the tool to run (``impls``: "kafka", "franz").
It runs once per implementation on a twin topic (``<name>-<impl>``, moved by that tool) from
the same cluster state; the read-only steps (``--list``, ``--verify`` of a move in progress,
a refused second ``--execute``) run every implementation on the same state. Every output must
be exactly Kafka 3.9's text (``tests.support.reassign``), so on Kafka the texts are checked
against the oracle and on Franz the broker is checked against them.

A move is kept in progress by ``--throttle 10000`` on 5 MB of data: a follower fetches at most
``replica.fetch.max.bytes`` (1 MiB) before the quota holds it back (and the brokers apply the
rates a moment after the request that set them), so the rest takes minutes at 10 kB/s; the
scenario cancels it long before.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tests.support.reassign import (
    CANNOT_EXECUTE,
    NO_THROTTLES,
    RUN_VERIFY,
    assert_throttles,
    cancel_text,
    client,
    consume,
    create_topic,
    eventually,
    execute_text,
    log_dir_rate,
    log_dirs,
    no_reassignment,
    outcome,
    produce,
    reassign,
    replica_dirs,
    replica_sizes,
    set_log_dir_rate,
    throttles_set,
    verify_text,
    wait_moved,
    write_plan,
)

THROTTLE = 10_000
SLOW_RECORDS, SLOW_SIZE = 5_000, 1_000  # 5 MB behind a 10 kB/s throttle
#: ``--replica-alter-log-dirs-throttle`` of the log-dir scenario: after a first read of
#: ``replica.fetch.max.bytes`` (1 MiB) the 5 MB take ~40 s, the scenario's reads take less.
LOG_DIR_THROTTLE = 100_000


def run_with_plan(
    impl: str, bootstrap: str, action: str, plan: Path, *extra: str
) -> tuple[int, str, str]:
    return outcome(reassign(impl, bootstrap, action, "--reassignment-json-file", plan, *extra))


def list_with_nothing_moving(bootstrap: str, impls: Sequence[str]) -> None:
    for impl in impls:
        nothing = (0, "No partition reassignments found.\n", "")
        assert outcome(reassign(impl, bootstrap, "--list")) == nothing, impl


def completed_move(bootstrap: str, tmp_path: Path, impls: Sequence[str]) -> None:
    """Two partitions move (1 -> 2,3 and 2 -> 3,1) with their records; --verify reports them
    completed and clears the throttles; the old replicas are deleted."""
    for impl in impls:
        topic = f"moved-{impl}"
        create_topic(bootstrap, topic, [[1], [2]])
        sent = {p: produce(bootstrap, topic, p, 200, 100) for p in (0, 1)}
        before = {p: replica_sizes(bootstrap, topic, p) for p in (0, 1)}
        assert before[0][1] > 0 and before[1][2] > 0, before
        targets = {0: [2, 3], 1: [3, 1]}
        plan = write_plan(tmp_path / f"{topic}.json", topic, targets)
        started = run_with_plan(impl, bootstrap, "--execute", plan)
        assert started == (0, execute_text(topic, {0: [1], 1: [2]}), ""), impl
        wait_moved(bootstrap, topic, targets, 120)
        done = {0: "is completed.", 1: "is completed."}
        for verifier in impls:
            checked = run_with_plan(verifier, bootstrap, "--verify", plan)
            assert checked == (0, verify_text(topic, done, clears=True), ""), verifier
        # Every new replica holds what the old one held (the same bytes: the same size), and
        # the old replicas are gone.
        expected = {p: dict.fromkeys(targets[p], next(iter(before[p].values()))) for p in (0, 1)}
        eventually(
            lambda topic=topic, expected=expected: all(
                replica_sizes(bootstrap, topic, p) == expected[p] for p in (0, 1)
            ),
            60,
            f"{topic}'s replicas on their new brokers only, each as big as the original",
        )
        assert all(consume(bootstrap, topic, p, 200) == sent[p] for p in (0, 1))
        assert_throttles(bootstrap, topic, NO_THROTTLES)


def throttled_move_cancelled(bootstrap: str, tmp_path: Path, impls: Sequence[str]) -> None:
    """--throttle sets Kafka's throttle configs; while they hold the move back, --list and
    --verify report it, a second --execute is refused, an --additional resubmission changes
    the rate; --cancel puts the replicas back and clears the throttles."""
    for impl in impls:
        topic = f"slow-{impl}"
        create_topic(bootstrap, topic, [[1]])
        produce(bootstrap, topic, 0, SLOW_RECORDS, SLOW_SIZE)
        plan = write_plan(tmp_path / f"{topic}.json", topic, {0: [2, 3]})
        started = run_with_plan(impl, bootstrap, "--execute", plan, "--throttle", str(THROTTLE))
        assert started == (0, execute_text(topic, {0: [1]}, THROTTLE), ""), impl
        assert_throttles(bootstrap, topic, throttles_set("0:1", "0:2,0:3", THROTTLE))

        ongoing = f"{topic}-0: replicas: 2,3,1. adding: 2,3. removing: 1."
        for lister in impls:
            listed = outcome(reassign(lister, bootstrap, "--list"))
            assert listed == (0, f"Current partition reassignments:\n{ongoing}\n", ""), lister
        in_progress = verify_text(topic, {0: "is still in progress."}, clears=False)
        for verifier in impls:
            checked = run_with_plan(verifier, bootstrap, "--verify", plan)
            assert checked == (0, in_progress, ""), verifier
            again = run_with_plan(verifier, bootstrap, "--execute", plan)
            assert again == (1, CANNOT_EXECUTE, ""), verifier
        assert_throttles(bootstrap, topic, throttles_set("0:1", "0:2,0:3", THROTTLE))

        # During the move the partition's replicas are the full set, 2,3,1.
        faster = execute_text(topic, {0: [2, 3, 1]}, 2 * THROTTLE)
        for resubmitter in impls:
            resubmitted = run_with_plan(
                resubmitter, bootstrap, "--execute", plan, "--additional",
                "--throttle", str(2 * THROTTLE),
            )  # fmt: skip
            assert resubmitted == (0, faster, ""), resubmitter
        assert_throttles(bootstrap, topic, throttles_set("0:1", "0:2,0:3", 2 * THROTTLE))

        cancelled = run_with_plan(impl, bootstrap, "--cancel", plan)
        assert cancelled == (0, cancel_text(topic, [0], clears=True), ""), impl
        assert_throttles(bootstrap, topic, NO_THROTTLES)
        wait_moved(bootstrap, topic, {0: [1]}, 60)
        back = verify_text(topic, {0: ", but replica set is 1 rather than 2,3."}, clears=True)
        for verifier in impls:
            assert run_with_plan(verifier, bootstrap, "--verify", plan) == (0, back, ""), verifier


def cancel_skips_a_move_that_only_adds(
    bootstrap: str, tmp_path: Path, impls: Sequence[str]
) -> None:
    """Kafka 3.9's --cancel leaves an ongoing reassignment with replicas to add and none to
    remove ("None of the specified partition reassignments are active."), and prints its
    log-dir line without a newline before the clearing lines."""
    topic = "grow"
    create_topic(bootstrap, topic, [[1]])
    produce(bootstrap, topic, 0, SLOW_RECORDS, SLOW_SIZE)
    plan = write_plan(tmp_path / "grow.json", topic, {0: [1, 2]})
    started = run_with_plan("franz", bootstrap, "--execute", plan, "--throttle", str(THROTTLE))
    assert started == (0, execute_text(topic, {0: [1]}, THROTTLE), "")
    for impl in impls:
        kept = run_with_plan(impl, bootstrap, "--cancel", plan, "--preserve-throttles")
        assert kept == (0, cancel_text(topic, [], clears=False), ""), impl
    assert_throttles(bootstrap, topic, throttles_set("0:1", "0:2", THROTTLE, (1, 2)))
    assert not no_reassignment(bootstrap)
    cleared = run_with_plan("franz", bootstrap, "--cancel", plan)
    assert cleared == (0, cancel_text(topic, [], clears=True), "")
    assert_throttles(bootstrap, topic, NO_THROTTLES)
    wait_moved(bootstrap, topic, {0: [1, 2]}, 180)  # unthrottled now, it completes


def log_dir_move(bootstrap: str, tmp_path: Path, impls: Sequence[str]) -> None:
    """``log_dirs`` moves a replica to the other log dir of broker 3 (AlterReplicaLogDirs),
    throttled by ``--replica-alter-log-dirs-throttle``: --verify and log-dirs show it moving
    (a future replica in the target dir, behind the current one); once the throttle is
    lifted it completes, --verify reports it and clears the throttles, the data is intact."""
    for impl in impls:
        topic = f"dirs-{impl}"
        create_topic(bootstrap, topic, [[3]])
        sent = produce(bootstrap, topic, 0, SLOW_RECORDS, SLOW_SIZE)
        (now,) = replica_dirs(bootstrap, 3, topic, 0)
        target = next(d for d in client(bootstrap).describe_log_dirs(3) if d != now)
        # The rate holds before the move starts (a broker applies it a moment after).
        set_log_dir_rate(bootstrap, 3, LOG_DIR_THROTTLE)
        plan = write_plan(tmp_path / f"{topic}.json", topic, {0: [3]}, {0: [target]})
        started = run_with_plan(
            impl, bootstrap, "--execute", plan,
            "--replica-alter-log-dirs-throttle", str(LOG_DIR_THROTTLE),
        )  # fmt: skip
        assert started == (
            0,
            execute_text(topic, {0: [3]}).replace(
                "Successfully started partition",
                RUN_VERIFY
                + f"The replica-alter-dir throttle limit was set to {LOG_DIR_THROTTLE} B/s\n"
                + "Successfully started partition",
            )
            + f"Successfully started moving log directory to {target} for replica {topic}-0 "
            "with broker 3 \n",
            "",
        ), impl
        assert replica_dirs(bootstrap, 3, topic, 0) == {now: False, target: True}
        moving = (
            "Status of partition reassignment:\n"
            f"Reassignment of partition {topic}-0 is completed.\n"
            f"Reassignment of replica {topic}-0-3 is still in progress.\n"
        )
        for verifier in impls:
            checked = run_with_plan(verifier, bootstrap, "--verify", plan)
            assert checked == (0, moving, ""), verifier
        for lister in impls:
            code, out, err = outcome(
                log_dirs(lister, bootstrap, "--describe", "--broker-list", "3",
                         "--topic-list", topic)
            )  # fmt: skip
            assert (code, err) == (0, ""), lister
            (broker,) = json.loads(out.splitlines()[2])["brokers"]
            shown = {
                (d["logDir"], p["isFuture"]): p["offsetLag"]
                for d in broker["logDirs"]
                for p in d["partitions"]
            }
            assert set(shown) == {(now, False), (target, True)}, lister
            assert shown[now, False] == 0 and shown[target, True] > 0, lister
        assert log_dir_rate(bootstrap, 3) == str(LOG_DIR_THROTTLE)
        set_log_dir_rate(bootstrap, 3, None)
        eventually(
            lambda topic=topic, target=target: (
                replica_dirs(bootstrap, 3, topic, 0) == {target: False}
            ),
            60,
            f"{topic}-0 in {target} only",
        )
        assert no_reassignment(bootstrap)
        done = (
            "Status of partition reassignment:\n"
            f"Reassignment of partition {topic}-0 is completed.\n"
            f"Reassignment of replica {topic}-0-3 completed successfully.\n"
            "Clearing broker-level throttles on brokers 1,2,3\n"
            f"Clearing topic-level throttles on topic {topic}\n"
        )
        for verifier in impls:
            checked = run_with_plan(verifier, bootstrap, "--verify", plan)
            assert checked == (0, done, ""), verifier
        assert consume(bootstrap, topic, 0, SLOW_RECORDS) == sent
