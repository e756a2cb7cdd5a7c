"""RefusalLog: INFO the first time per (client id, host, kind), DEBUG afterwards, bounded."""

from __future__ import annotations

import logging

import pytest

from franz.broker.refusals import RefusalLog


def _levels(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.levelname for r in caplog.records if r.name == "franz.broker.refusals"]


def test_first_refusal_per_client_and_kind_is_info_then_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="franz.broker.refusals")
    refusals = RefusalLog()
    assert refusals.refused("app", "10.0.0.1", "transactions", "FindCoordinator")
    assert not refusals.refused("app", "10.0.0.1", "transactions", "InitProducerId")
    assert refusals.refused("app", "10.0.0.1", "ListOffsets v0", "not supported")
    assert refusals.refused("app", "10.0.0.2", "transactions", "FindCoordinator")
    assert refusals.refused("other", "10.0.0.1", "transactions", "FindCoordinator")
    assert _levels(caplog) == ["INFO", "DEBUG", "INFO", "INFO", "INFO"]
    assert "refused transactions to client 'app' at 10.0.0.1: FindCoordinator" in caplog.text


def test_the_set_of_clients_told_is_bounded_least_recent_first() -> None:
    refusals = RefusalLog(capacity=2)
    assert refusals.refused("a", "h", "k", "r")
    assert refusals.refused("b", "h", "k", "r")
    assert not refusals.refused("a", "h", "k", "r")  # a is now the most recent
    assert refusals.refused("c", "h", "k", "r")  # evicts b
    assert len(refusals._seen) == 2
    assert not refusals.refused("a", "h", "k", "r")
    assert refusals.refused("b", "h", "k", "r")


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError):
        RefusalLog(capacity=0)
