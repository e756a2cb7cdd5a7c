"""Replica assignment for CreateTopics and CreatePartitions, as Kafka's ZooKeeper-mode broker
computes it (Kafka 3.9).

Rules this module keeps:

* ``assign_replicas_to_brokers`` is Kafka's ``AdminUtils.assignReplicasToBrokers``
  (``server-common/.../org/apache/kafka/admin/AdminUtils.java``) step for step, including its
  two random draws (start index, then replica shift, each ``nextInt(len(brokers))``) unless
  ``fixed_start_index >= 0``. The random source is injected (``rand(bound) -> int in
  [0, bound)``), so Kafka's own test vectors (AdminTest, AdminRackAwareTest, AddPartitionsTest)
  reproduce exactly.
* The broker order matters and is the caller's: Kafka's callers pass the brokers sorted by id
  (``AdminZkClient.getBrokerMetadatas`` ends with ``sortBy(_.id)``); ``sorted_brokers`` does it.
* Rack-unaware when no broker has a rack, rack-aware when all have one; a mix is Kafka's
  ``AdminOperationException`` ("Not all brokers have rack information for replica rack aware
  assignment."), which is not an ``ApiException``: Kafka's ``ApiError.fromThrowable`` answers
  it as UNKNOWN_SERVER_ERROR (and drops the message), hence ``AdminOperationError``'s code.
* ``new_partitions_assignment`` is ``AdminZkClient.createNewPartitionsAssignment`` plus the
  checks ``ZkAdminManager.createPartitions`` makes first; ``validate_topic_create_assignment``
  is the assignment part of ``AdminZkClient.validateTopicCreate``. Messages are Kafka's, byte
  for byte where Kafka builds them from Java/Scala values we can reproduce (lists joined with
  ", ").

Glossary: an *assignment* maps partition id -> replica broker ids, the first being the
preferred leader (Kafka's ``Map[Int, Seq[Int]]``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from franz.errors import (
    ApiError,
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)

__all__ = [
    "AdminOperationError",
    "Assignment",
    "BrokerMetadata",
    "BrokerNotAvailableError",
    "RandomSource",
    "assign_replicas_to_brokers",
    "new_partitions_assignment",
    "rack_alternated_broker_list",
    "replica_index",
    "sorted_brokers",
    "validate_topic_create_assignment",
]

#: partition id -> replica broker ids (first = preferred leader).
Assignment = dict[int, list[int]]
#: ``rand(bound)`` returns an int in ``[0, bound)``: Java's ``Random.nextInt(bound)``.
RandomSource = Callable[[int], int]


class AdminOperationError(ApiError):
    """Kafka's ``AdminOperationException``: not an ``ApiException``, so Kafka reports it as
    UNKNOWN_SERVER_ERROR."""

    code: ClassVar[ErrorCode] = ErrorCode.UNKNOWN_SERVER_ERROR


class BrokerNotAvailableError(ApiError):
    """Kafka's ``BrokerNotAvailableException`` (a manual CreatePartitions assignment naming a
    broker that is not registered, from ``AdminZkClient.validateReplicaAssignment``)."""

    code: ClassVar[ErrorCode] = ErrorCode.BROKER_NOT_AVAILABLE


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    """Kafka's ``org.apache.kafka.admin.BrokerMetadata``: a broker id and its ``broker.rack``."""

    id: int
    rack: str | None = None


def sorted_brokers(brokers: Iterable[BrokerMetadata]) -> list[BrokerMetadata]:
    """The brokers in the order Kafka assigns over: by id (``getBrokerMetadatas``)."""
    return sorted(brokers, key=lambda b: b.id)


def _default_rand(bound: int) -> int:
    return random.randrange(bound)


def replica_index(
    first_replica_index: int, second_replica_shift: int, replica_idx: int, n_brokers: int
) -> int:
    """Kafka's ``AdminUtils.replicaIndex``: the broker index of follower ``replica_idx``."""
    shift = 1 + (second_replica_shift + replica_idx) % (n_brokers - 1)
    return (first_replica_index + shift) % n_brokers


def assign_replicas_to_brokers(
    brokers: Sequence[BrokerMetadata],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    *,
    rand: RandomSource = _default_rand,
) -> Assignment:
    """Kafka's ``AdminUtils.assignReplicasToBrokers``.

    Rack-unaware: the first replica of partition ``p`` is ``brokers[(p + start) % n]``; the
    followers are shifted by ``replica_index``, the shift growing by one each time the partition
    id wraps around the broker list. Rack-aware: the same over the rack-alternated broker list,
    skipping a broker whose rack (or itself) already holds a replica while some rack (broker)
    holds none.
    """
    if n_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}."
        )
    if all(b.rack is None for b in brokers):
        return _rack_unaware(
            n_partitions,
            replication_factor,
            [b.id for b in brokers],
            fixed_start_index,
            start_partition_id,
            rand,
        )
    if any(b.rack is None for b in brokers):
        raise AdminOperationError(
            "Not all brokers have rack information for replica rack aware assignment."
        )
    rack_of = {b.id: b.rack for b in brokers if b.rack is not None}
    return _rack_aware(
        n_partitions, replication_factor, rack_of, fixed_start_index, start_partition_id, rand
    )


def _rack_unaware(
    n_partitions: int,
    replication_factor: int,
    broker_list: list[int],
    fixed_start_index: int,
    start_partition_id: int,
    rand: RandomSource,
) -> Assignment:
    n = len(broker_list)
    # Two draws, in Kafka's order: start index first, then the replica shift.
    start_index = fixed_start_index if fixed_start_index >= 0 else rand(n)
    current = max(0, start_partition_id)
    next_replica_shift = fixed_start_index if fixed_start_index >= 0 else rand(n)
    ret: Assignment = {}
    for _ in range(n_partitions):
        if current > 0 and current % n == 0:
            next_replica_shift += 1
        first = (current + start_index) % n
        replicas = [broker_list[first]]
        for j in range(replication_factor - 1):
            replicas.append(broker_list[replica_index(first, next_replica_shift, j, n)])
        ret[current] = replicas
        current += 1
    return ret


def rack_alternated_broker_list(rack_of: Mapping[int, str]) -> list[int]:
    """Kafka's ``AdminUtils.getRackAlternatedBrokerList``: one broker per rack in turn, racks
    in sorted order, each rack's brokers by ascending id (``{0: r1, 1: r3, 2: r3, 3: r2, 4: r2,
    5: r1}`` -> ``[0, 3, 1, 5, 4, 2]``)."""
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in rack_of.items():
        by_rack.setdefault(rack, []).append(broker_id)
    iterators = {rack: iter(sorted(ids)) for rack, ids in by_rack.items()}
    racks = sorted(iterators)
    result: list[int] = []
    rack_index = 0
    while len(result) < len(rack_of):
        nxt = next(iterators[racks[rack_index]], None)
        if nxt is not None:
            result.append(nxt)
        rack_index = (rack_index + 1) % len(racks)
    return result


def _rack_aware(
    n_partitions: int,
    replication_factor: int,
    rack_of: Mapping[int, str],
    fixed_start_index: int,
    start_partition_id: int,
    rand: RandomSource,
) -> Assignment:
    num_racks = len(set(rack_of.values()))
    arranged = rack_alternated_broker_list(rack_of)
    num_brokers = len(arranged)
    start_index = fixed_start_index if fixed_start_index >= 0 else rand(num_brokers)
    current = max(0, start_partition_id)
    next_replica_shift = fixed_start_index if fixed_start_index >= 0 else rand(num_brokers)
    ret: Assignment = {}
    for _ in range(n_partitions):
        if current > 0 and current % num_brokers == 0:
            next_replica_shift += 1
        first = (current + start_index) % num_brokers
        leader = arranged[first]
        replicas = [leader]
        racks_with_replicas = {rack_of[leader]}
        brokers_with_replicas = {leader}
        k = 0
        for _j in range(replication_factor - 1):
            while True:
                broker = arranged[
                    replica_index(first, next_replica_shift * num_racks, k, num_brokers)
                ]
                rack = rack_of[broker]
                k += 1
                # Skip a broker whose rack already has a replica while some rack has none, or
                # that already has a replica while some broker has none.
                if (rack not in racks_with_replicas or len(racks_with_replicas) == num_racks) and (
                    broker not in brokers_with_replicas or len(brokers_with_replicas) == num_brokers
                ):
                    replicas.append(broker)
                    racks_with_replicas.add(rack)
                    brokers_with_replicas.add(broker)
                    break
        ret[current] = replicas
        current += 1
    return ret


def _scala_seq(values: Iterable[int]) -> str:
    return ", ".join(str(v) for v in values)


def validate_topic_create_assignment(assignment: Mapping[int, Sequence[int]]) -> None:
    """The replica-assignment checks of Kafka's ``AdminZkClient.validateTopicCreate`` for a
    CreateTopics request carrying manual assignments (Kafka does not check the brokers exist
    here: "this follows the existing logic in TopicCommand", ``ZkAdminManager.createTopics``).

    Raises ``InvalidReplicaAssignmentError`` with Kafka's messages. The duplicate message renders
    the whole assignment; Kafka prints its Scala map there, here it is ``{p: [r, ...]}``.
    """
    if len({len(r) for r in assignment.values()}) != 1:
        raise InvalidReplicaAssignmentError(
            "All partitions should have the same number of replicas"
        )
    for replicas in assignment.values():
        if len(replicas) != len(set(replicas)):
            rendered = ", ".join(f"{p} -> [{_scala_seq(r)}]" for p, r in sorted(assignment.items()))
            raise InvalidReplicaAssignmentError(
                f"Duplicate replica assignment found: {{{rendered}}}"
            )
    size = len(assignment)
    # Kafka's test: the non-negative keys sum to 0 + 1 + ... + (size - 1).
    if sum(p for p in assignment if p >= 0) != size * (size - 1) // 2:
        raise InvalidReplicaAssignmentError(
            "partitions should be a consecutive 0-based integer sequence"
        )


def _validate_replica_assignment(
    assignment: Mapping[int, Sequence[int]],
    expected_replication_factor: int,
    available_broker_ids: set[int],
) -> None:
    """Kafka's ``AdminZkClient.validateReplicaAssignment`` (CreatePartitions)."""
    for partition_id, replicas in assignment.items():
        if not replicas:
            raise InvalidReplicaAssignmentError(
                f"Cannot have replication factor of 0 for partition id {partition_id}."
            )
        if len(replicas) != len(set(replicas)):
            raise InvalidReplicaAssignmentError(
                "Duplicate brokers not allowed in replica assignment: "
                f"{_scala_seq(replicas)} for partition id {partition_id}."
            )
        if not set(replicas) <= available_broker_ids:
            raise BrokerNotAvailableError(
                f"Some brokers specified for partition id {partition_id} are not available. "
                f"Specified brokers: {_scala_seq(replicas)}, "
                f"available brokers: {_scala_seq(sorted(available_broker_ids))}."
            )
    bad = sorted(
        (p, len(r)) for p, r in assignment.items() if len(r) != expected_replication_factor
    )
    if bad:
        raise InvalidReplicaAssignmentError(
            "Inconsistent replication factor between partitions, "
            f"partition 0 has {expected_replication_factor} while partitions "
            f"[{_scala_seq(p for p, _ in bad)}] have replication factors "
            f"[{_scala_seq(rf for _, rf in bad)}], respectively."
        )


def new_partitions_assignment(
    topic: str,
    existing: Mapping[int, Sequence[int]],
    brokers: Sequence[BrokerMetadata],
    new_count: int,
    manual: Sequence[Sequence[int]] | None = None,
    *,
    rand: RandomSource = _default_rand,
) -> Assignment:
    """The assignment of the partitions CreatePartitions adds (not the existing ones).

    Mirrors ``ZkAdminManager.createPartitions`` (count checks, unknown brokers, assignment
    count) then ``AdminZkClient.createNewPartitionsAssignment``: without a manual assignment,
    ``assignReplicasToBrokers(brokers, added, rf(p0), startIndex, len(existing))`` where
    ``startIndex`` is the position of the first broker whose id is >= partition 0's first
    replica (0 if none). ``fixed_start_index >= 0`` means no random draw: ``rand`` is unused.
    """
    old = len(existing)
    increment = new_count - old
    if increment < 0:
        raise InvalidPartitionsError(
            f"Topic currently has {old} partitions, which is higher than the requested {new_count}."
        )
    if increment == 0:
        raise InvalidPartitionsError(f"Topic already has {old} partitions.")
    broker_ids = {b.id for b in brokers}
    proposed: Assignment | None = None
    if manual is not None:
        # Kafka renders the unknown ids from a Scala Set (hash order; ascending for small ids).
        unknown = sorted({r for replicas in manual for r in replicas} - broker_ids)
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"Unknown broker(s) in replica assignment: {_scala_seq(unknown)}."
            )
        if len(manual) != increment:
            raise InvalidReplicaAssignmentError(
                f"Increasing the number of partitions by {increment} "
                f"but {len(manual)} assignments provided."
            )
        proposed = {old + i: list(replicas) for i, replicas in enumerate(manual)}
    if 0 not in existing:
        raise AdminOperationError(
            f"Unexpected existing replica assignment for topic '{topic}', partition id 0 is "
            f"missing. Assignment: {dict(existing)}"
        )
    partition0 = existing[0]
    if proposed is not None:
        _validate_replica_assignment(proposed, len(partition0), broker_ids)
        return proposed
    start_index = next((i for i, b in enumerate(brokers) if b.id >= partition0[0]), 0)
    return assign_replicas_to_brokers(
        brokers, increment, len(partition0), start_index, old, rand=rand
    )
