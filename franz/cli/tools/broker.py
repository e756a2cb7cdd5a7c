"""Run a Franz broker in the foreground (Kafka's ``kafka-server-start.sh``).

    franz broker [server.properties] [--override key=value]...

With no arguments: broker.id=0, log.dirs=./franz-data, embedded single-node metadata.
Config keys and defaults are Kafka's. SIGTERM or SIGINT shuts down cleanly: logs are
flushed, checkpoints written and the clean-shutdown marker left, so the next start does
not re-validate the logs.

The broker speaks the Kafka protocol on its listeners (``listeners``, default
PLAINTEXT://127.0.0.1:9092; port 0 binds an ephemeral port; the start line prints every
listener as bound). Several listeners, TLS (SSL, SASL_SSL) and the inter-broker listener
take Kafka's keys: ``listener.security.protocol.map``, ``advertised.listeners``,
``inter.broker.listener.name``, ``ssl.keystore.*`` (PEM), ``ssl.truststore.*``,
``ssl.client.auth``, each ``ssl.*`` also as ``listener.name.<listener>.ssl.*``
(``franz.network.listeners``, ``franz.security.tls``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from pathlib import Path

from franz.broker.broker import Broker
from franz.config.broker import BrokerConfig
from franz.config.properties import load_properties
from franz.errors import InvalidConfigurationError

__all__ = ["add_arguments", "run"]

log = logging.getLogger("franz.broker")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", help="a server.properties file")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="key=value",
        help="override a property of the config file (repeatable)",
    )
    parser.add_argument(
        "--log-level", default="INFO", help="logging level (DEBUG, INFO, WARNING, ERROR)"
    )


def load_config(args: argparse.Namespace) -> BrokerConfig:
    values: dict[str, str] = {}
    if args.config:
        values.update(load_properties(Path(args.config)))
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidConfigurationError(f"--override expects key=value, got {item!r}")
        values[key.strip()] = value
    return BrokerConfig(values)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    config = load_config(args)
    return asyncio.run(_serve(config))


async def _serve(config: BrokerConfig) -> int:
    broker = Broker(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await broker.start()
    try:
        await stop.wait()
    finally:
        await broker.shutdown()
    return 0
