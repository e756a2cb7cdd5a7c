"""MemoryPool and ConnectionQuotas: Kafka's request memory pool and connection quotas."""

from __future__ import annotations

import pytest

from franz.errors import InvalidConfigurationError
from franz.network.limits import ConnectionQuotas, MemoryPool, parse_per_ip_overrides


def test_unbounded_pool_never_runs_out() -> None:
    for size in (-1, 0):
        pool = MemoryPool(size)
        assert not pool.bounded
        assert pool.try_allocate(10**12)
        assert not pool.is_out_of_memory


def test_pool_admits_while_any_memory_is_left_and_may_overshoot_by_one_request() -> None:
    pool = MemoryPool(100)
    assert pool.try_allocate(60)
    assert pool.try_allocate(60)  # 40 left: admitted, charged whole (non-strict, as Kafka)
    assert (pool.used, pool.is_out_of_memory) == (120, True)
    assert not pool.try_allocate(1)
    pool.release(60)
    assert not pool.is_out_of_memory
    assert pool.try_allocate(1000)
    assert pool.used == 1060


def test_pool_of_exactly_its_size_is_out_of_memory() -> None:
    pool = MemoryPool(100)
    assert pool.try_allocate(100)
    assert pool.is_out_of_memory
    assert not pool.try_allocate(1)
    pool.release(100)
    assert pool.used == 0


def test_per_ip_limit_refuses_without_counting() -> None:
    quotas = ConnectionQuotas(max_per_ip=2)
    assert quotas.inc("10.0.0.1") and quotas.inc("10.0.0.1")
    assert not quotas.inc("10.0.0.1")
    assert (quotas.count("10.0.0.1"), quotas.total) == (2, 2)
    assert quotas.inc("10.0.0.2")
    quotas.dec("10.0.0.1")
    assert quotas.inc("10.0.0.1")
    assert quotas.total == 3


def test_overrides_win_over_the_default_limit() -> None:
    quotas = ConnectionQuotas(max_per_ip=0, overrides={"127.0.0.1": 1})
    assert not quotas.inc("10.0.0.1")
    assert quotas.inc("127.0.0.1")
    assert not quotas.inc("127.0.0.1")


def test_zero_per_ip_needs_overrides() -> None:
    with pytest.raises(
        InvalidConfigurationError, match=r"only if max\.connections\.per\.ip\.overrides"
    ):
        ConnectionQuotas(max_per_ip=0)


def test_slot_available_below_max_connections() -> None:
    quotas = ConnectionQuotas(max_connections=2)
    assert quotas.inc("a") and quotas.slot_available()
    assert quotas.inc("b") and not quotas.slot_available()
    quotas.dec("a")
    assert quotas.slot_available()
    quotas.dec("unknown")  # never below zero
    quotas.dec("b")
    assert quotas.total == 0


def test_parse_overrides_as_kafka_parse_csv_map() -> None:
    assert parse_per_ip_overrides("") == {}
    assert parse_per_ip_overrides(" 127.0.0.1:200 , 10.0.0.1:0 ") == {
        "127.0.0.1": 200,
        "10.0.0.1": 0,
    }
    assert parse_per_ip_overrides("::1:5,[fe80::1]:6") == {"::1": 5, "fe80::1": 6}
    assert parse_per_ip_overrides("localhost:7")["127.0.0.1"] == 7


@pytest.mark.parametrize("text", ["127.0.0.1", "127.0.0.1:x", ":5", "127.0.0.1:-1"])
def test_parse_overrides_refuses_malformed_entries(text: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=r"max\.connections\.per\.ip\.overrides"):
        parse_per_ip_overrides(text)
