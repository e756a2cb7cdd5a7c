"""The embedded metadata store: one JSON file, rewritten atomically, reloaded exactly."""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError
from franz.metadata.local import METADATA_FILE, LocalMetadataStore
from franz.metadata.store import MetadataStore, TopicRecord
from franz.protocol.kafka_uuid import uuid_to_str

TOPIC_ID = uuid.UUID("4d3c0a4e-8a5b-4f6e-9a41-0f2e3b6c7d8e")


def open_store(directory: Path) -> LocalMetadataStore:
    store = LocalMetadataStore(directory)
    store.load()
    return store


def record(name: str = "events", partitions: int = 2, **configs: str) -> TopicRecord:
    return TopicRecord(
        name,
        TOPIC_ID,
        {p: [0] for p in range(partitions)},
        {k.replace("_", "."): v for k, v in configs.items()},
    )


def snapshot(
    store: LocalMetadataStore,
) -> dict[str, tuple[uuid.UUID, dict[int, list[int]], dict[str, str]]]:
    return {
        name: (r.topic_id, dict(r.assignment), dict(r.configs))
        for name, r in store.topics().items()
    }


def test_is_a_metadata_store(tmp_path: Path) -> None:
    store: MetadataStore = LocalMetadataStore(tmp_path)
    assert store is not None


def test_no_file_means_no_topics(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    assert store.topics() == {}
    assert store.path == tmp_path / METADATA_FILE
    assert not store.path.exists()
    assert store.allocate_producer_ids(10) == 0


def test_file_is_json_with_one_line_per_topic(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic(record("b-topic", 2, retention_ms="1000"))
    store.create_topic(TopicRecord("a-topic", uuid.UUID(int=5), {0: [0]}))
    store.set_broker_configs("<default>", {"log.retention.ms": "60000"})
    text = store.path.read_text()
    assert json.loads(text) == {
        "version": 1,
        "next_producer_id": 0,
        "topics": {
            "a-topic": {
                "topic_id": uuid_to_str(uuid.UUID(int=5)),
                "partitions": {"0": [0]},
                "configs": {},
            },
            "b-topic": {
                "topic_id": uuid_to_str(TOPIC_ID),
                "partitions": {"0": [0], "1": [0]},
                "configs": {"retention.ms": "1000"},
            },
        },
        "broker_configs": {"<default>": {"log.retention.ms": "60000"}},
    }
    topic_lines = [line for line in text.splitlines() if "topic_id" in line]
    assert [line.split(":")[0].strip() for line in topic_lines] == ['"a-topic"', '"b-topic"']


def test_rewrite_reflects_every_topic_as_it_is_now(tmp_path: Path) -> None:
    # Each rewrite encodes only the topic that changed and keeps the others' lines.
    store = open_store(tmp_path)
    store.create_topic(record("a", 1))
    store.create_topic(record("b", 1))
    store.set_topic_configs("a", {"retention.ms": "5"})
    store.add_partitions("b", {1: [0]})
    store.create_topic(record("c", 1))
    store.delete_topic("c")
    assert snapshot(open_store(tmp_path)) == {
        "a": (TOPIC_ID, {0: [0]}, {"retention.ms": "5"}),
        "b": (TOPIC_ID, {0: [0], 1: [0]}, {}),
    }


def test_round_trip_through_the_file(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic(record("events", 3, retention_ms="3600000", cleanup_policy="compact"))
    store.create_topic(TopicRecord("other", uuid.UUID(int=77), {0: [0]}))
    store.add_partitions("other", {1: [0], 2: [0]})
    store.allocate_producer_ids(1000)
    reloaded = open_store(tmp_path)
    assert snapshot(reloaded) == snapshot(store)
    assert snapshot(reloaded) == {
        "events": (
            TOPIC_ID,
            {0: [0], 1: [0], 2: [0]},
            {"retention.ms": "3600000", "cleanup.policy": "compact"},
        ),
        "other": (uuid.UUID(int=77), {0: [0], 1: [0], 2: [0]}, {}),
    }
    assert reloaded.allocate_producer_ids(1) == 1000


def test_file_format(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic(record("events", 2, retention_ms="3600000"))
    store.allocate_producer_ids(1000)
    data = json.loads(store.path.read_text())
    assert data == {
        "version": 1,
        "next_producer_id": 1000,
        "topics": {
            "events": {
                "topic_id": uuid_to_str(TOPIC_ID),
                "partitions": {"0": [0], "1": [0]},
                "configs": {"retention.ms": "3600000"},
            }
        },
    }
    assert len(data["topics"]["events"]["topic_id"]) == 22  # Kafka's base64url Uuid text


def test_partition_numbers_survive_as_ints(tmp_path: Path) -> None:
    # JSON object keys are strings: "10" must come back as partition 10, not sort before 2.
    store = open_store(tmp_path)
    store.create_topic(TopicRecord("t", TOPIC_ID, {p: [0] for p in range(12)}))
    assignment = open_store(tmp_path).topics()["t"].assignment
    assert sorted(assignment) == list(range(12))
    assert all(isinstance(p, int) for p in assignment)


def test_every_change_is_on_disk_when_the_call_returns(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic(record("a"))
    assert "a" in open_store(tmp_path).topics()
    store.add_partitions("a", {2: [0]})
    assert open_store(tmp_path).topics()["a"].partition_count == 3
    store.set_topic_configs("a", {"retention.ms": "5"})
    assert open_store(tmp_path).topics()["a"].configs == {"retention.ms": "5"}
    store.delete_topic("a")
    assert open_store(tmp_path).topics() == {}


def test_set_topic_configs_replaces_the_overrides(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic(record("a", retention_ms="1", segment_bytes="1048576"))
    store.set_topic_configs("a", {"retention.ms": "2"})
    assert open_store(tmp_path).topics()["a"].configs == {"retention.ms": "2"}
    store.set_topic_configs("a", {})
    assert open_store(tmp_path).topics()["a"].configs == {}


def test_errors(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic(record("a"))
    with pytest.raises(TopicAlreadyExistsError):
        store.create_topic(record("a"))
    for call in (
        lambda: store.delete_topic("missing"),
        lambda: store.add_partitions("missing", {0: [0]}),
        lambda: store.set_topic_configs("missing", {}),
    ):
        with pytest.raises(UnknownTopicOrPartitionError):
            call()
    assert snapshot(open_store(tmp_path)) == snapshot(store)


def test_unsupported_version_is_refused(tmp_path: Path) -> None:
    (tmp_path / METADATA_FILE).write_text(json.dumps({"version": 2, "topics": {}}))
    with pytest.raises(ValueError, match="unsupported metadata version 2"):
        open_store(tmp_path)


def test_minimal_file_loads(tmp_path: Path) -> None:
    (tmp_path / METADATA_FILE).write_text(
        json.dumps(
            {
                "version": 1,
                "topics": {"t": {"topic_id": uuid_to_str(TOPIC_ID), "partitions": {"0": [0]}}},
            }
        )
    )
    store = open_store(tmp_path)
    assert snapshot(store) == {"t": (TOPIC_ID, {0: [0]}, {})}
    assert store.allocate_producer_ids(5) == 0


# -- atomic rewrite ----------------------------------------------------------------------------


def test_rewrite_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic(record("a"))
    first_inode = store.path.stat().st_ino
    store.create_topic(record("b"))
    # A new file renamed over the old one, never the old one rewritten in place.
    assert store.path.stat().st_ino != first_inode
    assert sorted(p.name for p in tmp_path.iterdir()) == [METADATA_FILE]


def test_failed_write_leaves_the_file_intact(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic(record("a"))
    before = store.path.read_bytes()
    (tmp_path / (METADATA_FILE + ".tmp")).mkdir()  # the temporary file cannot be created
    with pytest.raises(OSError):
        store.create_topic(record("b"))
    assert store.path.read_bytes() == before
    assert set(open_store(tmp_path).topics()) == {"a"}


@pytest.mark.parametrize(
    "change",
    [
        lambda store: store.create_topic(record("b")),
        lambda store: store.add_partitions("a", {5: [0]}),
        lambda store: store.set_topic_configs("a", {"retention.ms": "1"}),
        lambda store: store.delete_topic("a"),
    ],
    ids=["create_topic", "add_partitions", "set_topic_configs", "delete_topic"],
)
def test_failed_write_leaves_the_memory_state_unchanged(
    tmp_path: Path, change: Callable[[LocalMetadataStore], None]
) -> None:
    store = open_store(tmp_path)
    store.create_topic(record("a"))
    before = snapshot(store)
    (tmp_path / (METADATA_FILE + ".tmp")).mkdir()
    with pytest.raises(OSError):
        change(store)
    assert snapshot(store) == before == snapshot(open_store(tmp_path))


def test_a_torn_temporary_file_is_ignored(tmp_path: Path) -> None:
    # A crash between writing .tmp and the rename leaves the old file authoritative.
    store = open_store(tmp_path)
    store.create_topic(record("a"))
    (tmp_path / (METADATA_FILE + ".tmp")).write_text('{"version": 1, "topics": {"b"')
    assert set(open_store(tmp_path).topics()) == {"a"}
    open_store(tmp_path).create_topic(record("c"))  # and the next write replaces it
    assert set(open_store(tmp_path).topics()) == {"a", "c"}
    assert not (tmp_path / (METADATA_FILE + ".tmp")).exists()


# -- producer id blocks ------------------------------------------------------------------------


def test_producer_id_blocks_are_consecutive(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    assert [store.allocate_producer_ids(n) for n in (1000, 1, 5, 1000)] == [0, 1000, 1001, 1006]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(1, 5000), max_size=4), min_size=1, max_size=5))
def test_producer_id_blocks_never_repeat_across_reloads(
    tmp_path_factory: pytest.TempPathFactory, runs: list[list[int]]
) -> None:
    directory = tmp_path_factory.mktemp("store")
    blocks: list[tuple[int, int]] = []
    for counts in runs:  # each run is a broker life: load, allocate, "crash"
        store = open_store(directory)
        blocks.extend((store.allocate_producer_ids(n), n) for n in counts)
    for (first, count), (next_first, _) in itertools.pairwise(blocks):
        assert next_first >= first + count
    assert all(first >= 0 for first, _ in blocks)


def test_producer_ids_survive_topic_changes(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.allocate_producer_ids(1000)
    store.create_topic(record("a"))
    store.delete_topic("a")
    assert open_store(tmp_path).allocate_producer_ids(1) == 1000


def test_topics_are_written_sorted_by_name(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.create_topic(record("b"))
    store.create_topic(record("a"))
    data = json.loads(store.path.read_text())
    assert list(data["topics"]) == ["a", "b"]


def test_broker_configs_round_trip_by_entity(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    assert store.broker_configs("<default>") == {}
    store.create_topic(record("events", 1))
    store.set_broker_configs("<default>", {"log.retention.ms": "1000"})
    store.set_broker_configs("0", {"message.max.bytes": "2000"})
    reloaded = open_store(tmp_path)
    assert reloaded.broker_configs("<default>") == {"log.retention.ms": "1000"}
    assert reloaded.broker_configs("0") == {"message.max.bytes": "2000"}
    assert "events" in reloaded.topics()  # topics kept
    reloaded.set_broker_configs("0", {})
    assert json.loads(reloaded.path.read_text())["broker_configs"] == {
        "<default>": {"log.retention.ms": "1000"}
    }
    # other changes keep them
    reloaded.allocate_producer_ids(5)
    assert open_store(tmp_path).broker_configs("<default>") == {"log.retention.ms": "1000"}
