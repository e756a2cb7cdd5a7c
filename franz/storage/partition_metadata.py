"""``partition.metadata``: the topic id a partition directory belongs to (KIP-516).

Format (Kafka's ``PartitionMetadataFile``)::

    version: 0
    topic_id: <22-character base64 Kafka Uuid>

It lets a broker tell a re-created topic's partition apart from a stale directory of a
deleted topic with the same name.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from franz.protocol.kafka_uuid import uuid_from_str, uuid_to_str

__all__ = ["PARTITION_METADATA_FILE", "read_partition_metadata", "write_partition_metadata"]

PARTITION_METADATA_FILE = "partition.metadata"


def write_partition_metadata(partition_dir: Path, topic_id: uuid.UUID) -> None:
    path = partition_dir / PARTITION_METADATA_FILE
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(f"version: 0\ntopic_id: {uuid_to_str(topic_id)}")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_partition_metadata(partition_dir: Path) -> uuid.UUID | None:
    """The topic id, or None if the file is absent; ValueError if malformed."""
    path = partition_dir / PARTITION_METADATA_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    fields = dict(
        (k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in text.splitlines())
    )
    if fields.get("version") != "0" or "topic_id" not in fields:
        raise ValueError(f"malformed {path}: {text!r}")
    return uuid_from_str(fields["topic_id"])
