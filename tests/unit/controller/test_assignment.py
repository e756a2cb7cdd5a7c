"""Replica assignment (franz.controller.assignment) against Kafka's own test vectors."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.controller.assignment import (
    AdminOperationError,
    BrokerMetadata,
    BrokerNotAvailableError,
    assign_replicas_to_brokers,
    new_partitions_assignment,
    rack_alternated_broker_list,
    sorted_brokers,
    validate_topic_create_assignment,
)
from franz.errors import (
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)


def plain(*ids: int) -> list[BrokerMetadata]:
    return [BrokerMetadata(i) for i in ids]


def racked(rack_map: dict[int, str]) -> list[BrokerMetadata]:
    # Kafka's RackAwareTest.toBrokerMetadata: sorted by id.
    return sorted_brokers(BrokerMetadata(i, r) for i, r in rack_map.items())


def draws(*values: int) -> Iterator[int]:
    return iter(values)


def test_rack_unaware_matches_kafka_admin_test_vector():
    # AdminTest.testReplicaAssignment: 5 brokers, 10 partitions, RF 3, fixedStartIndex 0.
    expected = {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2],
    }  # fmt: skip
    assert assign_replicas_to_brokers(plain(0, 1, 2, 3, 4), 10, 3, 0) == expected


def test_replication_factor_zero_and_too_large_are_invalid_replication_factor():
    with pytest.raises(InvalidReplicationFactorError) as zero:
        assign_replicas_to_brokers(plain(0, 1, 2, 3, 4), 10, 0)
    assert zero.value.message == "Replication factor must be larger than 0."
    with pytest.raises(InvalidReplicationFactorError) as big:
        assign_replicas_to_brokers(plain(0, 1), 1, 3)
    assert big.value.message == "Replication factor: 3 larger than available brokers: 2."
    assert big.value.code is ErrorCode.INVALID_REPLICATION_FACTOR


def test_zero_partitions_is_invalid_partitions():
    with pytest.raises(InvalidPartitionsError, match=r"^Number of partitions must be larger"):
        assign_replicas_to_brokers(plain(0, 1), 0, 1)


def test_random_draws_are_start_index_then_shift():
    # rand drawn twice, as Kafka: startIndex = 2, nextReplicaShift = 1.
    values = draws(2, 1)
    got = assign_replicas_to_brokers(plain(0, 1, 2, 3, 4), 2, 3, rand=lambda bound: next(values))
    # p0: first index (0 + 2) = broker 2; followers shift 1 + (1 + j) % 4 -> 2 + 2, 2 + 3.
    assert got == {0: [2, 4, 0], 1: [3, 0, 1]}


def test_rack_alternated_broker_list_matches_kafka():
    rack_map = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(rack_map) == [0, 3, 1, 5, 4, 2]
    del rack_map[5]
    assert rack_alternated_broker_list(rack_map) == [0, 3, 1, 4, 2]


def test_rack_aware_matches_kafka_admin_rack_aware_test_vector():
    # AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers.
    rack_map = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    expected = {
        0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2], 4: [4, 2, 0], 5: [2, 0, 3],
        6: [0, 4, 2],
    }  # fmt: skip
    assert assign_replicas_to_brokers(racked(rack_map), 7, 3, 0, 0) == expected


def test_some_brokers_without_rack_is_kafkas_admin_operation_error():
    brokers = [BrokerMetadata(0, "a"), BrokerMetadata(1)]
    with pytest.raises(AdminOperationError) as err:
        assign_replicas_to_brokers(brokers, 1, 1)
    assert err.value.message == (
        "Not all brokers have rack information for replica rack aware assignment."
    )
    assert err.value.code is ErrorCode.UNKNOWN_SERVER_ERROR


def rack_distribution(assignment, rack_map):
    leaders = Counter(r[0] for r in assignment.values())
    replicas = Counter(b for r in assignment.values() for b in r)
    racks = {p: [rack_map[b] for b in r] for p, r in assignment.items()}
    return leaders, replicas, racks


def check_replica_distribution(
    assignment, rack_map, num_brokers, num_partitions, rf, *, rack_aware=True,
    leaders_even=True, replicas_even=True,
):  # fmt: skip
    """Kafka's RackAwareTest.checkReplicaDistribution."""
    assert all(len(r) == rf for r in assignment.values())
    leaders, replicas, racks = rack_distribution(assignment, rack_map)
    if rack_aware:
        assert all(len(set(rs)) == rf for rs in racks.values())
    if leaders_even:
        assert all(leaders[b] == num_partitions // num_brokers for b in rack_map)
    if replicas_even:
        assert all(replicas[b] == num_partitions * rf // num_brokers for b in rack_map)


SIX = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}


@pytest.mark.parametrize(
    ("rack_map", "partitions", "rf", "fixed", "start", "kwargs"),
    [
        (SIX, 6, 3, 2, -1, {}),  # testAssignmentWithRackAware
        (SIX, 13, 3, 0, 0, {"leaders_even": False, "replicas_even": False}),
        (
            {0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"},
            12,
            3,
            -1,
            -1,
            {"replicas_even": False},
        ),  # testAssignmentWithRackAwareWithUnevenRacks
        (SIX, 12, 2, -1, -1, {}),  # testAssignmentWith2ReplicasRackAware
        (
            {6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"},
            12,
            2,
            -1,
            12,
            {},
        ),  # testRackAwareExpansion
        (SIX, 6, 2, -1, -1, {}),  # testAssignmentWith2ReplicasRackAwareWith6Partitions
        ({0: "rack1", 1: "rack2", 4: "rack3"}, 3, 2, -1, -1, {}),
        (
            {
                0: "rack1",
                1: "rack2",
                2: "rack2",
                3: "rack3",
                4: "rack3",
                5: "rack1",
                6: "rack1",
                7: "rack2",
                8: "rack2",
                9: "rack3",
                10: "rack1",
                11: "rack3",
            },
            96,
            3,
            -1,
            -1,
            {},
        ),
    ],
)
@pytest.mark.parametrize("seed", range(4))
def test_rack_aware_distribution_as_kafkas_admin_rack_aware_test(
    rack_map, partitions, rf, fixed, start, kwargs, seed
):
    values = draws(*[(seed * 7 + k) % len(rack_map) for k in range(2)])
    assignment = assign_replicas_to_brokers(
        racked(rack_map), partitions, rf, fixed, start, rand=lambda bound: next(values)
    )
    check_replica_distribution(assignment, rack_map, len(rack_map), partitions, rf, **kwargs)


def test_more_and_fewer_replicas_than_racks_and_single_rack():
    more = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    a = assign_replicas_to_brokers(racked(more), 6, 5)
    assert all(len({more[b] for b in r}) == 3 for r in a.values())  # testMoreReplicasThanRacks
    a = assign_replicas_to_brokers(racked(more), 6, 2)
    assert all(len({more[b] for b in r}) == 2 for r in a.values())  # testLessReplicasThanRacks
    single = dict.fromkeys(range(6), "rack1")
    a = assign_replicas_to_brokers(racked(single), 6, 3)
    assert Counter(r[0] for r in a.values()) == dict.fromkeys(range(6), 1)  # testSingleRack


def test_skip_broker_with_replica_already_assigned():
    # AdminRackAwareTest.testSkipBrokerWithReplicaAlreadyAssigned: RF 4 over 3 racks.
    rack_info = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    a = assign_replicas_to_brokers(racked(rack_info), 6, 4, fixed_start_index=2)
    assert all(len(set(r)) == 4 for r in a.values())


def test_add_partitions_all_servers_matches_kafka_add_partitions_test():
    # AddPartitionsTest.testReplicaPlacementAllServers: topic3 p0 = [2, 3, 0, 1], 4 brokers, to 7.
    new = new_partitions_assignment("topic3", {0: [2, 3, 0, 1]}, plain(0, 1, 2, 3), 7)
    expected_leaders = {1: 3, 2: 0, 3: 1, 4: 2, 5: 3, 6: 0}
    assert {p: r[0] for p, r in new.items()} == expected_leaders
    assert all(sorted(r) == [0, 1, 2, 3] for r in new.values())


def test_add_partitions_partial_servers_matches_kafka_add_partitions_test():
    # AddPartitionsTest.testReplicaPlacementPartialServers: topic2 p0 = [1, 2], to 3.
    new = new_partitions_assignment("topic2", {0: [1, 2]}, plain(0, 1, 2, 3), 3)
    assert {p: (r[0], set(r)) for p, r in new.items()} == {1: (2, {0, 2}), 2: (3, {1, 3})}


def test_add_partitions_count_errors_are_kafkas():
    existing = {0: [0], 1: [0], 2: [0]}
    with pytest.raises(InvalidPartitionsError) as lower:
        new_partitions_assignment("t", existing, plain(0, 1), 2)
    assert lower.value.message == (
        "Topic currently has 3 partitions, which is higher than the requested 2."
    )
    with pytest.raises(InvalidPartitionsError, match=r"^Topic already has 3 partitions\.$"):
        new_partitions_assignment("t", existing, plain(0, 1), 3)


def test_add_partitions_manual_assignment_errors_are_kafkas():
    # The messages PlaintextAdminIntegrationTest (testCreatePartitions) asserts.
    existing = {0: [0], 1: [1], 2: [0]}
    brokers = plain(0, 1, 2)
    with pytest.raises(InvalidReplicaAssignmentError) as inconsistent:
        new_partitions_assignment("t", existing, brokers, 5, [[1], [1, 2]])
    assert inconsistent.value.message == (
        "Inconsistent replication factor between partitions, partition 0 has 1 "
        "while partitions [4] have replication factors [2], respectively."
    )
    with pytest.raises(InvalidReplicaAssignmentError) as unknown:
        new_partitions_assignment("t", existing, brokers, 4, [[12]])
    assert unknown.value.message == "Unknown broker(s) in replica assignment: 12."
    with pytest.raises(InvalidReplicaAssignmentError) as empty:
        new_partitions_assignment("t", existing, brokers, 4, [])
    assert empty.value.message == (
        "Increasing the number of partitions by 1 but 0 assignments provided."
    )
    with pytest.raises(InvalidReplicaAssignmentError) as dup:
        new_partitions_assignment("t", existing, brokers, 4, [[1, 1]])
    assert dup.value.message == (
        "Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 3."
    )
    with pytest.raises(InvalidReplicaAssignmentError, match="replication factor of 0"):
        new_partitions_assignment("t", existing, brokers, 4, [[]])
    assert new_partitions_assignment("t", existing, brokers, 5, [[2], [1]]) == {3: [2], 4: [1]}


def test_validate_replica_assignment_unknown_broker_is_broker_not_available():
    # Reached when the broker list given is narrower than the ids ZkAdminManager checked.
    from franz.controller.assignment import _validate_replica_assignment

    with pytest.raises(BrokerNotAvailableError) as err:
        _validate_replica_assignment({3: [0, 9]}, 2, {0, 1})
    assert err.value.message == (
        "Some brokers specified for partition id 3 are not available. "
        "Specified brokers: 0, 9, available brokers: 0, 1."
    )


def test_topic_create_manual_assignment_checks():
    # AdminTest.testManualReplicaAssignment and AdminZkClient.validateTopicCreate.
    with pytest.raises(InvalidReplicaAssignmentError, match=r"^Duplicate replica assignment"):
        validate_topic_create_assignment({0: [0, 0]})
    with pytest.raises(InvalidReplicaAssignmentError) as rf:
        validate_topic_create_assignment({0: [0, 1], 1: [0]})
    assert rf.value.message == "All partitions should have the same number of replicas"
    with pytest.raises(InvalidReplicaAssignmentError) as holes:
        validate_topic_create_assignment({0: [0], 2: [1]})
    assert holes.value.message == "partitions should be a consecutive 0-based integer sequence"
    validate_topic_create_assignment({0: [0, 1, 2], 1: [1, 2, 3]})


@settings(max_examples=200, deadline=None)
@given(
    n_brokers=st.integers(1, 12),
    data=st.data(),
)
def test_rack_unaware_property_distinct_replicas_and_balanced_leaders(n_brokers, data):
    ids = sorted(data.draw(st.sets(st.integers(0, 1000), min_size=n_brokers, max_size=n_brokers)))
    rf = data.draw(st.integers(1, n_brokers))
    partitions = data.draw(st.integers(1, 60))
    seed = data.draw(st.integers(0, 10_000))
    a = assign_replicas_to_brokers(plain(*ids), partitions, rf, rand=random.Random(seed).randrange)
    assert sorted(a) == list(range(partitions))
    assert all(len(r) == rf and len(set(r)) == rf and set(r) <= set(ids) for r in a.values())
    leaders = Counter(r[0] for r in a.values())
    counts = [leaders.get(b, 0) for b in ids]
    assert max(counts) - min(counts) <= 1


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_rack_aware_property_every_partition_spans_min_rf_racks(data):
    n_racks = data.draw(st.integers(1, 4))
    per_rack = data.draw(st.integers(1, 3))  # even racks: Kafka's guarantee holds
    rack_map = {r * per_rack + i: f"rack{r}" for r in range(n_racks) for i in range(per_rack)}
    rf = data.draw(st.integers(1, len(rack_map)))
    partitions = data.draw(st.integers(1, 40))
    fixed = data.draw(st.integers(-1, len(rack_map) - 1))
    seed = data.draw(st.integers(0, 10_000))
    a = assign_replicas_to_brokers(
        racked(rack_map), partitions, rf, fixed, rand=lambda bound: seed % bound
    )
    for replicas in a.values():
        assert len(set(replicas)) == rf
        assert len({rack_map[b] for b in replicas}) == min(rf, n_racks)
    leaders = Counter(r[0] for r in a.values())
    counts = [leaders.get(b, 0) for b in rack_map]
    assert max(counts) - min(counts) <= 1
