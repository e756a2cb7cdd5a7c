"""DescribeLogDirs (35), v1-4: this broker's log dirs and the partitions in each, with their
sizes (Kafka's ``ReplicaManager.describeLogDirs``).

One result per configured log dir (``log.dirs``, absolute paths). An offline dir (an I/O
error took it offline: ``LogManager.offline_dirs``) gets KAFKA_STORAGE_ERROR and no topics;
an online one lists its partitions: ``partition_size`` is the bytes of all its segments
(``Log.size_in_bytes``), ``offset_lag`` is ``max(HW - LEO, 0)``, which is 0 for a leader.
A replica moving to this dir (AlterReplicaLogDirs, ``franz.cluster.alter_log_dirs``) is
listed there too with ``is_future_key`` true and as ``offset_lag`` how far its future log's
end is behind the current log's (Kafka's ``getLogEndOffsetLag``; -1 when the current log is
not online). v4 adds the file system's ``total_bytes`` and ``usable_bytes`` (``statvfs``:
blocks and blocks available to unprivileged users, times the fragment size), -1 for an
offline dir.

``topics`` null describes every partition; otherwise only the named topics' named
partitions (a topic with an empty list: none of them). Topics without a described
partition in a dir are left out of that dir's result, as Kafka 3.9 does.
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from franz.broker.authz import authorize_cluster
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.security.acl import AclOperation
from franz.storage.files import TopicPartition
from franz.storage.log import Log

__all__ = ["handle"]

log = logging.getLogger(__name__)


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        # KafkaApis.handleDescribeLogDirsRequest: no results; the error code from v3.
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "results": [],
        }
    log_manager = ctx.services.log_manager
    wanted: set[TopicPartition] | None = None
    if request.topics is not None:
        wanted = {
            TopicPartition(topic.topic, partition)
            for topic in request.topics
            for partition in topic.partitions
        }
    by_dir: dict[Path, dict[str, list[tuple[int, Log, bool]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    logs = log_manager.logs
    for is_future, entries in ((False, logs.items()), (True, log_manager.futures.items())):
        for tp, partition_log in entries:
            if wanted is None or tp in wanted:
                by_dir[partition_log.dir.parent][tp.topic].append(
                    (tp.partition, partition_log, is_future)
                )
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
                            "offset_lag": _offset_lag(
                                logs.get(TopicPartition(topic, index)), partition_log, is_future
                            ),
                            "is_future_key": is_future,
                        }
                        for index, partition_log, is_future in sorted(
                            partitions, key=lambda p: p[0]
                        )
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


def _offset_lag(current: Log | None, described: Log, is_future: bool) -> int:
    """Kafka's ``getLogEndOffsetLag``: a future replica's end behind the current log's, a
    current replica's HW ahead of its end (never below 0); -1 without an online current
    log (``DescribeLogDirsResponse.INVALID_OFFSET_LAG``)."""
    if current is None or current.offline:
        return -1
    if is_future:
        return current.log_end_offset - described.log_end_offset
    return max(current.high_watermark - described.log_end_offset, 0)


def _offline(path: str) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.KAFKA_STORAGE_ERROR,
        "log_dir": path,
        "topics": [],
        "total_bytes": -1,
        "usable_bytes": -1,
    }
