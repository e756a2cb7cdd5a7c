"""The readiness check's decision (``franz.metrics.health``): each check alone failing gives
503 and names it; the followed partitions out of the ISR as the metadata cache has them."""

from __future__ import annotations

import json
from dataclasses import dataclass

from franz.metrics.health import HealthInputs, evaluate, followers_out_of_isr, gather
from franz.storage.files import TopicPartition

UP = HealthInputs(
    broker_id=2,
    cluster_mode=True,
    started=True,
    broker_epoch=77,
    has_metadata=True,
    listeners={"PLAINTEXT": True, "INTERNAL": True},
)


def _report(inputs: HealthInputs) -> tuple[int, dict[str, object]]:
    status, body = evaluate(inputs)
    assert body.endswith(b"\n")
    return status, json.loads(body)


def test_all_checks_hold() -> None:
    status, report = _report(UP)
    assert status == 200
    assert report == {
        "status": "UP",
        "broker_id": 2,
        "failing": [],
        "checks": {
            "registered": {"ok": True, "detail": "/brokers/ids/2, broker epoch 77"},
            "caught_up": {"ok": True, "out_of_isr": 0, "partitions": []},
            "serving": {"ok": True, "listeners": {"PLAINTEXT": True, "INTERNAL": True}},
        },
    }


def _failing(**changes: object) -> tuple[int, list[str], dict[str, dict[str, object]]]:
    fields = {name: getattr(UP, name) for name in HealthInputs.__slots__}
    fields.update(changes)
    status, report = _report(HealthInputs(**fields))
    assert report["status"] == ("UP" if status == 200 else "DOWN")
    return status, report["failing"], report["checks"]  # type: ignore[return-value]


def test_each_failing_check_is_named() -> None:
    status, failing, checks = _failing(broker_epoch=-1)
    assert (status, failing) == (503, ["registered"])
    assert checks["registered"]["detail"] == "/brokers/ids/2 not held (no ZooKeeper session)"
    status, failing, checks = _failing(has_metadata=False)
    assert (status, failing) == (503, ["registered"])
    assert checks["registered"]["detail"] == "no metadata from the controller yet"
    status, failing, checks = _failing(started=False, listeners={})
    assert (status, failing) == (503, ["registered", "serving"])
    assert checks["registered"]["detail"] == "starting"
    status, failing, _ = _failing(listeners={"PLAINTEXT": True, "INTERNAL": False})
    assert (status, failing) == (503, ["serving"])
    many = tuple(f"t-{p}" for p in range(12))
    status, failing, checks = _failing(out_of_isr=many)
    assert (status, failing) == (503, ["caught_up"])
    assert checks["caught_up"] == {"ok": False, "out_of_isr": 12, "partitions": list(many[:10])}


def test_embedded_is_registered_once_started() -> None:
    embedded = HealthInputs(broker_id=0, cluster_mode=False, started=True, listeners={"P": True})
    assert evaluate(embedded)[0] == 200
    starting = HealthInputs(broker_id=0, cluster_mode=False, started=False, listeners={"P": True})
    assert _report(starting)[1]["failing"] == ["registered"]


@dataclass
class Info:
    leader: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


@dataclass
class Replica:
    is_leader: bool


@dataclass
class Server:
    accepting: bool


@dataclass
class Metadata:
    controller_id: int | None
    alive: tuple[int, ...]
    infos: dict[tuple[str, int], Info]

    def has_alive_broker(self, broker_id: int) -> bool:
        return broker_id in self.alive

    def partition_info(self, topic: str, partition: int) -> Info | None:
        return self.infos.get((topic, partition))


def test_followers_out_of_the_isr() -> None:
    infos = {
        ("a", 0): Info(1, (1, 2), (1, 2, 3)),  # followed, in the ISR
        ("a", 1): Info(1, (1,), (1, 2, 3)),  # followed, out of the ISR
        ("b", 0): Info(2, (2,), (2, 3)),  # led here (the replica says so)
        ("c", 0): Info(-1, (1,), (1, 2)),  # no leader: nothing to catch up with
        ("d", 0): Info(1, (1,), (1, 3)),  # being reassigned away from 2
        # ("e", 0): no metadata yet
    }
    replicas = {
        TopicPartition(t, p): Replica(t == "b")
        for t, p in [("a", 0), ("a", 1), ("b", 0), ("c", 0), ("d", 0), ("e", 0)]
    }
    metadata = Metadata(1, (1, 2, 3), infos)
    assert followers_out_of_isr(2, replicas.items(), metadata.partition_info) == ("a-1",)
    inputs = gather(
        2,
        cluster_mode=True,
        started=True,
        broker_epoch=5,
        metadata=metadata,
        replicas=replicas,
        servers={"PLAINTEXT": Server(True)},
    )
    assert inputs == HealthInputs(2, True, True, 5, True, ("a-1",), {"PLAINTEXT": True})
    no_controller = Metadata(None, (1, 2, 3), infos)
    unlisted = Metadata(1, (1, 3), infos)
    for metadata in (no_controller, unlisted):
        gathered = gather(
            2,
            cluster_mode=True,
            started=True,
            broker_epoch=5,
            metadata=metadata,
            replicas={},
            servers={},
        )
        assert gathered.has_metadata is False
