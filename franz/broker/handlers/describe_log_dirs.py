"""DescribeLogDirs (35), v1-4: this broker's log dirs and the partitions in each, with their
sizes (Kafka's ``ReplicaManager.describeLogDirs``).

One result per configured log dir (``log.dirs``, absolute paths). An offline dir (an I/O
error took it offline: ``LogManager.offline_dirs``) gets KAFKA_STORAGE_ERROR and no topics;
an online one lists its partitions: ``partition_size`` is the bytes of all its segments
(``Log.size_in_bytes``), ``offset_lag`` is ``max(HW - LEO, 0)``, which is 0 for a leader,
``is_future_key`` is false (Franz never moves replicas between dirs). v4 adds the file
system's ``total_bytes`` and ``usable_bytes`` (``statvfs``: blocks and blocks available to
unprivileged users, times the fragment size), -1 for an offline dir.

``topics`` null describes every partition; otherwise only the named topics' named
partitions (a topic with an empty list: none of them). Topics without a described
partition in a dir are left out of that dir's result (Kafka lists them with an empty
partition list).
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.storage.files import TopicPartition
from franz.storage.log import Log

__all__ = ["handle"]

log = logging.getLogger(__name__)


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    log_manager = ctx.services.log_manager
    wanted: set[TopicPartition] | None = None
    if request.topics is not None:
        wanted = {
            TopicPartition(topic.topic, partition)
            for topic in request.topics
            for partition in topic.partitions
        }
    by_dir: dict[Path, dict[str, list[tuple[int, Log]]]] = defaultdict(lambda: defaultdict(list))
    for tp, partition_log in log_manager.logs.items():
        if wanted is None or tp in wanted:
            by_dir[partition_log.dir.parent][tp.topic].append((tp.partition, partition_log))
    results: list[dict[str, Any]] = []
    for directory in log_manager.log_dirs:
        path = os.path.abspath(directory)
        if directory in log_manager.offline_dirs:
            results.append(_offline(path))
            continue
        try:
            stats = os.statvfs(directory)
        except OSError as exc:
            log.warning("unable to describe log dir %s: %s", path, exc)
            results.append(_offline(path))
            continue
        topics = []
        for topic, partitions in sorted(by_dir[directory].items()):
            topics.append(
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": index,
                            "partition_size": partition_log.size_in_bytes,
                            "offset_lag": max(
                                partition_log.high_watermark - partition_log.log_end_offset, 0
                            ),
                            "is_future_key": False,
                        }
                        for index, partition_log in sorted(partitions, key=lambda p: p[0])
                    ],
                }
            )
        results.append(
            {
                "error_code": ErrorCode.NONE,
                "log_dir": path,
                "topics": topics,
                "total_bytes": stats.f_blocks * stats.f_frsize,
                "usable_bytes": stats.f_bavail * stats.f_frsize,
            }
        )
    return {"throttle_time": 0, "error_code": ErrorCode.NONE, "results": results}


def _offline(path: str) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.KAFKA_STORAGE_ERROR,
        "log_dir": path,
        "topics": [],
        "total_bytes": -1,
        "usable_bytes": -1,
    }
