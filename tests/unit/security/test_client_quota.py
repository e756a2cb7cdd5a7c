"""Kafka's ClientQuotaManager arithmetic and precedence (franz.security.client_quota)."""

from __future__ import annotations

import pytest

from franz.security.client_quota import (
    DEFAULT_ENTITY,
    ClientQuotaManager,
    QuotaEntity,
    QuotaRate,
    desanitize,
    sanitize,
    throttle_time_ms,
)

D = DEFAULT_ENTITY

#: Kafka's eight levels, most specific first, for user "u" and client id "c".
LEVELS = [
    QuotaEntity("u", "c"),
    QuotaEntity("u", D),
    QuotaEntity("u", None),
    QuotaEntity(D, "c"),
    QuotaEntity(D, D),
    QuotaEntity(D, None),
    QuotaEntity(None, "c"),
    QuotaEntity(None, D),
]


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_most_specific_level_wins(level: int) -> None:
    manager = ClientQuotaManager()
    for i, entity in enumerate(LEVELS[level:], start=level):
        manager.update_quota(entity, 1000.0 * (i + 1))
    assert manager.quota("u", "c") == 1000.0 * (level + 1)


def test_precedence_levels_in_kafkas_order_from_least_specific() -> None:
    manager = ClientQuotaManager()
    for i in reversed(range(len(LEVELS))):
        manager.update_quota(LEVELS[i], float(i + 1))
        assert manager.quota("u", "c") == float(i + 1)


def test_no_quota_is_unbounded_and_not_enabled() -> None:
    manager = ClientQuotaManager()
    assert not manager.enabled
    assert manager.quota("u", "c") is None
    assert manager.record("u", "c", 10**9, 0) == 0


def test_other_client_quota_leaves_this_one_unbounded() -> None:
    manager = ClientQuotaManager()
    manager.update_quota(QuotaEntity(None, "other"), 100.0)
    assert manager.enabled
    assert manager.quota("u", "c") is None
    assert manager.record("u", "c", 10**9, 0) == 0


def test_removal_keeps_quotas_enabled_as_kafka() -> None:
    manager = ClientQuotaManager()
    manager.update_quota(QuotaEntity(None, "c"), 100.0)
    manager.update_quota(QuotaEntity(None, "c"), None)
    assert manager.enabled
    assert manager.quota("u", "c") is None


def test_metric_tags_share_a_user_quota_across_client_ids() -> None:
    manager = ClientQuotaManager()
    manager.update_quota(QuotaEntity("u", None), 1000.0)
    assert manager.metric_tags("u", "a") == manager.metric_tags("u", "b") == ("u", "")
    # 10 s minimum window: 10,000 bytes fit; both client ids draw on one rate.
    assert manager.record("u", "a", 6000, 0) == 0
    assert manager.record("u", "b", 6000, 0) > 0


def test_client_default_quota_is_per_client_id() -> None:
    manager = ClientQuotaManager()
    manager.update_quota(QuotaEntity(None, D), 1000.0)
    assert manager.metric_tags("u", "a") == ("", "a")
    assert manager.record("u", "a", 9000, 0) == 0
    assert manager.record("u", "b", 9000, 0) == 0


def test_multi_level_tags_follow_the_matching_level() -> None:
    manager = ClientQuotaManager()
    manager.update_quota(QuotaEntity("u", None), 10.0)
    manager.update_quota(QuotaEntity(None, "c"), 20.0)
    assert manager.metric_tags("u", "c") == ("u", "")
    assert manager.metric_tags("v", "c") == ("", "c")
    assert manager.quota("v", "c") == 20.0


def test_changing_a_bound_applies_to_existing_sensor() -> None:
    manager = ClientQuotaManager()
    manager.update_quota(QuotaEntity(None, "c"), 1000.0)
    assert manager.record("u", "c", 15_000, 0) > 0
    manager.update_quota(QuotaEntity(None, "c"), 10_000.0)
    assert manager.record("u", "c", 0, 0) == 0


def test_rate_window_is_at_least_num_minus_one_windows() -> None:
    rate = QuotaRate(11, 1000)
    rate.record(1000, 0)
    assert rate.window_size(0) == 10_000
    assert rate.measure(0) == pytest.approx(100.0)
    rate.record(0, 3_500)
    assert rate.window_size(3_500) == 3_500 + 7 * 1000  # 3 full windows, 7 added


def test_rate_purges_samples_older_than_all_windows() -> None:
    rate = QuotaRate(11, 1000)
    rate.record(5000, 0)
    rate.record(0, 5000)
    assert rate.measure(5000) == pytest.approx(5000 / 10)
    # At 11 s the first sample (started at 0) is num * window old: reset.
    assert rate.measure(11_000) == pytest.approx(0.0)


def test_rate_after_full_windows_uses_elapsed_time() -> None:
    rate = QuotaRate(11, 1000)
    for second in range(11):
        rate.record(100, second * 1000)
    # Samples started at 0..10 s; at 10.5 s the oldest started 10.5 s ago.
    assert rate.window_size(10_500) == 10_500
    assert rate.measure(10_500) == pytest.approx(1100 / 10.5)


def test_throttle_time_is_kafkas_formula() -> None:
    # O * W / (W + X) = T  =>  X = (O - T) / T * W
    assert throttle_time_ms(2000.0, 1000.0, 10_000) == 10_000
    assert throttle_time_ms(1100.0, 1000.0, 10_000) == 1000
    assert throttle_time_ms(1500.0, 1000.0, 1) == 1  # 0.5 ms rounds half up, as Math.round


def test_record_returns_throttle_that_brings_rate_back_to_bound() -> None:
    manager = ClientQuotaManager()
    manager.update_quota(QuotaEntity(None, "c"), 1000.0)
    throttle = manager.record("u", "c", 20_000, 0)
    # 20,000 B over the 10 s minimum window is 2,000 B/s: twice the bound, 10 s more.
    assert throttle == 10_000
    # Still throttled while the 10 s minimum window holds the 20,000 B; free once the
    # first sample expired (11 windows), the average over the 20 s is the bound.
    assert manager.record("u", "c", 0, 10_000) > 0
    assert manager.record("u", "c", 0, 20_000) == 0


def test_request_quota_throttle_capped_at_one_window() -> None:
    manager = ClientQuotaManager(max_throttle_ms=1000)
    manager.update_quota(QuotaEntity(None, "c"), 1.0)
    assert manager.record("u", "c", 1000.0, 0) == 1000


def test_unrecord_takes_back_a_value() -> None:
    manager = ClientQuotaManager()
    manager.update_quota(QuotaEntity(None, "c"), 1000.0)
    assert manager.record("u", "c", 20_000, 0) > 0
    manager.unrecord("u", "c", 20_000, 0)
    assert manager.record("u", "c", 0, 0) == 0


def test_max_value_in_window() -> None:
    manager = ClientQuotaManager()
    manager.update_quota(QuotaEntity(None, "c"), 1000.0)
    assert manager.max_value_in_window("u", "c") == 10_000.0
    assert manager.max_value_in_window("u", "other") is None


@pytest.mark.parametrize(
    ("name", "sanitized"),
    [
        ("alice", "alice"),
        ("a b", "a%20b"),
        ("a*b", "a%2Ab"),
        ("a/b", "a%2Fb"),
        ("é~", "%C3%A9%7E"),
        ("a.b-c_d", "a.b-c_d"),
    ],
)
def test_sanitize_as_kafkas_sanitizer(name: str, sanitized: str) -> None:
    assert sanitize(name) == sanitized
    assert desanitize(sanitized) == name


def test_entity_paths_round_trip() -> None:
    cases = {
        QuotaEntity("alice", None): "users/alice",
        QuotaEntity(None, "x y"): "clients/x%20y",
        QuotaEntity(D, D): "users/<default>/clients/<default>",
        QuotaEntity("a/b", "c"): "users/a%2Fb/clients/c",
    }
    for entity, path in cases.items():
        assert entity.path == path
        assert QuotaEntity.from_path(path) == entity
    with pytest.raises(ValueError):
        QuotaEntity.from_path("topics/t")
