"""``franz producer-perf-test``'s flags and config (``franz.cli.tools.producer_perf_test``)
without a broker: Kafka 3.9's rules for turning transactions on (ProducerPerformance: only a
positive --transaction-duration-ms does, and then --transactional-id, default
``performance-producer-default-transactional-id``, is the transactional.id)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from franz.admin.options import ToolError
from franz.cli.tools.producer_perf_test import (
    DEFAULT_TRANSACTIONAL_ID,
    add_arguments,
    apply_transactions,
    producer_config,
)

BASE = ["--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1"]


def config_of(*argv: str) -> dict[str, Any]:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return producer_config(parser.parse_args([*BASE, *argv]))


def test_defaults_are_kafkas() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(BASE)
    assert args.transactional_id == DEFAULT_TRANSACTIONAL_ID
    assert DEFAULT_TRANSACTIONAL_ID == "performance-producer-default-transactional-id"
    assert args.transaction_duration_ms == 0


def test_a_positive_duration_turns_transactions_on_with_the_default_id() -> None:
    config = config_of("--bootstrap-server", "h:1", "--transaction-duration-ms", "100")
    assert config["transactional.id"] == DEFAULT_TRANSACTIONAL_ID


def test_the_flag_overrides_the_props_and_the_file(tmp_path: Path) -> None:
    props = tmp_path / "p.properties"
    props.write_text("bootstrap.servers=h:1\ntransactional.id=from-file\n")
    config = config_of(
        "--producer.config", str(props), "--producer-props", "transactional.id=from-props",
        "--transactional-id", "from-flag", "--transaction-duration-ms", "5",
    )  # fmt: skip
    assert config["transactional.id"] == "from-flag"
    # Kafka 3.9 puts --transactional-id's default over a configured id as well
    config = config_of(
        "--producer.config", str(props), "--transaction-duration-ms", "5"
    )  # fmt: skip
    assert config["transactional.id"] == DEFAULT_TRANSACTIONAL_ID


@pytest.mark.parametrize("duration", ["0", "-5"])
def test_an_id_alone_or_a_non_positive_duration_leaves_transactions_off(duration: str) -> None:
    config = config_of(
        "--bootstrap-server", "h:1", "--transactional-id", "x",
        "--transaction-duration-ms", duration,
    )  # fmt: skip
    assert "transactional.id" not in config


def test_a_configured_id_with_transactions_off_is_refused() -> None:
    with pytest.raises(ToolError, match=r"transactional\.id=p is set but transactions are off"):
        config_of("--producer-props", "bootstrap.servers=h:1", "transactional.id=p")


def test_apply_transactions_returns_whether_they_are_on() -> None:
    config: dict[str, Any] = {}
    assert apply_transactions(config, "id", 1) is True
    assert config == {"transactional.id": "id"}
    empty: dict[str, Any] = {}
    assert apply_transactions(empty, "id", 0) is False
    assert empty == {}
