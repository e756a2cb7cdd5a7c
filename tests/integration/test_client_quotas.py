"""Client quotas on an embedded broker: DescribeClientQuotas/AlterClientQuotas as Kafka 3.9's
ZooKeeper-mode broker answers them, persisted across a restart, and KIP-219's muting of a
raw-socket client that ignores ``throttle_time_ms`` (franz.broker.client_quotas)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from kio.schema.produce.v9.response import ProduceResponse

from franz.admin.client_quotas import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    QuotaEntry,
    alter_client_quotas,
    describe_client_quotas,
)
from tests.support.broker import BrokerProcess
from tests.support.wire import (
    WireClient,
    batch,
    create_topics,
    metadata,
    produce,
    produce_request,
)

USER = "user"
CLIENT = "client-id"


def _values(entries: list[QuotaEntry]) -> dict[tuple[tuple[str, str | None], ...], dict]:
    return {e.entity: e.values for e in entries}


def test_alter_then_describe_client_quotas(broker: BrokerProcess) -> None:
    address = broker.bootstrap
    answers = alter_client_quotas(
        address,
        [
            (((CLIENT, "x"),), {"producer_byte_rate": 1048576.0, "request_percentage": 200.0}),
            (((USER, None),), {"consumer_byte_rate": 2097152.0}),
            (((USER, "alice"), (CLIENT, None)), {"producer_byte_rate": 1000.0}),
        ],
    )
    assert [code for _, code, _ in answers] == [0, 0, 0]
    everything = _values(describe_client_quotas(address, []))
    assert everything == {
        ((CLIENT, "x"),): {"producer_byte_rate": 1048576.0, "request_percentage": 200.0},
        ((USER, None),): {"consumer_byte_rate": 2097152.0},
        ((USER, "alice"), (CLIENT, None)): {"producer_byte_rate": 1000.0},
    }
    # Exact client id, strict: only the client entity.
    assert _values(describe_client_quotas(address, [(CLIENT, MATCH_EXACT, "x")], strict=True)) == {
        ((CLIENT, "x"),): {"producer_byte_rate": 1048576.0, "request_percentage": 200.0}
    }
    # DEFAULT ignores a match string (Kafka 3.9.2 does).
    assert set(_values(describe_client_quotas(address, [(USER, MATCH_DEFAULT, "zz")]))) == {
        ((USER, None),)
    }
    # The default user, not strict: the user-default entity only (no client part named).
    assert set(_values(describe_client_quotas(address, [(USER, MATCH_DEFAULT, None)]))) == {
        ((USER, None),)
    }
    # Any user with any client id, strict.
    assert set(
        _values(
            describe_client_quotas(
                address,
                [(USER, MATCH_SPECIFIED, None), (CLIENT, MATCH_SPECIFIED, None)],
                strict=True,
            )
        )
    ) == {((USER, "alice"), (CLIENT, None))}
    # Removing a key keeps the others; removing the last leaves the entity out.
    alter_client_quotas(address, [(((CLIENT, "x"),), {"request_percentage": None})])
    alter_client_quotas(address, [(((USER, None),), {"consumer_byte_rate": None})])
    assert _values(describe_client_quotas(address, [])) == {
        ((CLIENT, "x"),): {"producer_byte_rate": 1048576.0},
        ((USER, "alice"), (CLIENT, None)): {"producer_byte_rate": 1000.0},
    }
    # Persisted in the embedded metadata: a restarted broker describes the same quotas.
    broker.stop()
    broker.start()
    assert _values(describe_client_quotas(broker.bootstrap, [])) == {
        ((CLIENT, "x"),): {"producer_byte_rate": 1048576.0},
        ((USER, "alice"), (CLIENT, None)): {"producer_byte_rate": 1000.0},
    }


def test_alter_client_quotas_validation_as_kafka(broker: BrokerProcess) -> None:
    address = broker.bootstrap
    answers = alter_client_quotas(
        address,
        [
            ((), {"producer_byte_rate": 1.0}),
            ((("ip", "1.2.3.4"),), {"producer_byte_rate": 1.0}),
            (((USER, ""),), {"producer_byte_rate": 1.0}),
            (((CLIENT, "c"),), {"retention.ms": 1.0}),
            (((CLIENT, "d"),), {"consumer_byte_rate": 1.5}),
            (((USER, "alice"),), {"producer_byte_rate": -5.0}),
            (((CLIENT, "ok"),), {"request_percentage": 12.5}),
        ],
    )
    assert [(code, message) for _, code, message in answers] == [
        (42, "Invalid empty client quota entity"),
        (42, "Unhandled client quota entity type: ip"),
        (42, "Empty user not supported"),
        (42, "Invalid configuration key retention.ms"),
        (42, "Configuration consumer_byte_rate must be a LONG value"),
        (42, "Configuration producer_byte_rate must be a LONG value"),
        (0, None),
    ]
    # An entity named twice is answered once, its last entry applied (Kafka keys them).
    answers = alter_client_quotas(
        address,
        [
            (((CLIENT, "twice"),), {"retention.ms": 1.0}),
            (((CLIENT, "twice"),), {"producer_byte_rate": 7.0}),
        ],
    )
    assert [(code, message) for _, code, message in answers] == [(0, None)]
    alter_client_quotas(address, [(((CLIENT, "twice"),), {"producer_byte_rate": None})])
    # validate_only changes nothing.
    [(_, code, _)] = alter_client_quotas(
        address, [(((CLIENT, "v"),), {"producer_byte_rate": 5.0})], validate_only=True
    )
    assert code == 0
    assert _values(describe_client_quotas(address, [])) == {
        ((CLIENT, "ok"),): {"request_percentage": 12.5}
    }


def test_describe_client_quotas_bad_filters(broker: BrokerProcess) -> None:
    from franz.admin.options import ToolError

    # As Kafka 3.9.2 answers (compared by hand): EXACT without a match string is error -1
    # with no message; DEFAULT ignores a match string.
    cases = [
        ([(USER, MATCH_EXACT, None)], "(error -1): None"),
        (
            [(USER, MATCH_SPECIFIED, None), ("ip", MATCH_SPECIFIED, None)],
            "IP filter component should not be used with user or clientId filter component.",
        ),
        ([(USER, MATCH_EXACT, "a"), (USER, MATCH_EXACT, "b")], "Duplicate user filter"),
        ([("", MATCH_SPECIFIED, None)], "Unexpected empty filter component entity type"),
        ([("group", MATCH_SPECIFIED, None)], "Custom entity type 'group' not supported"),
    ]
    for components, message in cases:
        try:
            describe_client_quotas(broker.bootstrap, components)
        except ToolError as exc:
            assert message in str(exc), exc
        else:
            raise AssertionError(f"{components} was accepted")


def _produce_loop(
    bootstrap: str,
    client_id: str,
    topic: str,
    payload: bytes,
    seconds: float,
    in_flight: int,
    out: dict[str, float],
) -> None:
    """Send Produce requests back to back (``in_flight`` outstanding), ignoring their
    ``throttle_time_ms``; count the bytes of the acknowledged requests and the largest
    throttle time seen."""
    records = batch((None, payload))
    request = produce_request({(topic, 0): bytes(records)}, acks=1)
    acked = 0
    max_throttle = 0
    with WireClient.connect(bootstrap, client_id=client_id, timeout=30) as client:
        deadline = time.monotonic() + seconds
        pending: list[int] = []
        while time.monotonic() < deadline or pending:
            while time.monotonic() < deadline and len(pending) < in_flight:
                pending.append(client.send(request))
            response = client.recv(ProduceResponse, pending.pop(0))
            assert response.responses[0].partition_responses[0].error_code == 0
            max_throttle = max(max_throttle, int(response.throttle_time.total_seconds() * 1000))
            acked += len(records)
    out["acked"] = acked
    out["max_throttle_ms"] = max_throttle


def test_client_ignoring_throttle_is_muted_to_its_quota(tmp_path: Path) -> None:
    """KIP-219: the broker answers at once with throttle_time_ms and stops reading the
    connection; a raw client that ignores the throttle and keeps pipelining is held to its
    quota, while an unthrottled client on the same broker keeps its speed. A short quota
    window (3 samples of 1 s) keeps the burst Kafka's windowed rate allows small."""
    quota = 256 * 1024
    seconds = 8.0
    overrides = {"quota.window.num": "3", "quota.window.size.seconds": "1"}
    with BrokerProcess(tmp_path / "b", overrides) as broker:
        with WireClient.connect(broker.bootstrap) as admin:
            assert create_topics(admin, {"held": 1, "free": 1}).topics[0].error_code == 0
            produce(admin, "held", 0, batch((None, b"warm")))
        [(_, code, _)] = alter_client_quotas(
            broker.bootstrap, [(((CLIENT, "raw"),), {"producer_byte_rate": float(quota)})]
        )
        assert code == 0
        payload = b"x" * 32 * 1024
        held: dict[str, float] = {}
        free: dict[str, float] = {}
        threads = [
            threading.Thread(
                target=_produce_loop,
                args=(broker.bootstrap, "raw", "held", payload, seconds, 4, held),
            ),
            threading.Thread(
                target=_produce_loop,
                args=(broker.bootstrap, "free", "free", payload, seconds, 1, free),
            ),
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        elapsed = time.monotonic() - started
        assert not any(t.is_alive() for t in threads)
        held_rate = held["acked"] / elapsed
        free_rate = free["acked"] / elapsed
        # Within the quota (plus the 2 s burst the windowed rate allows at the start).
        assert held_rate <= quota * (seconds + 2) / seconds * 1.15, (held_rate, quota)
        assert held_rate >= quota * 0.5, (held_rate, quota)
        assert held["max_throttle_ms"] > 0
        assert free["max_throttle_ms"] == 0
        assert free_rate > 5 * quota, (free_rate, held_rate)


def test_request_percentage_throttles_with_at_most_one_window(broker: BrokerProcess) -> None:
    """``request_percentage``: the time the broker spends on a client's requests, as a
    percentage of one thread; over it, responses carry a throttle time of at most one
    quota window (Kafka's ``ClientRequestQuotaManager.maxThrottleTimeMs``), and other
    clients are not throttled."""
    [(_, code, _)] = alter_client_quotas(
        broker.bootstrap, [(((CLIENT, "busy"),), {"request_percentage": 0.01})]
    )
    assert code == 0
    throttles = []
    with WireClient.connect(broker.bootstrap, client_id="busy") as client:
        for _ in range(200):
            response = metadata(client, None)
            throttles.append(int(response.throttle_time.total_seconds() * 1000))
            if throttles[-1] > 0:
                break
    assert max(throttles) > 0, throttles
    assert max(throttles) <= 1000
    with WireClient.connect(broker.bootstrap, client_id="idle") as client:
        assert int(metadata(client, None).throttle_time.total_seconds() * 1000) == 0
