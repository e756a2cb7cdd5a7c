"""Moving replicas between a broker's log directories (KIP-113), as Kafka 3.9's
``ReassignPartitionsCommand`` does for ``log_dirs`` entries other than "any".

* ``log_dir_moves``: each replica's ``LogDirMove`` from DescribeLogDirs of its partitions on
  its broker (Kafka's ``describeReplicaLogDirs`` then ``findLogDirMoveStates``): the dir
  holding the replica is its current dir, a future replica (``is_future_key``) is a move in
  progress; a replica in no dir is ``missing_log_dir``.
* ``start_log_dir_moves``: AlterReplicaLogDirs to each broker until every replica's move
  started (Kafka's ``executeMoves``): REPLICA_NOT_AVAILABLE means the replica is not on the
  broker yet (a reassignment is still bringing it) and is asked again every 100 ms until
  ``timeout_ms``; another error fails ("Failed to alter dir for t-0-1").

Both need the brokers to serve the API (DescribeLogDirs 35, AlterReplicaLogDirs 34):
``cluster_wire.NotServed`` otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from franz.admin.cluster_wire import ClusterClient
from franz.admin.options import ToolError
from franz.admin.reassignment import LogDirMove, Replica, replica_name, replica_order
from franz.errors import ErrorCode

__all__ = ["TerseTimeout", "log_dir_moves", "start_log_dir_moves"]


class TerseTimeout(ToolError):
    """Moves that did not start within the timeout (Kafka prints the message alone)."""


def _by_broker(replicas: Mapping[Replica, str]) -> dict[int, dict[tuple[str, int], str]]:
    out: dict[int, dict[tuple[str, int], str]] = {}
    for (topic, partition, broker), log_dir in replicas.items():
        out.setdefault(broker, {})[(topic, partition)] = log_dir
    return out


def log_dir_moves(
    client: ClusterClient, targets: Mapping[Replica, str]
) -> dict[Replica, LogDirMove]:
    """The state of each replica's move to its target log dir."""
    states: dict[Replica, LogDirMove] = {}
    for broker, parts in _by_broker(targets).items():
        topics: dict[str, list[int]] = {}
        for topic, partition in parts:
            topics.setdefault(topic, []).append(partition)
        current: dict[tuple[str, int], str] = {}
        future: dict[tuple[str, int], str] = {}
        for log_dir, info in client.describe_log_dirs(broker, topics).items():
            for key, info_of_replica in info.replicas:
                (future if info_of_replica.is_future else current)[key] = log_dir
        for key, target in parts.items():
            replica = (key[0], key[1], broker)
            if key not in current:
                states[replica] = LogDirMove("missing_log_dir", target)
            elif key in future:
                states[replica] = LogDirMove("active", target, current[key], future[key])
            elif current[key] == target:
                states[replica] = LogDirMove("completed", target, current[key])
            else:
                states[replica] = LogDirMove("cancelled", target, current[key])
    return states


def start_log_dir_moves(
    client: ClusterClient,
    moves: Mapping[Replica, str],
    timeout_ms: int,
    report: Callable[[str], None],
) -> None:
    """Start every move; ``report`` gets Kafka's line for each one started."""
    pending = dict(moves)
    start = time.monotonic()
    while True:
        completed: list[Replica] = []
        for broker, parts in _by_broker(pending).items():
            answers = client.alter_replica_log_dirs(broker, parts)
            for (topic, partition), _dir in parts.items():
                replica = (topic, partition, broker)
                code = answers.get((topic, partition))
                if code == ErrorCode.NONE:
                    completed.append(replica)
                elif code != ErrorCode.REPLICA_NOT_AVAILABLE:
                    raise ToolError(f"Failed to alter dir for {replica_name(replica)}")
        for replica in replica_order(completed):
            topic, partition, broker = replica
            report(
                f"Successfully started moving log directory to {pending[replica]} for replica "
                f"{topic}-{partition} with broker {broker} "
            )
        for replica in completed:
            del pending[replica]
        if not pending:
            return
        if time.monotonic() >= start + timeout_ms / 1000:
            names = ",".join(replica_name(r) for r in replica_order(pending))
            raise TerseTimeout(
                f"Timed out before log directory move{'' if len(pending) == 1 else 's'} could "
                f"be started for: {names}"
            )
        time.sleep(0.1)
