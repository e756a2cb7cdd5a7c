"""Client quotas on a 3-broker ZooKeeper cluster: AlterClientQuotas through one broker
writes Kafka's znodes (keeping a user's other keys, such as SCRAM credentials) and
``/config/changes`` notifications, and every broker applies them live."""

from __future__ import annotations

import json

from kio.schema.produce.v9.response import ProduceResponse

from franz.admin.client_quotas import alter_client_quotas, describe_client_quotas
from tests.support.cluster import Cluster, eventually
from tests.support.wire import WireClient, batch, produce_request


def _max_throttle_ms(bootstrap: str, client_id: str, requests: int) -> int:
    """Send ``requests`` Produce requests of ~100 KB (to a topic that does not exist: the
    request's size counts against ``producer_byte_rate`` all the same) as ``client_id``;
    the largest ``throttle_time_ms`` answered."""
    records = bytes(batch((None, b"q" * 100_000)))
    most = 0
    with WireClient.connect(bootstrap, client_id=client_id, timeout=30) as client:
        for _ in range(requests):
            response = client.request(
                produce_request({("no-such-topic", 0): records}, acks=1), timeout=30
            )
            assert isinstance(response, ProduceResponse)
            most = max(most, int(response.throttle_time.total_seconds() * 1000))
    return most


def test_quotas_set_through_one_broker_apply_on_all(cluster: Cluster) -> None:
    one, two, three = (cluster.brokers[i] for i in (1, 2, 3))
    # A user znode holding another writer's key (the SCRAM credentials' place).
    scram = "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096"
    cluster.kazoo.create(
        "/config/users/alice",
        json.dumps({"version": 1, "config": {"SCRAM-SHA-256": scram}}).encode(),
        makepath=True,
    )
    answers = alter_client_quotas(
        one.bootstrap,
        [
            ((("client-id", "zq"),), {"producer_byte_rate": 65536.0}),
            ((("user", "alice"),), {"consumer_byte_rate": 2048.0}),
            ((("user", "alice"), ("client-id", "a b")), {"request_percentage": 50.0}),
        ],
    )
    assert sorted(code for _, code, _ in answers) == [0, 0, 0]
    assert cluster.json("/config/clients/zq") == {
        "version": 1,
        "config": {"producer_byte_rate": "65536"},
    }
    assert cluster.json("/config/users/alice") == {
        "version": 1,
        "config": {"SCRAM-SHA-256": scram, "consumer_byte_rate": "2048"},
    }
    assert cluster.json("/config/users/alice/clients/a%20b") == {
        "version": 1,
        "config": {"request_percentage": "50.0"},
    }
    notified = {
        cluster.json(f"/config/changes/{name}")["entity_path"]
        for name in cluster.kazoo.get_children("/config/changes")
    }
    assert {"clients/zq", "users/alice", "users/alice/clients/a%20b"} <= notified
    # Every broker applies the notifications; any broker describes them (quota keys only).
    for broker in (one, two, three):
        eventually(
            lambda b=broker: "client quotas of clients/zq: {'producer_byte_rate'" in b.output(),
            30,
            f"broker at {broker.bootstrap} applies clients/zq",
        )
    described = {e.entity: e.values for e in describe_client_quotas(two.bootstrap, [])}
    assert described == {
        (("client-id", "zq"),): {"producer_byte_rate": 65536.0},
        (("user", "alice"),): {"consumer_byte_rate": 2048.0},
        (("user", "alice"), ("client-id", "a b")): {"request_percentage": 50.0},
    }
    # Enforced on another broker: 800 KB over a 64 KiB/s quota (10 s of allowance: 640 KiB).
    assert _max_throttle_ms(three.bootstrap, "zq", 8) > 0
    assert _max_throttle_ms(three.bootstrap, "not-limited", 8) == 0
    # Removed through a second broker: the third stops throttling that client id.
    [(_, code, _)] = alter_client_quotas(
        two.bootstrap, [((("client-id", "zq"),), {"producer_byte_rate": None})]
    )
    assert code == 0
    eventually(
        lambda: "client quotas of clients/zq: {}" in three.output(),
        30,
        "the third broker applies the removal",
    )
    assert _max_throttle_ms(three.bootstrap, "zq", 3) == 0
    assert cluster.json("/config/users/alice")["config"]["SCRAM-SHA-256"] == scram
