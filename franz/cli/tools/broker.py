"""Run a Franz broker in the foreground (Kafka's ``kafka-server-start.sh``).

    franz broker [server.properties] [--override key=value]...

With no arguments: broker.id=0, log.dirs=./franz-data, embedded single-node metadata.
Config keys and defaults are Kafka's. SIGTERM or SIGINT shuts down cleanly: logs are
flushed, checkpoints written and the clean-shutdown marker left, so the next start does
not re-validate the logs.

This release runs the storage engine (log loading and crash recovery, retention, flushes,
checkpoints); the Kafka protocol listener is the next piece of work.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from pathlib import Path

from franz.clock import SystemClock
from franz.config.broker import BrokerConfig
from franz.config.properties import load_properties
from franz.errors import InvalidConfigurationError
from franz.storage.log_manager import LogManager

__all__ = ["add_arguments", "run"]

log = logging.getLogger("franz.broker")

#: How often periodic storage work is checked; each task keeps its own Kafka interval.
_TICK_SECONDS = 1.0


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
    log_manager = LogManager(
        config.log_dirs,
        default_config=config.log_config(),
        clock=SystemClock(),
        broker_id=config.broker_id,
        retention_check_interval_ms=config.get("log.retention.check.interval.ms"),
        flush_check_interval_ms=config.get("log.flush.scheduler.interval.ms"),
        recovery_point_checkpoint_interval_ms=config.get("log.flush.offset.checkpoint.interval.ms"),
        log_start_offset_checkpoint_interval_ms=config.get(
            "log.flush.start.offset.checkpoint.interval.ms"
        ),
        high_watermark_checkpoint_interval_ms=config.get(
            "replica.high.watermark.checkpoint.interval.ms"
        ),
    )
    log_manager.startup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.info(
        "franz broker %d started: log dirs %s, %d partition(s)",
        config.broker_id,
        ", ".join(str(d) for d in log_manager.log_dirs),
        len(log_manager.logs),
    )
    try:
        while not stop.is_set():
            log_manager.tick()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), _TICK_SECONDS)
    finally:
        log_manager.shutdown()
        log.info("franz broker %d stopped", config.broker_id)
    return 0
