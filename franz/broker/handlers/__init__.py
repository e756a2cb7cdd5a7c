"""One module per API, each with ``handle(ctx, request)``; ``HANDLERS`` maps API keys to them.

An API appears in ApiVersions exactly when it is registered here (and listed in
``franz.protocol.api_keys.SUPPORTED_APIS`` with its versions).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.broker.handlers import (
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_log_dirs,
    fetch,
    find_coordinator,
    incremental_alter_configs,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
)
from franz.protocol.api_keys import ApiKey

__all__ = ["HANDLERS", "Handler"]

Handler = Callable[[RequestContext, Any], HandlerResult | Awaitable[HandlerResult]]

HANDLERS: dict[int, Handler] = {
    ApiKey.PRODUCE: produce.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.LIST_OFFSETS: list_offsets.handle,
    ApiKey.METADATA: metadata.handle,
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.INIT_PRODUCER_ID: init_producer_id.handle,
    ApiKey.CREATE_TOPICS: create_topics.handle,
    ApiKey.DELETE_TOPICS: delete_topics.handle,
    ApiKey.DELETE_RECORDS: delete_records.handle,
    ApiKey.CREATE_PARTITIONS: create_partitions.handle,
    ApiKey.DESCRIBE_CONFIGS: describe_configs.handle,
    ApiKey.ALTER_CONFIGS: alter_configs.handle,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs.handle,
    ApiKey.DESCRIBE_CLUSTER: describe_cluster.handle,
    ApiKey.DESCRIBE_LOG_DIRS: describe_log_dirs.handle,
    ApiKey.FIND_COORDINATOR: find_coordinator.handle,
}
