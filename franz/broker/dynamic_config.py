"""This broker's dynamic configs (Kafka's ``DynamicBrokerConfig``, KIP-226): validated,
persisted in the metadata store, applied live.

``alter`` replaces the dynamic configs of one entity: this broker (resource name its id) or
the cluster-wide default (resource name ``""``). AlterConfigs hands it the request's whole
set, IncrementalAlterConfigs the entity's set after its operations. Checks, all before
anything changes (so ``validate_only`` answers exactly what the change would):

* the resource name (``broker_resource_id``: an integer, this broker's id, or ``""``);
* the names (``franz.config.dynamic.dynamic_config_errors``: dynamic in Kafka, listener
  prefix for SSL stores, per-broker ones not at the default);
* the values, parsed with their keys' types and validators, and the resulting effective
  config as a whole: topic defaults must make a valid ``LogConfig``, the replication
  throttle rates (``franz.config.quota``) must be LONGs >= 0.

Every failure is INVALID_REQUEST with Kafka's ZooKeeper-mode message, "Invalid config value
for resource ConfigResource(type=BROKER, name='0'): <reason>" (``ZkAdminManager`` wraps
``ConfigException`` so), except a value that does not parse: Kafka 3.9.2 answers its
``ConfigException`` alone ("Invalid value lots for configuration message.max.bytes: Not a
number of type INT", the differential test's "invalid broker default")

Then the store is written (durable) and ``reconfigure`` gets the new effective
``BrokerConfig``; the broker pushes it to what reads it (topic defaults of every log,
producer id expiration). At startup ``load`` applies the stored configs; entries that are
no longer valid are dropped with an error logged, as Kafka's ``fromPersistentProps`` does,
so a bad stored value never stops a broker.

Cluster mode (``remote``, Kafka 3.9's ZooKeeper mode): the dynamic configs live in ZooKeeper,
``/config/brokers/<default>`` and ``/config/brokers/<id>`` (``{"version":1,"config":{...}}``),
and ``store`` is this broker's in-memory copy (``TopicMirrorStore``). ``fetch`` fills the
copy at startup, before ``load``. An accepted ``alter`` writes the znode plus a
``/config/changes/config_change_<seq>`` notification (``{"version":2,"entity_path":
"brokers/<entity>"}``, Kafka's ``AdminZkClient.changeBrokerConfig``) in the background;
``alter`` returns that write, the handler awaits it before it answers (a failed write is
the resource's error), and the change is applied here once written. Every broker watches
the notifications (``ClusterTopicAdmin``) and hands the entity's new configs to
``apply_entity``: the default applies everywhere, a per-broker set only on that broker
(Kafka's ``BrokerConfigHandler.processConfigChanges``). The watch starts before ``fetch``
reads the znodes, so no change falls between the two; one that arrives before ``load``
only updates the copy, which ``load`` applies. As in Kafka, a
per-broker alter or describe must reach the broker it names (``broker_resource_id``; the
admin clients send it there), the default may go to any broker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

from franz.broker.configs import ResourceType, broker_resource_id, resource_repr
from franz.config.broker import BrokerConfig
from franz.config.dynamic import dynamic_config_errors
from franz.config.quota import BROKER_QUOTA_CONFIG_KEYS
from franz.errors import InvalidConfigurationError, InvalidRequestError
from franz.metadata.store import DEFAULT_BROKER_ENTITY, AsyncMetadataStore, MetadataStore
from franz.metadata.znodes import ZNodeDecodeError

__all__ = ["DynamicBrokerConfig"]

log = logging.getLogger(__name__)


class DynamicBrokerConfig:
    def __init__(
        self,
        static: BrokerConfig,
        store: MetadataStore,
        broker_id: int,
        reconfigure: Callable[[BrokerConfig], None],
        remote: AsyncMetadataStore | None = None,
    ) -> None:
        self.static = static
        self.store = store
        self.broker_id = broker_id
        self._reconfigure = reconfigure
        #: Cluster mode: ZooKeeper, where the dynamic configs live (module docstring).
        self.remote = remote
        #: The effective config: static under the dynamic layers.
        self.current = static
        self._loaded = False

    async def fetch(self) -> None:
        """Cluster mode, at startup: copy the default's and this broker's dynamic configs
        from ZooKeeper into ``store`` (then ``load`` applies them). A znode that does not
        decode is logged and counts as empty."""
        assert self.remote is not None
        for entity in (DEFAULT_BROKER_ENTITY, str(self.broker_id)):
            try:
                configs = await self.remote.broker_configs(entity)
            except ZNodeDecodeError as exc:
                log.error("dynamic configs of broker entity %s ignored: %s", entity, exc)
                configs = {}
            self.store.set_broker_configs(entity, configs)

    def apply_entity(self, entity: str, configs: Mapping[str, str]) -> None:
        """Cluster mode: ``entity``'s dynamic configs as now stored in ZooKeeper (a change
        notification, or this broker's own write). Another broker's entity is ignored."""
        if entity == DEFAULT_BROKER_ENTITY:
            broker = None
        elif entity == str(self.broker_id):
            broker = self.broker_id
        else:
            return
        self.store.set_broker_configs(entity, dict(configs))
        if not self._loaded:
            return
        usable = self._usable(configs, broker)
        if broker is None:
            new = self.static.with_dynamic(usable, self.current.dynamic_broker)
        else:
            new = self.static.with_dynamic(self.current.dynamic_default, usable)
        if (new.dynamic_default, new.dynamic_broker) == (
            self.current.dynamic_default,
            self.current.dynamic_broker,
        ):
            return
        self._apply(new)
        log.info("dynamic configs of broker entity %s applied: %s", entity, usable or "(none)")

    def load(self) -> None:
        """Apply the stored dynamic configs (after ``store.load()``, before logs open)."""
        self._loaded = True
        default = self._usable(self.store.broker_configs(DEFAULT_BROKER_ENTITY), None)
        mine = self._usable(self.store.broker_configs(str(self.broker_id)), self.broker_id)
        if default or mine:
            self._apply(self.static.with_dynamic(default, mine))
            log.info(
                "dynamic broker configs applied: default %s, broker %d %s",
                sorted(default), self.broker_id, sorted(mine),
            )

    def entity_configs(self, resource_name: str | None) -> dict[str, str]:
        """The dynamic configs stored for a BROKER resource (name checked)."""
        if broker_resource_id(resource_name, self.broker_id, altering=True) is None:
            return dict(self.current.dynamic_default)
        return dict(self.current.dynamic_broker)

    def alter(
        self, resource_name: str | None, configs: Mapping[str, str], *, validate_only: bool
    ) -> Awaitable[None] | None:
        """Replace the dynamic configs of the BROKER resource ``resource_name``. Cluster mode:
        returns the ZooKeeper write, which raises if it fails (module docstring)."""
        broker = broker_resource_id(resource_name, self.broker_id, altering=True)
        prefix = (
            f"Invalid config value for resource "
            f"{resource_repr(ResourceType.BROKER, resource_name)}: "
        )
        message = dynamic_config_errors(configs, per_broker=broker is not None)
        if message is not None:
            raise InvalidRequestError(_as_kafka(prefix, message))
        if broker is None:
            default, mine = dict(configs), self.current.dynamic_broker
        else:
            default, mine = self.current.dynamic_default, dict(configs)
        try:
            new = self.static.with_dynamic(default, mine)
            _check_effective(new)
        except InvalidConfigurationError as exc:
            raise InvalidRequestError(_as_kafka(prefix, str(exc))) from None
        if validate_only:
            return None
        entity = DEFAULT_BROKER_ENTITY if broker is None else str(broker)
        if self.remote is not None:
            return self._write_remote(entity, dict(configs))
        self.store.set_broker_configs(entity, dict(configs))
        self._apply(new)
        log.info("dynamic configs of broker entity %s set: %s", entity, dict(configs) or "(none)")
        return None

    def alter_stored(
        self,
        resource_name: str | None,
        change: Callable[[dict[str, str]], dict[str, str]],
        *,
        validate_only: bool,
    ) -> Awaitable[None]:
        """Cluster mode's IncrementalAlterConfigs: read the entity's configs from ZooKeeper
        (the usable ones, as Kafka's ``fromPersistentProps``), apply ``change`` and ``alter``
        the result. The name is checked at once; the rest raises from the awaitable."""
        remote = self.remote
        assert remote is not None
        broker = broker_resource_id(resource_name, self.broker_id, altering=True)
        entity = DEFAULT_BROKER_ENTITY if broker is None else str(broker)

        async def run() -> None:
            stored = self._usable(await remote.broker_configs(entity), broker)
            write = self.alter(resource_name, change(stored), validate_only=validate_only)
            if write is not None:
                await write

        return asyncio.get_running_loop().create_task(run())

    def _write_remote(self, entity: str, configs: dict[str, str]) -> asyncio.Task[None]:
        """Started at once (not when the handler gets to await it), so the writes of one
        request's resources go out in order."""
        remote = self.remote
        assert remote is not None

        async def write() -> None:
            await remote.set_broker_configs(entity, configs)
            log.info("dynamic configs of broker entity %s written: %s", entity, configs or "(none)")
            self.apply_entity(entity, configs)

        return asyncio.get_running_loop().create_task(write())

    def _apply(self, config: BrokerConfig) -> None:
        self.current = config
        self._reconfigure(config)

    def _usable(self, configs: Mapping[str, str], broker: int | None) -> dict[str, str]:
        usable: dict[str, str] = {}
        for name, value in configs.items():
            message = dynamic_config_errors([name], per_broker=broker is not None)
            if message is None:
                try:
                    _check_effective(self.static.with_dynamic({}, {name: value}))
                except InvalidConfigurationError as exc:
                    message = str(exc)
            if message is not None:
                log.error(
                    "stored dynamic config %s=%s of %s ignored: %s",
                    name, value, "the default" if broker is None else f"broker {broker}", message,
                )
                continue
            usable[name] = value
        return usable


def _check_effective(config: BrokerConfig) -> None:
    """What Franz needs of an effective config (``InvalidConfigurationError`` otherwise): the
    topic defaults make a valid ``LogConfig`` (``compression.type`` one of Kafka's codecs,
    which the log recompresses to); the replication throttle rates are LONGs >= 0 (Kafka's
    ``DynamicConfig.Broker.validate``)."""
    config.log_config()  # parses and validates every topic default
    for layer in (config.dynamic_default, config.dynamic_broker):
        for name, value in layer.items():
            key = BROKER_QUOTA_CONFIG_KEYS.get(name)
            if key is not None:
                key.parse(value)


def _as_kafka(prefix: str, message: str) -> str:
    """Kafka's message for a refused dynamic broker config (module docstring)."""
    return message if message.startswith("Invalid value ") else prefix + message

