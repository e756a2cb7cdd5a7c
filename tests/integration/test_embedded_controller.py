"""The embedded single-node mode's controller (``franz.controller.shell.local``) over the
local metadata store: partition states in ``franz-metadata.json``, a data dir written before
they were stored, leader epochs across restarts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from franz.metadata.local import METADATA_FILE
from tests.support.broker import BrokerProcess
from tests.support.wire import WireClient, batch, create_topics, fetch_all, metadata, produce


def _leaders(bootstrap: str, topic: str) -> list[tuple[int, int, int, list[int]]]:
    """``(partition, leader, leader epoch, isr)`` of ``topic`` from Metadata v12."""
    with WireClient.connect(bootstrap) as client:
        [answer] = metadata(client, [topic]).topics
    assert answer.error_code == 0, answer
    return sorted(
        (p.partition_index, p.leader_id, p.leader_epoch, list(p.isr_nodes))
        for p in answer.partitions
    )


def test_a_data_dir_written_before_partition_states_were_stored_starts_and_serves(
    tmp_path: Path, broker_factory: type[BrokerProcess]
) -> None:
    broker = broker_factory(tmp_path / "b").start()
    with WireClient.connect(broker.bootstrap) as client:
        [created] = create_topics(client, {"old": 2}, configs={"retention.ms": "86400000"}).topics
        assert created.error_code == 0, created
        for partition in (0, 1):
            answer = produce(client, "old", partition, batch((b"k", f"v{partition}".encode())))
            assert answer.error_code == 0, answer
    assert _leaders(broker.bootstrap, "old") == [(0, 0, 0, [0]), (1, 0, 0, [0])]
    assert broker.stop() == 0

    # Today's file without the controller's keys: what Franz wrote before they existed.
    path = Path(broker.overrides["log.dirs"]) / METADATA_FILE
    data: dict[str, Any] = json.loads(path.read_text())
    assert data["partition_states"]["old"]["0"]["leader_epoch"] == 0
    del data["partition_states"], data["controller_epoch"]
    assert set(data) == {"version", "next_producer_id", "topics"}
    path.write_text(json.dumps(data))

    broker.start()
    assert _leaders(broker.bootstrap, "old") == [(0, 0, 0, [0]), (1, 0, 0, [0])]
    with WireClient.connect(broker.bootstrap) as client:
        for partition in (0, 1):
            records = fetch_all(client, "old", partition)
            assert [r.value for r in records] == [f"v{partition}".encode()]
    assert broker.stop() == 0
    # The controller recorded the states it elected: leader 0, epoch 0, as Kafka's
    # NewPartition -> OnlinePartition writes them.
    stored = json.loads(path.read_text())
    assert stored["topics"]["old"]["configs"] == {"retention.ms": "86400000"}
    assert stored["partition_states"]["old"] == {
        str(p): {
            "controller_epoch": stored["controller_epoch"],
            "isr": [0],
            "leader": 0,
            "leader_epoch": 0,
            "partition_epoch": 0,
        }
        for p in (0, 1)
    }

    # And a restart keeps leader epoch 0: the sole live replica is already the leader.
    broker.start()
    assert _leaders(broker.bootstrap, "old") == [(0, 0, 0, [0]), (1, 0, 0, [0])]
    assert broker.stop() == 0
