"""The ApiVersions contract: Kafka 3.9's advertised ranges, Kafka 4.0's floors, kio's flags.

kio is generated from Kafka 4.x's message schemas, so it has a request and a response class
for exactly the versions Kafka 4.0 still serves; its ``__flexible__`` flags are Kafka's
``flexibleVersions``.
"""

from __future__ import annotations

import pytest
from kio.index import UnknownEntity
from kio.schema.index import api_key_map, schema_name_map

from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey, ApiSupport, advertised_range
from franz.protocol.messages import request_type, response_type

ACCEPTED = [
    (key, version)
    for key, support in SUPPORTED_APIS.items()
    for version in range(support.min_accepted, support.max_version + 1)
]

#: Apache Kafka 3.9.0's ApiVersions response for these APIs (ZooKeeper-mode broker).
KAFKA_3_9_MAX = {
    ApiKey.PRODUCE: 11,
    ApiKey.FETCH: 17,
    ApiKey.LIST_OFFSETS: 9,
    ApiKey.METADATA: 12,
    ApiKey.API_VERSIONS: 4,
    ApiKey.CREATE_TOPICS: 7,
    ApiKey.DELETE_TOPICS: 6,
    ApiKey.DELETE_RECORDS: 2,
    ApiKey.INIT_PRODUCER_ID: 5,
    ApiKey.DESCRIBE_CONFIGS: 4,
    ApiKey.ALTER_CONFIGS: 2,
    ApiKey.ALTER_REPLICA_LOG_DIRS: 2,
    ApiKey.DESCRIBE_LOG_DIRS: 4,
    ApiKey.CREATE_PARTITIONS: 3,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: 1,
    ApiKey.DESCRIBE_CLUSTER: 1,
    ApiKey.FIND_COORDINATOR: 6,
    ApiKey.OFFSET_COMMIT: 9,
    ApiKey.OFFSET_FETCH: 9,
    ApiKey.JOIN_GROUP: 9,
    ApiKey.HEARTBEAT: 4,
    ApiKey.LEAVE_GROUP: 5,
    ApiKey.SYNC_GROUP: 5,
    ApiKey.DESCRIBE_GROUPS: 5,
    ApiKey.LIST_GROUPS: 5,
    ApiKey.DELETE_GROUPS: 2,
    ApiKey.OFFSET_DELETE: 0,
    ApiKey.ELECT_LEADERS: 2,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: 0,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: 0,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: 4,
    ApiKey.WRITE_TXN_MARKERS: 1,
    ApiKey.DESCRIBE_PRODUCERS: 0,
    # The transaction coordinator (issue 19).
    ApiKey.ADD_PARTITIONS_TO_TXN: 5,
    ApiKey.ADD_OFFSETS_TO_TXN: 4,
    ApiKey.END_TXN: 4,
    ApiKey.DESCRIBE_TRANSACTIONS: 0,
    ApiKey.LIST_TRANSACTIONS: 1,
    ApiKey.TXN_OFFSET_COMMIT: 4,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: 1,
    ApiKey.ALTER_CLIENT_QUOTAS: 1,
    ApiKey.DESCRIBE_ACLS: 3,
    ApiKey.CREATE_ACLS: 3,
    ApiKey.DELETE_ACLS: 3,
    ApiKey.SASL_HANDSHAKE: 1,
    ApiKey.SASL_AUTHENTICATE: 2,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: 0,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: 0,
}


def kio_versions(api_key: int) -> list[int]:
    return sorted(schema_name_map[api_key_map[api_key]])


@pytest.mark.parametrize(("api_key", "version"), ACCEPTED)
def test_kio_has_request_and_response_classes(api_key: int, version: int) -> None:
    request = request_type(api_key, version)
    response = response_type(api_key, version)
    assert request.__api_key__ == api_key == response.__api_key__
    assert request.__version__ == version == response.__version__


@pytest.mark.parametrize(("api_key", "version"), ACCEPTED)
def test_first_flexible_matches_kio(api_key: ApiKey, version: int) -> None:
    support = SUPPORTED_APIS[api_key]
    flexible = support.is_flexible(version)
    assert request_type(api_key, version).__flexible__ is flexible
    assert response_type(api_key, version).__flexible__ is flexible


@pytest.mark.parametrize("api_key", list(SUPPORTED_APIS))
def test_first_flexible_is_kios_first_flexible_version(api_key: ApiKey) -> None:
    flexible = [v for v in kio_versions(api_key) if request_type(api_key, v).__flexible__]
    assert SUPPORTED_APIS[api_key].first_flexible == (flexible[0] if flexible else -1)


@pytest.mark.parametrize("api_key", list(SUPPORTED_APIS))
def test_advertised_minimum_is_zero(api_key: ApiKey) -> None:
    assert SUPPORTED_APIS[api_key].min_advertised == 0
    assert advertised_range(api_key) == (0, SUPPORTED_APIS[api_key].max_version)


@pytest.mark.parametrize("api_key", list(SUPPORTED_APIS))
def test_accepted_floor_is_kafka_4_0s(api_key: ApiKey) -> None:
    # KIP-896: Kafka 4.0 dropped the versions below these floors, and so did its schemas.
    assert SUPPORTED_APIS[api_key].min_accepted == kio_versions(api_key)[0]


def test_maximums_are_kafka_3_9s() -> None:
    assert {key: s.max_version for key, s in SUPPORTED_APIS.items()} == KAFKA_3_9_MAX


@pytest.mark.parametrize("api_key", list(SUPPORTED_APIS))
def test_ranges_are_coherent(api_key: ApiKey) -> None:
    s = SUPPORTED_APIS[api_key]
    assert 0 <= s.min_advertised <= s.min_accepted <= s.max_version
    assert s.first_flexible == -1 or s.first_flexible <= s.max_version


@pytest.mark.parametrize("api_key", list(SUPPORTED_APIS))
def test_refused_versions_have_no_kio_class(api_key: ApiKey) -> None:
    # Advertised but refused versions are answered with UNSUPPORTED_VERSION, never decoded.
    for version in range(SUPPORTED_APIS[api_key].min_accepted):
        with pytest.raises(UnknownEntity):
            request_type(api_key, version)


@pytest.mark.parametrize("api_key", [key for key in ApiKey if key in api_key_map])
def test_api_key_names_are_kafkas(api_key: ApiKey) -> None:
    assert api_key_map[api_key].upper() == api_key.name


def test_zookeeper_era_inter_broker_keys() -> None:
    # Kafka 4.0 removed these with ZooKeeper mode, so kio (4.x schemas) does not know them;
    # Franz's cluster mode needs them (Kafka 3.9's ApiKeys.java numbers).
    zk_era = {
        4: "LEADER_AND_ISR",
        5: "STOP_REPLICA",
        6: "UPDATE_METADATA",
        7: "CONTROLLED_SHUTDOWN",
    }
    assert {key: ApiKey(key).name for key in zk_era} == zk_era
    assert not any(key in api_key_map for key in zk_era)


def test_accepts_and_is_flexible() -> None:
    support = ApiSupport(min_advertised=0, min_accepted=3, max_version=11, first_flexible=9)
    assert [v for v in range(14) if support.accepts(v)] == list(range(3, 12))
    assert [v for v in range(14) if support.is_flexible(v)] == [9, 10, 11, 12, 13]
    never = ApiSupport(0, 0, 5, -1)
    assert not any(never.is_flexible(v) for v in range(10))


def test_unknown_api_has_no_advertised_range() -> None:
    assert advertised_range(38) is None  # CreateDelegationToken
    assert advertised_range(9999) is None


def test_legacy_versions_are_accepted_below_the_kio_floor() -> None:
    support = ApiSupport(0, 3, 11, 9, legacy_from=0)
    assert [v for v in range(14) if support.accepts(v)] == list(range(12))
    assert [v for v in range(14) if support.is_legacy(v)] == [0, 1, 2]
    assert not any(ApiSupport(0, 3, 11, 9).is_legacy(v) for v in range(14))


def test_every_advertised_version_is_served_as_kafka_3_9_does() -> None:
    # Pre-0.11 clients (api.version.request=false) use the old versions without asking.
    for api_key, support in SUPPORTED_APIS.items():
        assert all(support.accepts(v) for v in range(support.max_version + 1)), api_key
        if support.min_accepted > 0:
            assert support.legacy_from == 0, api_key
