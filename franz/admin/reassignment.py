"""The pure part of ``franz reassign-partitions`` (Kafka 3.9's ``ReassignPartitionsCommand``):
the JSON files, the proposed assignment, the throttle values and the texts the tool prints.

Vocabulary (Kafka's):

* a *plan* is the ``--reassignment-json-file``: ``{"version": 1, "partitions": [{"topic":
  "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "/data/b"]}]}``; ``log_dirs``
  is optional, as long as ``replicas`` when given, and names the log directory each replica
  should end in ("any" for the broker's choice). A replica is a ``TopicPartitionReplica``
  ``(topic, partition, broker)``, printed ``t-0-2``.
* an *ongoing reassignment* (``PartitionReassignment``, ListPartitionReassignments) has the
  partition's full replica set during the move and the replicas being added and removed.
* a *partition move* (``PartitionMove``) is a move's ``sources`` (replicas that have the data)
  and ``destinations`` (replicas that have to copy it): ``calculateProposedMoveMap``.
* the *throttles*: ``leader.replication.throttled.replicas`` of a topic lists
  ``partition:broker`` for every source of every moving partition, and
  ``follower.replication.throttled.replicas`` every destination (Kafka's
  ``calculateLeaderThrottles`` / ``calculateFollowerThrottles``; each list is a Java
  ``TreeSet<String>``, so sorted as strings: ``10:1`` before ``2:1``); the brokers named by
  any move get ``leader.replication.throttled.rate`` and
  ``follower.replication.throttled.rate`` (``--throttle``), and the brokers of log-dir moves
  ``replica.alter.log.dirs.io.max.bytes.per.second`` (``--replica-alter-log-dirs-throttle``).

Partitions are printed sorted by topic then partition (``compareTopicPartitions``), replicas
of log-dir moves by broker, topic, partition (``compareTopicPartitionReplicas``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from franz.admin.client import tp_name
from franz.admin.options import ToolError

__all__ = [
    "ANY_LOG_DIR",
    "BROKER_THROTTLES",
    "TOPIC_THROTTLES",
    "Assignment",
    "LogDirMove",
    "Ongoing",
    "PartitionMove",
    "PartitionState",
    "Plan",
    "assign_replicas_to_brokers",
    "execute_checks",
    "follower_throttles",
    "format_reassignment_json",
    "leader_throttles",
    "log_dir_move_lines",
    "parse_broker_list",
    "parse_reassignment_json",
    "parse_topics_json",
    "partition_state_lines",
    "proposed_move_map",
    "reassigning_brokers",
    "reassignments_text",
    "replica_name",
]

ANY_LOG_DIR: Final = "any"
LEADER_RATE: Final = "leader.replication.throttled.rate"
FOLLOWER_RATE: Final = "follower.replication.throttled.rate"
LOG_DIR_RATE: Final = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_REPLICAS: Final = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS: Final = "follower.replication.throttled.replicas"
#: What ``--verify`` and ``--cancel`` clear (Kafka's BROKER_LEVEL_THROTTLES and
#: TOPIC_LEVEL_THROTTLES).
BROKER_THROTTLES: Final = (LEADER_RATE, FOLLOWER_RATE, LOG_DIR_RATE)
TOPIC_THROTTLES: Final = (LEADER_REPLICAS, FOLLOWER_REPLICAS)

TopicPartition = tuple[str, int]
Replica = tuple[str, int, int]  # TopicPartitionReplica: topic, partition, broker
Assignment = dict[TopicPartition, list[int]]
MoveMap = dict[str, dict[int, "PartitionMove"]]


def replica_name(replica: Replica) -> str:
    """``TopicPartitionReplica.toString``: ``topic-partition-broker``."""
    return "{}-{}-{}".format(*replica)


def _replica_order(replica: Replica) -> tuple[int, str, int]:
    topic, partition, broker = replica
    return broker, topic, partition


# -- JSON ---------------------------------------------------------------------------------------


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ToolError("The input string is not a valid JSON") from None


def _version(data: Any) -> None:
    if not isinstance(data, dict):
        raise ToolError("The input string is not a JSON object")
    version = data.get("version", 1)
    if version != 1:
        raise ToolError(f"Not supported version field value {version}")


def _get(entry: Any, name: str) -> Any:
    if not isinstance(entry, dict) or name not in entry:
        raise ToolError(f"No such field exists: `{name}` in {json.dumps(entry)}")
    return entry[name]


def _duplicates(items: Iterable[Any]) -> list[Any]:
    seen: set[Any] = set()
    dups: list[Any] = []
    for item in items:
        if item in seen and item not in dups:
            dups.append(item)
        seen.add(item)
    return dups


def _java_set(items: Iterable[Any]) -> str:
    """``AbstractCollection.toString``: ``[a, b]``."""
    return "[" + ", ".join(map(str, items)) + "]"


def parse_topics_json(text: str) -> list[str]:
    """``--topics-to-move-json-file``: the topics, duplicates refused (Kafka's messages)."""
    data = _json(text)
    _version(data)
    topics = [str(_get(entry, "topic")) for entry in data.get("topics") or []]
    dups = _duplicates(topics)
    if dups:
        raise ToolError(f"List of topics to reassign contains duplicate entries: {_java_set(dups)}")
    return topics


def parse_broker_list(text: str) -> list[int]:
    try:
        brokers = [int(b) for b in text.split(",")]
    except ValueError:
        raise ToolError(f"--broker-list expects comma separated broker ids, got {text!r}") from None
    dups = _duplicates(brokers)
    if dups:
        raise ToolError(f"Broker list contains duplicate entries: {_java_set(dups)}")
    return brokers


@dataclass(frozen=True)
class Plan:
    """A parsed ``--reassignment-json-file`` (Kafka's ``parsePartitionReassignmentData``):
    the partitions in file order, duplicates kept for ``execute_checks`` to refuse, and the
    target log dir of every replica whose ``log_dirs`` entry is not "any"."""

    parts: list[tuple[TopicPartition, list[int]]]
    log_dirs: dict[Replica, str] = field(default_factory=dict)

    def targets(self) -> Assignment:
        """The plan as a map (a duplicated partition: its last entry, as a ``HashMap``)."""
        return dict(self.parts)


def parse_reassignment_json(text: str) -> Plan:
    """``--reassignment-json-file`` for --execute, --verify and --cancel."""
    data = _json(text)
    _version(data)
    parts: list[tuple[TopicPartition, list[int]]] = []
    log_dirs: dict[Replica, str] = {}
    for entry in data.get("partitions") or []:
        topic, partition = _get(entry, "topic"), _get(entry, "partition")
        if not isinstance(topic, str) or not isinstance(partition, int):
            raise ToolError(
                f"topic must be a string and partition an integer in {json.dumps(entry)}"
            )
        replicas = _get(entry, "replicas")
        if not isinstance(replicas, list) or not all(isinstance(r, int) for r in replicas):
            raise ToolError(f"replicas of {tp_name(topic, partition)} must be a list of ids")
        dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
            raise ToolError(f"log_dirs of {tp_name(topic, partition)} must be a list of strings")
        if len(dirs) != len(replicas):
            raise ToolError(
                f"Size of replicas list {_java_set(replicas)} is different from size of log "
                f"dirs list {_java_set(dirs)} for partition {tp_name(topic, partition)}"
            )
        parts.append(((topic, partition), list(replicas)))
        for broker, log_dir in zip(replicas, dirs, strict=True):
            if log_dir != ANY_LOG_DIR:
                log_dirs[(topic, partition, broker)] = log_dir
    return Plan(parts, log_dirs)


def execute_checks(plan: Plan) -> Assignment:
    """Kafka's ``parseExecuteAssignmentArgs``: a non-empty plan, no empty replica list, no
    partition twice, no broker twice in one partition (Kafka's messages)."""
    parts = plan.parts
    if not parts:
        raise ToolError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in parts):
        raise ToolError("Partition replica list cannot be empty")
    dup_parts = _duplicates(key for key, _ in parts)
    if dup_parts:
        raise ToolError(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(tp_name(*key) for key in dup_parts)
        )
    dup_replicas = [
        f"{tp_name(*key)} contains multiple entries for {','.join(map(str, dups))}"
        for key, replicas in parts
        if (dups := _duplicates(replicas))
    ]
    if dup_replicas:
        raise ToolError(
            "Partition replica lists may not contain duplicate entries: " + ". ".join(dup_replicas)
        )
    return dict(parts)


def format_reassignment_json(
    assignment: Mapping[TopicPartition, list[int]],
    log_dirs: Mapping[Replica, str] | None = None,
) -> str:
    """Kafka's ``formatAsReassignmentJson``: partitions sorted by topic then partition."""
    dirs = log_dirs or {}
    partitions = [
        {
            "topic": topic,
            "partition": partition,
            "replicas": assignment[(topic, partition)],
            "log_dirs": [
                dirs.get((topic, partition, r), ANY_LOG_DIR) for r in assignment[(topic, partition)]
            ],
        }
        for topic, partition in sorted(assignment)
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


# -- --generate --------------------------------------------------------------------------------


def assign_replicas_to_brokers(
    brokers: list[int],
    partitions: int,
    replication_factor: int,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Kafka's rack-unaware ``AdminUtils.assignReplicasToBrokers``: partition p's first
    replica is broker ``(p + start) % n``, the others follow with a shift that grows every
    ``n`` partitions; ``start`` and the first shift are random."""
    if partitions <= 0:
        raise ToolError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise ToolError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise ToolError(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}."
        )
    rng = rng or random.Random()
    ids = sorted(brokers)
    n = len(ids)
    start = rng.randrange(n)
    shift = rng.randrange(n)
    out: dict[int, list[int]] = {}
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [ids[first]]
        for j in range(replication_factor - 1):
            offset = 1 + (shift + j) % (n - 1)
            replicas.append(ids[(first + offset) % n])
        out[p] = replicas
    return out


# -- moves and throttles -------------------------------------------------------------------------


@dataclass(frozen=True)
class Ongoing:
    """An ongoing reassignment as ListPartitionReassignments reports it."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


@dataclass(frozen=True)
class PartitionMove:
    sources: frozenset[int]
    destinations: frozenset[int]


def proposed_move_map(
    ongoing: Mapping[TopicPartition, Ongoing],
    proposed: Mapping[TopicPartition, list[int]],
    current: Mapping[TopicPartition, list[int]],
) -> MoveMap:
    """Kafka's ``calculateProposedMoveMap``: every ongoing reassignment (its sources are its
    replicas less those being added, its destinations those being added), then each proposed
    partition: sources from its ongoing move if any, else its current replicas; destinations
    the proposed replicas that are not sources."""
    moves: MoveMap = {}
    for (topic, partition), reassignment in ongoing.items():
        adding = set(reassignment.adding)
        moves.setdefault(topic, {})[partition] = PartitionMove(
            frozenset(set(reassignment.replicas) - adding), frozenset(adding)
        )
    for (topic, partition), replicas in proposed.items():
        part_moves = moves.setdefault(topic, {})
        if partition in part_moves:
            sources = part_moves[partition].sources
        elif (topic, partition) in current:
            sources = frozenset(current[(topic, partition)])
        else:
            raise ToolError(
                f"Trying to reassign a topic partition {tp_name(topic, partition)} with 0 replicas"
            )
        part_moves[partition] = PartitionMove(sources, frozenset(set(replicas) - sources))
    return moves


def leader_throttles(moves: MoveMap) -> dict[str, str]:
    """``leader.replication.throttled.replicas`` per topic: ``partition:source`` entries."""
    return {
        topic: ",".join(sorted({f"{p}:{s}" for p, move in parts.items() for s in move.sources}))
        for topic, parts in moves.items()
    }


def follower_throttles(moves: MoveMap) -> dict[str, str]:
    """``follower.replication.throttled.replicas`` per topic: ``partition:destination``."""
    return {
        topic: ",".join(
            sorted(
                {
                    f"{p}:{d}"
                    for p, move in parts.items()
                    for d in move.destinations
                    if d not in move.sources
                }
            )
        )
        for topic, parts in moves.items()
    }


def reassigning_brokers(moves: MoveMap) -> list[int]:
    """Kafka's ``calculateReassigningBrokers``: every source and destination, sorted."""
    return sorted(
        {b for parts in moves.values() for m in parts.values() for b in m.sources | m.destinations}
    )


# -- texts --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionState:
    """Kafka's ``PartitionReassignmentState``: ``done`` when no reassignment is ongoing."""

    current: list[int]
    target: list[int]
    done: bool


def partition_state_lines(states: Mapping[TopicPartition, PartitionState]) -> list[str]:
    """Kafka's ``partitionReassignmentStatesToString``."""
    lines = ["Status of partition reassignment:"]
    for key in sorted(states):
        state, name = states[key], tp_name(*key)
        if not state.done:
            lines.append(f"Reassignment of partition {name} is still in progress.")
        elif state.current == state.target:
            lines.append(f"Reassignment of partition {name} is completed.")
        else:
            lines.append(
                f"There is no active reassignment of partition {name}, but replica set is "
                f"{','.join(map(str, state.current))} rather than "
                f"{','.join(map(str, state.target))}."
            )
    return lines


@dataclass(frozen=True)
class LogDirMove:
    """Kafka's ``LogDirMoveState`` of one replica: ``kind`` is ``missing_replica`` (the
    broker did not answer for it), ``missing_log_dir`` (in no live log dir), ``active`` (a
    future replica is being copied to ``future_dir``), ``cancelled`` (no future replica and
    not in ``target_dir``) or ``completed``; the first three are not done."""

    kind: str
    target_dir: str
    current_dir: str | None = None
    future_dir: str | None = None

    @property
    def done(self) -> bool:
        return self.kind in ("cancelled", "completed")


def log_dir_move_lines(states: Mapping[Replica, LogDirMove]) -> list[str]:
    """Kafka's ``replicaMoveStatesToString``."""
    lines = []
    for replica in sorted(states, key=_replica_order):
        state = states[replica]
        topic, partition, broker = replica
        part = f"Partition {topic}-{partition}"
        if state.kind == "missing_log_dir":
            lines.append(
                f"{part} is not found in any live log dir on broker {broker}. There is likely "
                "an offline log directory on the broker."
            )
        elif state.kind == "missing_replica":
            lines.append(f"{part} cannot be found in any live log directory on broker {broker}.")
        elif state.kind == "active":
            if state.target_dir == state.future_dir:
                lines.append(
                    f"Reassignment of replica {replica_name(replica)} is still in progress."
                )
            else:
                lines.append(
                    f"{part} on broker {broker} is being moved to log dir {state.future_dir} "
                    f"instead of {state.target_dir}."
                )
        elif state.kind == "cancelled":
            lines.append(
                f"{part} on broker {broker} is not being moved from log dir {state.current_dir} "
                f"to {state.target_dir}."
            )
        else:
            lines.append(f"Reassignment of replica {replica_name(replica)} completed successfully.")
    return lines


def reassignments_text(ongoing: Mapping[TopicPartition, Ongoing]) -> str:
    """Kafka's ``curReassignmentsToString`` (``--list``)."""
    lines = []
    for key in sorted(ongoing):
        r = ongoing[key]
        line = f"{tp_name(*key)}: replicas: {','.join(map(str, r.replicas))}."
        if r.adding:
            line += f" adding: {','.join(map(str, r.adding))}."
        if r.removing:
            line += f" removing: {','.join(map(str, r.removing))}."
        lines.append(line)
    if not lines:
        return "No partition reassignments found."
    return "Current partition reassignments:\n" + "\n".join(lines)


def sorted_names(keys: Iterable[TopicPartition]) -> str:
    """Partitions sorted by topic then partition, comma-separated."""
    return ",".join(tp_name(*key) for key in sorted(keys))


def replica_order(replicas: Iterable[Replica]) -> list[Replica]:
    return sorted(replicas, key=_replica_order)
