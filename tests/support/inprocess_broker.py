"""A real Franz broker served from a thread of the test process, for tests that change its
cluster state in process while clients talk to it over TCP.

Until cluster mode's startup lands, leadership changes reach a broker only as the
controller's LeaderAndIsr and UpdateMetadata would deliver them: ``ReplicaManager.
become_leader_or_follower`` and ``MetadataCache.update_metadata``. ``call`` runs such a
function on the broker's event loop (the only thread that may touch its state) and returns
its result.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from franz.broker.broker import Broker
from franz.config.broker import BrokerConfig
from franz.metadata.cache import BrokerEndpoint, MetadataBroker

__all__ = ["OTHER_BROKER", "InProcessBroker", "add_other_broker"]

#: A second live broker of the cluster as the controller's UpdateMetadata would name it (id 1,
#: rack ``r1``): leadership moves to it in tests; nothing listens on its endpoint.
OTHER_BROKER = MetadataBroker(1, (BrokerEndpoint("127.0.0.1", 19093),), rack="r1")


def add_other_broker(broker: Broker) -> None:
    """UpdateMetadata: ``OTHER_BROKER`` joins the live brokers (run it with ``call``)."""
    cache = broker.metadata_cache
    brokers = {b.id: b for b in cache.alive_brokers()} | {OTHER_BROKER.id: OTHER_BROKER}
    cache.update_metadata(controller_id=0, live_brokers=brokers.values(), partition_states=[])


T = TypeVar("T")


class InProcessBroker:
    def __init__(self, data_dir: Path, overrides: dict[str, str] | None = None) -> None:
        self.config = BrokerConfig(
            {
                "log.dirs": str(data_dir),
                "listeners": "PLAINTEXT://127.0.0.1:0",
                **(overrides or {}),
            }
        )
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.broker: Broker | None = None

    def start(self) -> InProcessBroker:
        self._thread.start()
        self.broker = self.call(lambda: Broker(self.config))
        self._run(self.broker.start())
        return self

    @property
    def bootstrap(self) -> str:
        assert self.broker is not None
        host, port = self.broker.advertised_address
        return f"{host}:{port}"

    def call(self, fn: Callable[[], T], timeout: float = 30.0) -> T:
        """Run ``fn`` on the broker's event loop; its result."""

        async def run() -> T:
            return fn()

        return self._run(run(), timeout)

    def _run(self, coro: Any, timeout: float = 30.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if self.broker is not None:
            self._run(self.broker.shutdown())
            self.broker = None
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
