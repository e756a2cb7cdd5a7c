"""The broker's readiness check, ``GET /health`` on the metrics listener (issue 21: "says
whether it is registered, caught up and serving"). Kafka has no such endpoint (operators
script it from JMX and ZooKeeper); the three checks are what those scripts look at.

* **registered**: embedded mode, the broker has started. Cluster mode, its ephemeral
  ``/brokers/ids/<id>`` is held (the broker epoch of its current ZooKeeper session is known:
  it is lost when the session expires and comes back when the broker registers again; a
  SUSPENDED connection keeps it, as ZooKeeper keeps the ephemeral until the session
  expires) and it has metadata from the controller (its metadata cache lists this broker
  alive and names a controller, i.e. an UpdateMetadata sent after the registration arrived).
* **caught_up**: every partition this broker hosts as a follower, with a leader, is in the
  ISR (of the metadata cache, which the controller updates after each ISR change). No extra
  grace period: a follower leaves the ISR only after lagging for ``replica.lag.time.max.ms``
  (30 s by default), which already is Kafka's measure of "not caught up", and a restarted
  broker stays not caught up until its leaders take it back, which is when a rolling restart
  may go on to the next broker. A replica being reassigned away (no longer in the replica
  set) is not counted.
* **serving**: every listener's socket server is accepting connections.

The checks read the broker's own state, so a broker resumed after a pause (SIGSTOP, a long
GC-like stall) may answer from the state it had before it until it learns what changed
meanwhile (its session expired, UpdateMetadata with its ISR removal): a paused broker
itself answers nothing, which is what a probe's timeout reports.

200 when all three hold, else 503; the body is JSON either way (``evaluate``), with each
check's ``ok`` and the names of the failing ones. ``HEAD`` answers the status alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

from franz.storage.files import TopicPartition

__all__ = [
    "HEALTH_PATH",
    "MAX_LISTED_PARTITIONS",
    "HealthInputs",
    "evaluate",
    "followers_out_of_isr",
    "gather",
]

HEALTH_PATH: Final = "/health"
#: Out-of-ISR partitions named in the body (the count is always given).
MAX_LISTED_PARTITIONS: Final = 10


@dataclass(frozen=True, slots=True)
class HealthInputs:
    """What the checks read, taken from the broker on its event loop."""

    broker_id: int
    cluster_mode: bool
    started: bool
    #: Cluster mode: the broker epoch of the current registration, -1 without one.
    broker_epoch: int = -1
    #: Cluster mode: the metadata cache lists this broker alive and knows a controller.
    has_metadata: bool = False
    #: ``topic-partition`` of each followed partition out of the ISR.
    out_of_isr: tuple[str, ...] = ()
    #: listener name -> accepting connections.
    listeners: Mapping[str, bool] = field(default_factory=dict)


class _PartitionInfo(Protocol):
    @property
    def leader(self) -> int: ...
    @property
    def isr(self) -> tuple[int, ...]: ...
    @property
    def replicas(self) -> tuple[int, ...]: ...


class _Replica(Protocol):
    @property
    def is_leader(self) -> bool: ...


class MetadataView(Protocol):
    """What is read of ``franz.metadata.cache.MetadataCache``."""

    @property
    def controller_id(self) -> int | None: ...
    def has_alive_broker(self, broker_id: int) -> bool: ...
    def partition_info(self, topic: str, partition: int) -> _PartitionInfo | None: ...


class _Server(Protocol):
    @property
    def accepting(self) -> bool: ...


def followers_out_of_isr(
    broker_id: int,
    replicas: Iterable[tuple[TopicPartition, _Replica]],
    partition_info: Callable[[str, int], _PartitionInfo | None],
) -> tuple[str, ...]:
    """``topic-partition`` of the partitions this broker follows that have a leader and
    are not in the ISR (module docstring), sorted."""
    out: list[tuple[str, int]] = []
    for (topic, partition), replica in replicas:
        if replica.is_leader:
            continue
        info = partition_info(topic, partition)
        if info is None or info.leader < 0 or broker_id not in info.replicas:
            continue
        if broker_id not in info.isr:
            out.append((topic, partition))
    return tuple(f"{t}-{p}" for t, p in sorted(out))


def evaluate(inputs: HealthInputs) -> tuple[int, bytes]:
    """(HTTP status, JSON body) of ``GET /health`` (module docstring)."""
    if inputs.cluster_mode:
        registered = inputs.started and inputs.broker_epoch >= 0 and inputs.has_metadata
        if not inputs.started:
            why = "starting"
        elif inputs.broker_epoch < 0:
            why = f"/brokers/ids/{inputs.broker_id} not held (no ZooKeeper session)"
        elif not inputs.has_metadata:
            why = "no metadata from the controller yet"
        else:
            why = f"/brokers/ids/{inputs.broker_id}, broker epoch {inputs.broker_epoch}"
    else:
        registered = inputs.started
        why = "embedded, started" if inputs.started else "starting"
    caught_up = not inputs.out_of_isr
    serving = bool(inputs.listeners) and all(inputs.listeners.values())
    checks: dict[str, dict[str, object]] = {
        "registered": {"ok": registered, "detail": why},
        "caught_up": {
            "ok": caught_up,
            "out_of_isr": len(inputs.out_of_isr),
            "partitions": list(inputs.out_of_isr[:MAX_LISTED_PARTITIONS]),
        },
        "serving": {"ok": serving, "listeners": dict(inputs.listeners)},
    }
    failing = [name for name, check in checks.items() if not check["ok"]]
    body = {
        "status": "UP" if not failing else "DOWN",
        "broker_id": inputs.broker_id,
        "failing": failing,
        "checks": checks,
    }
    return (200 if not failing else 503), (json.dumps(body) + "\n").encode()


def gather(
    broker_id: int,
    *,
    cluster_mode: bool,
    started: bool,
    broker_epoch: int,
    metadata: MetadataView,
    replicas: Mapping[TopicPartition, _Replica],
    servers: Mapping[str, _Server],
) -> HealthInputs:
    """The checks' inputs from the broker's objects (on its event loop)."""
    return HealthInputs(
        broker_id=broker_id,
        cluster_mode=cluster_mode,
        started=started,
        broker_epoch=broker_epoch,
        has_metadata=metadata.controller_id is not None and metadata.has_alive_broker(broker_id),
        out_of_isr=followers_out_of_isr(broker_id, replicas.items(), metadata.partition_info),
        listeners={name: server.accepting for name, server in servers.items()},
    )
