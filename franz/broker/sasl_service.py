"""The broker's SASL wiring: the listener's ``SaslGate``, the SCRAM credential cache and
where the credentials are stored.

* Embedded mode: the metadata store's ``users`` entities (``LocalMetadataStore``); an
  AlterUserScramCredentials updates the cache at once.
* Cluster mode: ``/config/users/<sanitized user>`` (Kafka's ``Sanitizer``: URL encoding with
  ``*`` as ``%2A``, space as ``%20``). Every broker loads them all at start and re-reads a user
  on each ``/config/changes`` notification ``users/<user>`` (Kafka's ``UserConfigHandler``
  updating its ``CredentialCache``), so a credential created on one broker authenticates on
  the others within a notification's round trip.

Keys (Kafka's): ``sasl.enabled.mechanisms`` and ``listener.name.<l>.sasl.enabled.mechanisms``,
``listener.name.<l>.plain.sasl.jaas.config``, ``connections.max.reauth.ms`` (and
``listener.name.<l>.<mechanism lower>.connections.max.reauth.ms``),
``connection.failed.authentication.delay.ms``.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from franz.broker.sasl_gate import (
    SASL_PROTOCOLS,
    SUPPORTED_MECHANISMS,
    SaslGate,
    SaslListenerConfig,
)
from franz.broker.scram_admin import UserConfigStore
from franz.errors import InvalidConfigurationError
from franz.network.client import SaslClientCredentials
from franz.security.jaas import parse_jaas_config
from franz.security.scram_credentials import ScramCredentialCache, scram_configs

if TYPE_CHECKING:
    from franz.metadata.kafka_zk_client import KafkaZkClient
    from franz.metadata.local import LocalMetadataStore

__all__ = ["BrokerSasl", "desanitize", "sanitize"]

log = logging.getLogger(__name__)


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize`` (``URLEncoder`` with ``*`` and space escaped)."""
    return urllib.parse.quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    return urllib.parse.unquote(name)


class LocalUserConfigs:
    """``UserConfigStore`` over the embedded metadata store."""

    def __init__(
        self, store: LocalMetadataStore, on_change: Callable[[str, dict[str, str]], None]
    ) -> None:
        self._store = store
        self._on_change = on_change

    async def user_configs(self, user: str) -> dict[str, str]:
        return self._store.entity_configs("users", user)

    async def all_user_configs(self) -> dict[str, dict[str, str]]:
        return self._store.all_entity_configs("users")

    async def update_user_configs(
        self, user: str, update: Callable[[dict[str, str]], dict[str, str]]
    ) -> dict[str, str]:
        configs = update(self._store.entity_configs("users", user))
        self._store.set_entity_configs("users", user, configs)
        self._on_change(user, configs)
        return configs


class ZkUserConfigs:
    """``UserConfigStore`` over ``/config/users`` (names sanitized as Kafka's)."""

    def __init__(self, zk: KafkaZkClient) -> None:
        self._zk = zk

    async def user_configs(self, user: str) -> dict[str, str]:
        return await self._zk.get_entity_configs("users", sanitize(user))

    async def all_user_configs(self) -> dict[str, dict[str, str]]:
        return {
            desanitize(name): configs
            for name, configs in (await self._zk.all_entity_configs("users")).items()
            if "/" not in name
        }

    async def update_user_configs(
        self, user: str, update: Callable[[dict[str, str]], dict[str, str]]
    ) -> dict[str, str]:
        return await self._zk.update_entity_configs("users", sanitize(user), update)


def inter_broker_credentials(
    listener_name: str, get: Callable[[str], Any]
) -> SaslClientCredentials | None:
    """``sasl.mechanism.inter.broker.protocol`` with the ``username``/``password`` options
    of the listener's JAAS config for that mechanism
    (``listener.name.<l>.<mechanism lower>.sasl.jaas.config``), as Kafka's
    ``SaslChannelBuilder`` takes them for its client side; None when unset (a broker that
    never connects to another, or GSSAPI, which Franz does not serve: refused at start in
    cluster mode by ``require_inter_broker``)."""
    mechanism = str(get("sasl.mechanism.inter.broker.protocol") or "GSSAPI")
    text = get(f"listener.name.{listener_name.lower()}.{mechanism.lower()}.sasl.jaas.config")
    if mechanism not in SUPPORTED_MECHANISMS or not text:
        return None
    try:
        options = parse_jaas_config(str(text)).options
    except ValueError as exc:
        raise InvalidConfigurationError(
            f"listener.name.{listener_name.lower()}.{mechanism.lower()}.sasl.jaas.config: {exc}"
        ) from exc
    if "username" not in options or "password" not in options:
        return None
    return SaslClientCredentials(mechanism, options["username"], options["password"])


class BrokerSasl:
    """The SASL side of every SASL listener (``listeners`` entries mapped to SASL_PLAINTEXT or
    SASL_SSL), the SCRAM credential cache, and this broker's own SASL identity when the
    inter-broker listener is a SASL one."""

    def __init__(
        self,
        listeners: list[tuple[str, str]],
        inter_broker_listener: str,
        get: Callable[[str], Any],
    ) -> None:
        self.credentials = ScramCredentialCache()
        configs = {
            name: SaslListenerConfig.from_config(name, get)
            for name, protocol in listeners
            if protocol in SASL_PROTOCOLS
        }
        delay = get("connection.failed.authentication.delay.ms")
        self.gate: SaslGate | None = (
            SaslGate(configs, self.credentials, int(100 if delay is None else delay))
            if configs
            else None
        )
        self.users: UserConfigStore | None = None
        self._inter_broker_listener = inter_broker_listener
        self._inter_broker_is_sasl = inter_broker_listener in configs
        #: The broker's own identity towards the other brokers (inter-broker SASL).
        self.inter_broker: SaslClientCredentials | None = None
        if self._inter_broker_is_sasl:
            self.inter_broker = inter_broker_credentials(inter_broker_listener, get)

    def require_inter_broker(self, get: Callable[[str], Any]) -> None:
        """Cluster mode with a SASL inter-broker listener: the broker must be able to
        authenticate to the others (Kafka fails the start the same way when it cannot build
        its client side)."""
        if self._inter_broker_is_sasl and self.inter_broker is None:
            name = self._inter_broker_listener
            mechanism = get("sasl.mechanism.inter.broker.protocol") or "GSSAPI"
            raise InvalidConfigurationError(
                f"sasl.mechanism.inter.broker.protocol={mechanism} on SASL listener "
                f"{name}: Franz needs PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 and "
                f"username/password in listener.name.{name.lower()}."
                f"{str(mechanism).lower()}.sasl.jaas.config"
            )

    def use_local(self, store: LocalMetadataStore) -> None:
        self.users = LocalUserConfigs(store, self.credentials.update_user)

    def use_zookeeper(self, zk: KafkaZkClient) -> None:
        self.users = ZkUserConfigs(zk)

    async def load(self) -> None:
        """Fill the credential cache from every user's stored configs."""
        assert self.users is not None
        for user, configs in (await self.users.all_user_configs()).items():
            self.credentials.update_user(user, configs)
        log.debug("SCRAM credentials loaded for %d user(s)", len(self.credentials.users()))

    def on_user_configs(self, sanitized_user: str, configs: dict[str, str]) -> None:
        """A ``/config/changes`` notification for ``users/<user>`` (a ``<user>/clients/..``
        child entity holds quotas only)."""
        if "/" in sanitized_user:
            return
        self.credentials.update_user(desanitize(sanitized_user), scram_configs(configs))
