"""A broker's client quotas (Kafka's ``QuotaManagers.produce`` / ``.fetch`` / ``.request``
with ``ClientIdConfigHandler`` and ``UserConfigHandler``): the configs, where they come
from, and what the request path asks.

Config keys (Kafka 3.9's ``QuotaConfigs``), on user, client-id and (user, client-id)
entities (``franz.security.client_quota`` for the precedence)::

    producer_byte_rate        LONG    bytes/s of Produce requests
    consumer_byte_rate        LONG    bytes/s of Fetch responses to consumers
    request_percentage        DOUBLE  % of one request thread (time in the handlers)
    controller_mutation_rate  DOUBLE  stored and described; not enforced (Franz has no
                                      CreateTopics/DeleteTopics/CreatePartitions throttling)

Each change of an entity sets or removes its quota in all three managers, as Kafka's config
handlers do (a key absent from the entity's configs removes that type's quota).

Sources: at startup ``load`` reads every entity (``ClientQuotaStore.all_entity_configs``);
in cluster mode every broker then applies each ``/config/changes`` notification whose
``entity_path`` starts with ``users/`` or ``clients/`` (``on_change``, called by
``ClusterTopicAdmin``), including the ones its own AlterClientQuotas wrote; in embedded
mode AlterClientQuotas applies the entity itself after the store's write.

The request path (the dispatcher for Produce bytes and request time, the Fetch handler for
Fetch bytes): ``enabled`` is one attribute read, false until a quota was ever configured,
so a broker without quotas pays one truth test per request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Final

from franz.metadata.client_quota_store import Changes, ClientQuotaStore
from franz.security.client_quota import ClientQuotaManager, QuotaEntity

__all__ = [
    "CONSUMER_BYTE_RATE",
    "CONTROLLER_MUTATION_RATE",
    "PRODUCER_BYTE_RATE",
    "QUOTA_CONFIG_TYPES",
    "REQUEST_PERCENTAGE",
    "ClientQuotas",
]

log = logging.getLogger(__name__)

PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"
CONTROLLER_MUTATION_RATE: Final = "controller_mutation_rate"

#: ``QuotaConfigs`` key -> its ``ConfigDef.Type`` ("LONG" or "DOUBLE").
QUOTA_CONFIG_TYPES: Final[Mapping[str, str]] = {
    PRODUCER_BYTE_RATE: "LONG",
    CONSUMER_BYTE_RATE: "LONG",
    REQUEST_PERCENTAGE: "DOUBLE",
    CONTROLLER_MUTATION_RATE: "DOUBLE",
}


def _bound(configs: Mapping[str, str], key: str) -> float | None:
    value = configs.get(key)
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        log.error("client quota %s=%r is not a number; ignored", key, value)
        return None


class ClientQuotas:
    """The three client quota managers and their store (module docstring)."""

    def __init__(
        self, store: ClientQuotaStore, *, num_samples: int = 11, window_seconds: int = 1
    ) -> None:
        self.store = store
        self.produce = ClientQuotaManager(num_samples, window_seconds)
        self.fetch = ClientQuotaManager(num_samples, window_seconds)
        #: ``ClientRequestQuotaManager``: throttle times capped at one window.
        self.request = ClientQuotaManager(
            num_samples, window_seconds, max_throttle_ms=window_seconds * 1000
        )
        #: Some client quota was ever configured (any type): the request path's first test.
        self.enabled = False

    @staticmethod
    def now_ms() -> int:
        """The quota clock (Kafka's ``time.milliseconds``; monotonic here)."""
        return time.monotonic_ns() // 1_000_000

    def apply(self, entity: QuotaEntity, configs: Mapping[str, str]) -> None:
        """The entity's configs changed (Kafka's ``ClientIdConfigHandler`` /
        ``UserConfigHandler.processConfigChanges``)."""
        self.produce.update_quota(entity, _bound(configs, PRODUCER_BYTE_RATE))
        self.fetch.update_quota(entity, _bound(configs, CONSUMER_BYTE_RATE))
        self.request.update_quota(entity, _bound(configs, REQUEST_PERCENTAGE))
        self.enabled = True
        log.info("client quotas of %s: %s", entity.path, dict(configs))

    async def load(self) -> None:
        """Apply every stored entity (startup)."""
        for entity, configs in (await self.store.all_entity_configs()).items():
            self.apply(entity, configs)

    async def on_change(self, entity_path: str) -> None:
        """A ``/config/changes`` notification named ``entity_path`` (``users/...`` or
        ``clients/...``): read the entity again and apply it."""
        try:
            entity = QuotaEntity.from_path(entity_path)
        except ValueError:
            log.error("config change for %r skipped: not a client quota entity", entity_path)
            return
        self.apply(entity, await self.store.entity_configs(entity))

    async def alter(self, entity: QuotaEntity, changes: Changes, *, apply_now: bool) -> None:
        """Write ``changes``; ``apply_now`` (embedded mode) applies them here at once,
        cluster mode waits for the change notification like every other broker."""
        await self.store.alter(entity, changes)
        if apply_now:
            self.apply(entity, await self.store.entity_configs(entity))
