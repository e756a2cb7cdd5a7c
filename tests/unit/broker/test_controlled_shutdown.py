"""The broker's controlled-shutdown loop (``franz.broker.controlled_shutdown``) when it cannot
reach a controller: every attempt is spent, with Kafka's log lines, and it gives up. Success
and remaining partitions against real brokers: ``tests/cluster/test_controlled_shutdown.py``."""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest

from franz.broker.controlled_shutdown import ControlledShutdownConfig, controlled_shutdown
from franz.metadata.cache import BrokerEndpoint, MetadataBroker, MetadataCache


def config(max_retries: int = 3) -> ControlledShutdownConfig:
    return ControlledShutdownConfig(
        broker_id=1, max_retries=max_retries, retry_backoff_ms=10, socket_timeout_ms=2000
    )


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "franz.broker"]


def test_no_controller_known_spends_every_attempt_then_gives_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "franz.broker")
    assert not asyncio.run(controlled_shutdown(config(3), MetadataCache(1), 7))
    assert messages(caplog) == [
        "Starting controlled shutdown",
        "No controller present in the metadata cache",
        "Retrying controlled shutdown (2 retries remaining)",
        "No controller present in the metadata cache",
        "Retrying controlled shutdown (1 retries remaining)",
        "No controller present in the metadata cache",
        "Proceeding to do an unclean shutdown as all the controlled shutdown attempts failed",
    ]


def test_an_unreachable_controller_is_an_io_error_retried_then_given_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as s:  # a port nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cache = MetadataCache(1)
    cache.update_metadata(
        controller_id=2,
        live_brokers=[
            MetadataBroker(2, (BrokerEndpoint("127.0.0.1", port, "PLAINTEXT", "PLAINTEXT"),))
        ],
        partition_states=[],
    )
    caplog.set_level(logging.INFO, "franz.broker")
    assert not asyncio.run(controlled_shutdown(config(2), cache, 7))
    logged = messages(caplog)
    errors = [m for m in logged if m.startswith("Error during controlled shutdown")]
    assert len(errors) == 2, logged
    assert "controller.socket.timeout.ms" in errors[0]
    assert "Retrying controlled shutdown (1 retries remaining)" in logged
    assert logged[-1].startswith("Proceeding to do an unclean shutdown")


def test_a_controller_without_an_endpoint_on_the_listener_is_not_asked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = MetadataCache(1)
    cache.update_metadata(controller_id=2, live_brokers=[], partition_states=[])
    caplog.set_level(logging.INFO, "franz.broker")
    assert not asyncio.run(controlled_shutdown(config(1), cache, 7))
    assert (
        "Broker registration for controller 2 is not available in the metadata cache"
        in messages(caplog)
    )
