"""What partitions cost on disk: allocated blocks (``st_blocks``), not apparent sizes.

Indexes are preallocated sparse (Kafka's ``setLength``), so an empty partition costs its
small files only: a few KiB, where ``posix_fallocate`` made it 20 MiB (two 10 MiB indexes,
``segment.index.bytes``) and 2,500 empty partitions filled an 80 GB disk.
"""

from __future__ import annotations

import os
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.clients import consume_with

PARTITIONS = 200
#: Per empty partition: its directory and two small files (partition.metadata,
#: leader-epoch-checkpoint) are 12 KiB on ext4; 64 KiB leaves room for other file systems.
MAX_BYTES_PER_EMPTY_PARTITION = 64 * 1024
#: 10,000 partitions on one broker must fit in well under this, plus their data.
TEN_THOUSAND_BUDGET = 1 << 30


def _allocated_bytes(root: Path) -> int:
    total = 0
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            total += os.lstat(os.path.join(directory, name)).st_blocks * 512
    return total


def test_empty_partitions_cost_a_few_kib_of_disk(broker_factory, tmp_path):
    broker = broker_factory(tmp_path / "b").start()
    log_dir = Path(broker.overrides["log.dirs"])
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    baseline = _allocated_bytes(log_dir)
    topics = [NewTopic(f"empty-{i:03d}", num_partitions=10) for i in range(PARTITIONS // 10)]
    for future in admin.create_topics(topics, request_timeout=60).values():
        future.result(60)
    index = log_dir / "empty-000-0" / "00000000000000000000.index"
    assert index.stat().st_size == 10 << 20  # preallocated to segment.index.bytes ...
    assert index.stat().st_blocks == 0  # ... with no block behind it

    per_partition = (_allocated_bytes(log_dir) - baseline) / PARTITIONS
    assert per_partition < MAX_BYTES_PER_EMPTY_PARTITION, f"{per_partition:.0f} B/partition"
    assert 10_000 * per_partition < TEN_THOUSAND_BUDGET / 4

    # Written partitions stay readable and take blocks for their data and index entries
    # only: 200 records of 1 KiB into one partition add well under 1 MiB.
    before = _allocated_bytes(log_dir)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(200):
        producer.produce("empty-000", value=b"%04d" % i + b"x" * 1020, partition=0)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert _allocated_bytes(log_dir) - before < 1 << 20
    consumed = consume_with("confluent-kafka", broker.bootstrap, "empty-000", [0], 200)
    assert [r.value[:4] for r in consumed] == [b"%04d" % i for i in range(200)]
    assert broker.stop() == 0
    # A clean shutdown trims every index to its entries, as Kafka does.
    assert (log_dir / "empty-001-3" / "00000000000000000000.index").stat().st_size == 0
