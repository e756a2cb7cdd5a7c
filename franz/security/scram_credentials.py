"""The broker's SCRAM credential cache (Kafka's ``CredentialCache`` fed by
``UserConfigHandler``/``ScramCredentialUtils``): user -> mechanism -> ``ScramCredential``.

Filled from the users' dynamic configs (``/config/users/<user>`` in ZooKeeper, the embedded
store's ``users`` entities): the ``SCRAM-SHA-256``/``SCRAM-SHA-512`` keys of a user's config
map; other keys (quotas) are not this cache's. ``update_user`` replaces one user's entry from
its whole config map, so a deleted key (``--delete-config SCRAM-SHA-512``) drops the
credential. A value that does not parse is logged (without the value) and skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from franz.security.scram import ScramCredential, ScramMechanism

__all__ = ["ScramCredentialCache", "scram_configs"]

log = logging.getLogger(__name__)


def scram_configs(configs: Mapping[str, str]) -> dict[str, str]:
    """The SCRAM keys of a user's config map."""
    return {k: v for k, v in configs.items() if ScramMechanism.for_name(k) is not None}


class ScramCredentialCache:
    def __init__(self) -> None:
        self._by_user: dict[str, dict[ScramMechanism, ScramCredential]] = {}

    def get(self, mechanism: ScramMechanism, user: str) -> ScramCredential | None:
        return self._by_user.get(user, {}).get(mechanism)

    def users(self) -> list[str]:
        return sorted(self._by_user)

    def update_user(self, user: str, configs: Mapping[str, str]) -> None:
        credentials: dict[ScramMechanism, ScramCredential] = {}
        for key, value in scram_configs(configs).items():
            mechanism = ScramMechanism.for_name(key)
            assert mechanism is not None
            try:
                credentials[mechanism] = ScramCredential.from_config_value(value)
            except ValueError:
                log.error("user %s: the %s credential does not parse; ignored", user, key)
        if credentials:
            self._by_user[user] = credentials
        else:
            self._by_user.pop(user, None)
