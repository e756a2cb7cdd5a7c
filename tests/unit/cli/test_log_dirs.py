"""``franz log-dirs``' JSON: Kafka 3.9's ``LogDirsCommand.formatAsJson`` as Jackson writes its
hash maps (key orders, partitions in ``HashMap<TopicPartition, _>`` order, error classes)."""

from __future__ import annotations

import json

from franz.admin.cluster_wire import LogDirInfo, ReplicaInfo
from franz.cli.tools.log_dirs import format_log_dirs
from franz.errors import ErrorCode


def test_json_keys_partitions_and_errors_in_kafkas_order() -> None:
    replicas = [
        (("t", p), ReplicaInfo(size=10 * p, offset_lag=0, is_future=False)) for p in range(12)
    ] + [(("u", 0), ReplicaInfo(size=5, offset_lag=3, is_future=True))]
    text = format_log_dirs(
        {
            1: {"/d1": LogDirInfo(ErrorCode.NONE, replicas)},
            2: {"/d2": LogDirInfo(ErrorCode.KAFKA_STORAGE_ERROR, [])},
        },
        [1, 2],
        {"t"},
    )
    assert text.startswith('{"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"t-')
    assert text.endswith(
        '{"broker":2,"logDirs":[{"partitions":[],'
        '"error":"org.apache.kafka.common.errors.KafkaStorageException","logDir":"/d2"}]}],'
        '"version":1}'
    )
    report = json.loads(text)
    (first,) = report["brokers"][0]["logDirs"]
    assert first["error"] is None
    names = [p["partition"] for p in first["partitions"]]
    # TopicPartition.hashCode of t-p is 1077 + 31p: bucket (5 - p) mod 16 of the 16-slot
    # table the 12 kept partitions fill (u-0 is filtered out by the topic list).
    assert names == [
        "t-5", "t-4", "t-3", "t-2", "t-1", "t-0", "t-11", "t-10", "t-9", "t-8", "t-7", "t-6",
    ]  # fmt: skip
    assert first["partitions"][5] == {"partition": "t-0", "size": 0, "offsetLag": 0,
                                      "isFuture": False}  # fmt: skip
