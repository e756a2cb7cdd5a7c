"""The differential scenarios: request sequences run against Apache Kafka and Franz.

Each scenario exercises one API (its ``api``) at every version both brokers serve
(``common_versions``), usually with error cases beside the happy path. Setup requests
(creating a topic, waiting for its leader, producing records to fetch) go through
``Session.call`` and are not compared; what the scenario is about goes through
``Session.send`` and is compared field by field. Names are fresh per scenario and version
(``Session.name``), the same on both brokers, so both start from the same state.

Setup runs at the newest version both brokers serve (``top``). Produce v0-2 send message sets
(``message_set``: magic 0 for v0-1, magic 1 for v2, as Kafka's clients of those versions);
Fetch v0-3 get the stored v2 batches down-converted by each broker (magic 0 for v0-1, 1 for
v2-3), compared byte for byte. Compressed data is compared decoded (``decoded_records``):
each broker recompresses with its own codec library (Java's and Python's gzip write different
bytes for the same input), so only what the compressed bytes hold must be equal.
"""

from __future__ import annotations

from typing import Any, Final

from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from franz.protocol.records import RecordBatchBuilder, iter_batches, iter_records
from franz.protocol.records.compression import CompressionType
from franz.protocol.records.legacy import downconvert, iter_deep, iter_message_set
from tests.support.differential import Scenario, Session, common_versions

__all__ = ["SCENARIOS", "scenario_cases", "warm_up"]

#: Record timestamps are the producer's (CreateTime): fixed, so both logs hold the same bytes.
TIMESTAMP: Final = 1_700_000_000_000
#: ``producer_id`` -1 and friends: a request outside any producer (Kafka's NO_PRODUCER_ID).
NO_PRODUCER: Final = {"producer_id": -1, "producer_epoch": -1}

RESOURCE_TOPIC: Final = 2
RESOURCE_BROKER: Final = 4


def top(api: ApiKey) -> int:
    return common_versions(api)[-1]


def records(
    count: int = 3,
    *,
    size: int = 8,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    compression: CompressionType = CompressionType.NONE,
) -> bytes:
    builder = RecordBatchBuilder(
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        compression=compression,
    )
    for i in range(count):
        builder.append(TIMESTAMP + i, f"k{i}".encode(), f"v{i}".encode().ljust(size, b"."))
    return bytes(builder.build())


#: Produce versions below this one carry message sets (magic 0/1), not v2 batches.
FIRST_V2_PRODUCE: Final = 3


def message_set(
    produce_version: int,
    count: int = 3,
    *,
    size: int = 8,
    compression: CompressionType = CompressionType.NONE,
) -> bytes:
    """``records(count, size=size)`` as a Produce v0-2 client sends them: a message set of
    magic 0 (v0-1) or 1 (v2), offsets 0..count-1 (compressed: one wrapper message)."""
    magic = 0 if produce_version < 2 else 1
    return downconvert(records(count, size=size, compression=compression), magic, 0)


def _message(data: bytes) -> Any:
    (message,) = iter_message_set(data)
    entry: dict[str, Any] = {
        "offset": message.offset,
        "magic": message.magic,
        "attributes": message.attributes,
        "timestamp": message.timestamp,
        "key": message.key,
    }
    if message.codec:
        entry["inner"] = [_message_fields(m) for m in iter_deep(message)]
    else:
        entry["value"] = message.value
    return entry


def _message_fields(m: Any) -> dict[str, Any]:
    return {"offset": m.offset, "timestamp": m.timestamp, "key": m.key, "value": m.value}


def decoded_message_set(data: bytes) -> list[Any]:
    """The whole messages of a Fetch v0-3 record set, wrappers opened; the tail Kafka sends
    to fill the set's size (a message cut short, or an overflow batch at offset -1) and the
    compressed bytes themselves are left out."""
    out = []
    position = 0
    while position + 12 <= len(data):
        offset = int.from_bytes(data[position : position + 8], "big", signed=True)
        size = int.from_bytes(data[position + 8 : position + 12], "big", signed=True)
        end = position + 12 + size
        if offset < 0 or end > len(data):
            break
        out.append(_message(data[position:end]))
        position = end
    return out


def decoded_batches(data: bytes) -> list[Any]:
    """The v2 batches of a record set with their records decoded, without what depends on
    the compressed bytes (length, CRC)."""
    return [
        {
            "base_offset": batch.base_offset,
            "attributes": batch.attributes,
            "last_offset_delta": batch.last_offset_delta,
            "base_timestamp": batch.base_timestamp,
            "max_timestamp": batch.max_timestamp,
            "producer_id": batch.producer_id,
            "records": [_message_fields(r) for r in iter_records(batch)],
        }
        for batch in iter_batches(data)
    ]


def decoded_records(decode: Any) -> Any:
    """A ``select`` for ``Session.send``: every ``records`` of the answer decoded."""

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: decode(v) if k == "records" and isinstance(v, bytes) else walk(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk


def ok(response: Any) -> bool:
    return all(int(code) == 0 for code in _error_codes(response))


def _error_codes(value: Any) -> list[int]:
    import dataclasses

    codes = []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if f.name == "error_code":
                codes.append(int(item))
            else:
                codes += _error_codes(item)
    elif isinstance(value, tuple):
        for item in value:
            codes += _error_codes(item)
    return codes


def create_topic(
    s: Session, name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> None:
    """Create ``name`` (not compared) and wait until its partitions have a leader."""
    created = s.call(
        ApiKey.CREATE_TOPICS,
        top(ApiKey.CREATE_TOPICS),
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout": 30_000,
        },
    )
    assert ok(created), created
    wait_for_leaders(s, name, partitions)


def wait_for_leaders(s: Session, name: str, partitions: int) -> Any:
    def led(response: Any) -> bool:
        (topic,) = response.topics
        return (
            int(topic.error_code) == 0
            and len(topic.partitions) == partitions
            and all(p.leader_id >= 0 for p in topic.partitions)
        )

    return s.wait_until(
        ApiKey.METADATA,
        top(ApiKey.METADATA),
        {"topics": [{"name": name}], "allow_auto_topic_creation": False},
        led,
    )


def topic_id(s: Session, name: str) -> Any:
    return wait_for_leaders(s, name, 1).topics[0].topic_id


def produce(s: Session, topic: str, data: bytes, partition: int = 0) -> None:
    response = s.call(ApiKey.PRODUCE, top(ApiKey.PRODUCE), produce_request(topic, data, partition))
    assert ok(response), response


def produce_request(topic: str, data: bytes, partition: int = 0, acks: int = -1) -> dict[str, Any]:
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout": 10_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": data}]}],
    }


def warm_up(s: Session) -> None:
    """Wait until the group and transaction coordinators answer (not compared)."""
    wait_for_coordinator(s, "warm-up")
    s.wait_until(
        ApiKey.INIT_PRODUCER_ID,
        top(ApiKey.INIT_PRODUCER_ID),
        {"transactional_id": None, "transaction_timeout": 60_000, **NO_PRODUCER},
        ok,
    )


# -- scenarios -------------------------------------------------------------------------------


def api_versions(s: Session, v: int) -> None:
    def served(response: Any) -> Any:
        # Kafka also lists the APIs Franz does not serve (JUSTIFIED_DIFFERENCES): compare the
        # ranges of those both serve.
        keys = [k for k in response["api_keys"] if k["api_key"] in SUPPORTED_APIS]
        return {**response, "api_keys": keys}

    s.send(
        ApiKey.API_VERSIONS,
        {"client_software_name": "franz-differential", "client_software_version": "1.0"},
        select=served,
    )


def metadata(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic, partitions=2)
    request: dict[str, Any] = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    s.send(ApiKey.METADATA, request, label="existing topic")
    if v >= 4:  # v0-3 always auto-create
        unknown = {"topics": [{"name": s.name("unknown")}], "allow_auto_topic_creation": False}
        s.send(ApiKey.METADATA, unknown, label="unknown topic")
    if v >= 1:  # an empty list: no topics (v0's empty list means all topics)
        s.send(ApiKey.METADATA, {"topics": [], "allow_auto_topic_creation": False}, label="none")


def produce_scenario(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic, configs={"max.message.bytes": "300"})

    def data(count: int = 3, size: int = 8) -> bytes:
        if v < FIRST_V2_PRODUCE:
            return message_set(v, count, size=size)
        return records(count, size=size)

    s.send(ApiKey.PRODUCE, produce_request(topic, data()), label="append")
    s.send(ApiKey.PRODUCE, produce_request(topic, data(1), partition=0), label="append again")
    s.send(ApiKey.PRODUCE, produce_request(topic, data(), partition=7), label="no partition")
    s.send(ApiKey.PRODUCE, produce_request(s.name("unknown"), data()), label="unknown topic")
    s.send(ApiKey.PRODUCE, produce_request(topic, data(5, size=200)), label="too large")
    corrupt = bytearray(data())
    corrupt[-1] ^= 0xFF  # the last record (message) byte: covered by the CRC
    s.send(ApiKey.PRODUCE, produce_request(topic, bytes(corrupt)), label="bad crc")
    s.send(ApiKey.PRODUCE, produce_request(topic, data(), acks=2), label="invalid acks")
    if v < FIRST_V2_PRODUCE:  # what was stored, as a v4+ consumer reads it
        tid = topic_id(s, topic)
        fetch_top = top(ApiKey.FETCH)
        s.send(
            ApiKey.FETCH,
            fetch_request(s, fetch_top, topic, 0, tid),
            version=fetch_top,
            label="stored",
        )
        gzip = message_set(v, compression=CompressionType.GZIP)
        appended = s.send(ApiKey.PRODUCE, produce_request(topic, gzip), label="gzip message set")
        (answer,) = appended.responses
        (partition,) = answer.partition_responses
        s.send(
            ApiKey.FETCH,
            fetch_request(s, fetch_top, topic, partition.base_offset, tid),
            version=fetch_top,
            label="stored gzip, decoded",
            select=decoded_records(decoded_batches),
        )


def produce_idempotent(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic)
    init = s.call(
        ApiKey.INIT_PRODUCER_ID,
        top(ApiKey.INIT_PRODUCER_ID),
        {"transactional_id": None, "transaction_timeout": 60_000, **NO_PRODUCER},
    )
    assert ok(init), init
    pid, epoch = init.producer_id, init.producer_epoch

    def batch(sequence: int, epoch: int = epoch) -> bytes:
        return records(2, producer_id=pid, producer_epoch=epoch, base_sequence=sequence)

    s.send(ApiKey.PRODUCE, produce_request(topic, batch(0)), label="sequence 0")
    s.send(ApiKey.PRODUCE, produce_request(topic, batch(0)), label="duplicate")
    s.send(ApiKey.PRODUCE, produce_request(topic, batch(5)), label="out of order sequence")
    s.send(ApiKey.PRODUCE, produce_request(topic, batch(2, epoch + 3)), label="future epoch")
    s.send(ApiKey.PRODUCE, produce_request(topic, batch(0, epoch)), label="stale epoch")


def fetch_request(
    s: Session,
    v: int,
    topic: str,
    offset: int,
    tid: Any = None,
    partition: int = 0,
    epoch: int = -1,
    last_fetched_epoch: int = -1,
) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "topic_id": tid,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": epoch,
                        "fetch_offset": offset,
                        "last_fetched_epoch": last_fetched_epoch,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def fetch(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic)
    produce(s, topic, records())
    produce(s, topic, records(2))
    tid = topic_id(s, topic)
    s.send(ApiKey.FETCH, fetch_request(s, v, topic, 0, tid), label="from 0")
    s.send(ApiKey.FETCH, fetch_request(s, v, topic, 3, tid), label="from 3")
    s.send(ApiKey.FETCH, fetch_request(s, v, topic, 5, tid), label="at the end")
    s.send(ApiKey.FETCH, fetch_request(s, v, topic, 99, tid), label="out of range")
    s.send(ApiKey.FETCH, fetch_request(s, v, topic, 0, tid, partition=3), label="no partition")
    if v >= 9:  # KIP-320: the leader's epoch is 0 on both; 1 is one it does not know yet
        s.send(ApiKey.FETCH, fetch_request(s, v, topic, 0, tid, epoch=1), label="future epoch")
    if v < 13:  # by name; v13+ name topics by id, and an unknown id is a different case
        s.send(ApiKey.FETCH, fetch_request(s, v, s.name("unknown"), 0), label="unknown topic")
    if v >= 12:  # KIP-320 truncation on fetch: the leader's epoch 0 spans [0, 5)
        for label, offset, last in (
            ("last fetched epoch 0 at 3", 3, 0),
            ("last fetched epoch 0 past the end", 9, 0),
            ("last fetched epoch unknown", 3, 4),
        ):
            s.send(
                ApiKey.FETCH,
                fetch_request(s, v, topic, offset, tid, last_fetched_epoch=last),
                label=label,
            )
    if v < 4:  # a compressed batch, down-converted to one wrapper message by each broker
        produce(s, topic, records(4, compression=CompressionType.GZIP))
        s.send(
            ApiKey.FETCH,
            fetch_request(s, v, topic, 5, tid),
            label="gzip batch, decoded",
            select=decoded_records(decoded_message_set),
        )


def fetch_sessions(s: Session, v: int) -> None:
    """Incremental fetch sessions (KIP-227, v7+): a full fetch creates a session; incremental
    ones answer only partitions with news; a wrong epoch; a session whose partitions are all
    forgotten is closed (answered sessionless), so using it again is an unknown session."""
    topic = s.name()
    create_topic(s, topic, partitions=2)
    tid = wait_for_leaders(s, topic, 2).topics[0].topic_id
    produce(s, topic, records(3), partition=0)

    def request(
        session: tuple[int, int], offsets: dict[int, int], forget: tuple[int, ...] = ()
    ) -> dict[str, Any]:
        return {
            "replica_id": -1,
            "max_wait": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": session[0],
            "session_epoch": session[1],
            "topics": [
                {
                    "topic": topic,
                    "topic_id": tid,
                    "partitions": [
                        {
                            "partition": p,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                        for p, offset in offsets.items()
                    ],
                }
            ]
            if offsets
            else [],
            "forgotten_topics_data": (
                [{"topic": topic, "topic_id": tid, "partitions": list(forget)}] if forget else []
            ),
            "rack_id": "",
        }

    def with_session_flag(response: Any) -> Any:
        # session_id is random (MAY_DIFFER): compare whether there is one.
        return {**response, "has_session": response["session_id"] != 0}

    def step(label: str, session: tuple[int, int], offsets: dict[int, int], **kw: Any) -> Any:
        fetch = request(session, offsets, **kw)
        return s.send(ApiKey.FETCH, fetch, label=label, select=with_session_flag)

    sid = int(step("full, new session", (0, 0), {0: 0, 1: 0}).session_id)
    step("incremental, no news", (sid, 1), {0: 3})
    produce(s, topic, records(2), partition=1)
    step("incremental, records of a partition not in the request", (sid, 2), {})
    step("wrong epoch", (sid, 7), {})
    step("every partition forgotten", (sid, 3), {}, forget=(0, 1))
    step("the closed session", (sid, 4), {})
    step("sessionless", (sid, -1), {0: 0})


def list_offsets(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic)
    produce(s, topic, records(3))
    produce(s, topic, records(2))
    for label, timestamp in (
        ("latest", -1),
        ("earliest", -2),
        ("max timestamp", -3),
        ("by timestamp", TIMESTAMP + 1),
        ("after every timestamp", TIMESTAMP + 100),
    ):
        if timestamp == -3 and v < 7:
            continue
        s.send(ApiKey.LIST_OFFSETS, list_offsets_request(topic, timestamp), label=label)
    s.send(ApiKey.LIST_OFFSETS, list_offsets_request(s.name("unknown"), -1), label="unknown topic")
    s.send(ApiKey.LIST_OFFSETS, list_offsets_request(topic, -1, partition=4), label="no partition")
    if v >= 4:  # KIP-320
        future = list_offsets_request(topic, -1, epoch=3)
        s.send(ApiKey.LIST_OFFSETS, future, label="future leader epoch")


def list_offsets_request(
    topic: str, timestamp: int, partition: int = 0, epoch: int = -1
) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": partition,
                        "current_leader_epoch": epoch,
                        "timestamp": timestamp,
                        "max_num_offsets": 1,
                    }
                ],
            }
        ],
    }


def create_topics(s: Session, v: int) -> None:
    def request(name: str, partitions: int = 2, **more: Any) -> dict[str, Any]:
        return {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "configs": more.pop("configs", []),
                }
            ],
            "timeout": 30_000,
            **more,
        }

    configs = [{"name": "cleanup.policy", "value": "compact"}]
    s.send(ApiKey.CREATE_TOPICS, request(s.name(), configs=configs), label="create")
    s.send(ApiKey.CREATE_TOPICS, request(s.name()), label="already exists")
    s.send(ApiKey.CREATE_TOPICS, request(s.name("zero"), 0), label="zero partitions")
    bad = [{"name": "cleanup.policy", "value": "sometimes"}]
    s.send(ApiKey.CREATE_TOPICS, request(s.name("bad"), configs=bad), label="invalid config")
    unknown = [{"name": "no.such.config", "value": "1"}]
    s.send(ApiKey.CREATE_TOPICS, request(s.name("unk"), configs=unknown), label="unknown config")
    s.send(ApiKey.CREATE_TOPICS, request("bad/name"), label="invalid name")
    if v >= 1:
        only = request(s.name("validate"), validate_only=True)
        s.send(ApiKey.CREATE_TOPICS, only, label="validate only")


def delete_topics(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic)
    names = [topic, s.name("unknown")]
    s.send(
        ApiKey.DELETE_TOPICS,
        {"topic_names": names, "topics": [{"name": n} for n in names], "timeout": 30_000},
    )


def create_partitions(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic)

    def request(count: int, name: str = topic, validate_only: bool = False) -> dict[str, Any]:
        return {
            "topics": [{"name": name, "count": count, "assignments": None}],
            "timeout": 30_000,
            "validate_only": validate_only,
        }

    s.send(ApiKey.CREATE_PARTITIONS, request(3, validate_only=True), label="validate only")
    s.send(ApiKey.CREATE_PARTITIONS, request(3), label="grow")
    s.send(ApiKey.CREATE_PARTITIONS, request(2), label="shrink")
    s.send(ApiKey.CREATE_PARTITIONS, request(3), label="same count")
    s.send(ApiKey.CREATE_PARTITIONS, request(2, s.name("unknown")), label="unknown topic")


def describe_configs_request(
    name: str, keys: list[str] | None, resource_type: int = RESOURCE_TOPIC
) -> dict[str, Any]:
    return {
        "resources": [
            {"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}
        ],
        "include_synonyms": True,
        "include_documentation": False,
    }


def describe_configs(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic, configs={"retention.ms": "1234567", "cleanup.policy": "compact"})
    keys = ["retention.ms", "cleanup.policy", "segment.bytes", "min.insync.replicas"]
    s.send(ApiKey.DESCRIBE_CONFIGS, describe_configs_request(topic, keys), label="some keys")
    s.send(ApiKey.DESCRIBE_CONFIGS, describe_configs_request(topic, None), label="all keys")
    unknown = describe_configs_request(s.name("unknown"), None)
    s.send(ApiKey.DESCRIBE_CONFIGS, unknown, label="unknown topic")
    broker_keys = ["log.retention.hours", "num.partitions", "auto.create.topics.enable"]
    broker = describe_configs_request("0", broker_keys, RESOURCE_BROKER)
    s.send(ApiKey.DESCRIBE_CONFIGS, broker, label="broker keys")


def _describe_after(s: Session, topic: str) -> None:
    keys = ["retention.ms", "cleanup.policy", "max.message.bytes"]
    s.send(
        ApiKey.DESCRIBE_CONFIGS,
        describe_configs_request(topic, keys),
        version=top(ApiKey.DESCRIBE_CONFIGS),
        label="described after",
    )


def alter_configs(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic, configs={"cleanup.policy": "compact"})

    def request(configs: dict[str, str], name: str = topic, validate: bool = False) -> Any:
        return {
            "resources": [
                {
                    "resource_type": RESOURCE_TOPIC,
                    "resource_name": name,
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
            ],
            "validate_only": validate,
        }

    s.send(ApiKey.ALTER_CONFIGS, request({"retention.ms": "5000"}, validate=True), label="validate")
    s.send(ApiKey.ALTER_CONFIGS, request({"retention.ms": "5000"}), label="set (replaces all)")
    _describe_after(s, topic)
    s.send(ApiKey.ALTER_CONFIGS, request({"retention.ms": "soon"}), label="invalid value")
    s.send(ApiKey.ALTER_CONFIGS, request({"no.such.config": "1"}), label="unknown key")
    s.send(ApiKey.ALTER_CONFIGS, request({"retention.ms": "1"}, s.name("unknown")), label="unknown")


def incremental_alter_configs(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic, configs={"cleanup.policy": "compact"})
    set_, delete, append = 0, 1, 2

    def request(ops: list[tuple[str, int, str | None]], name: str = topic) -> Any:
        return {
            "resources": [
                {
                    "resource_type": RESOURCE_TOPIC,
                    "resource_name": name,
                    "configs": [
                        {"name": k, "config_operation": op, "value": value} for k, op, value in ops
                    ],
                }
            ],
            "validate_only": False,
        }

    s.send(ApiKey.INCREMENTAL_ALTER_CONFIGS, request([("retention.ms", set_, "7000")]), label="set")
    s.send(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        request([("cleanup.policy", append, "delete"), ("retention.ms", delete, None)]),
        label="append and delete",
    )
    _describe_after(s, topic)
    s.send(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        request([("max.message.bytes", set_, "-5x")]),
        label="invalid value",
    )
    s.send(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        request([("retention.ms", set_, "1"), ("retention.ms", delete, None)]),
        label="duplicate key",
    )
    s.send(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        request([("retention.ms", set_, "1")], s.name("unknown")),
        label="unknown topic",
    )
    bad_default = request([("message.max.bytes", set_, "lots")], "")
    bad_default["resources"][0]["resource_type"] = RESOURCE_BROKER
    s.send(ApiKey.INCREMENTAL_ALTER_CONFIGS, bad_default, label="invalid broker default")


def delete_records(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic, partitions=2)
    produce(s, topic, records(5))

    def request(offset: int, partition: int = 0, name: str = topic) -> Any:
        return {
            "topics": [
                {"name": name, "partitions": [{"partition_index": partition, "offset": offset}]}
            ],
            "timeout": 30_000,
        }

    s.send(ApiKey.DELETE_RECORDS, request(2), label="before 2")
    s.send(ApiKey.DELETE_RECORDS, request(1), label="before 1 (already gone)")
    s.send(ApiKey.DELETE_RECORDS, request(-1), label="up to the high watermark")
    s.send(ApiKey.DELETE_RECORDS, request(9), label="past the high watermark")
    s.send(ApiKey.DELETE_RECORDS, request(0, partition=1), label="empty partition")
    s.send(ApiKey.DELETE_RECORDS, request(0, partition=5), label="no partition")
    s.send(ApiKey.DELETE_RECORDS, request(0, name=s.name("unknown")), label="unknown topic")


def init_producer_id(s: Session, v: int) -> None:
    request = {"transactional_id": None, "transaction_timeout": 60_000, **NO_PRODUCER}
    first = s.send(ApiKey.INIT_PRODUCER_ID, request, label="new producer")
    if v >= 3:  # KIP-360: bump the epoch of a known producer id
        again = {**request, "producer_id": first.producer_id, "producer_epoch": 0}
        s.send(ApiKey.INIT_PRODUCER_ID, again, label="bump epoch")


def describe_cluster(s: Session, v: int) -> None:
    s.send(
        ApiKey.DESCRIBE_CLUSTER,
        {"include_cluster_authorized_operations": False, "endpoint_type": 1},
    )


def describe_log_dirs(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic, partitions=2)
    request = {"topics": [{"topic": topic, "partitions": [0, 1, 9]}]}
    s.send(ApiKey.DESCRIBE_LOG_DIRS, request, label="topic")
    unknown = {"topics": [{"topic": s.name("unknown"), "partitions": [0]}]}
    s.send(ApiKey.DESCRIBE_LOG_DIRS, unknown, label="unknown topic")


def alter_replica_log_dirs(s: Session, v: int) -> None:
    """What one broker with one log dir can compare: a move to the dir the replica is in
    (nothing to do), paths that are not a log dir (relative, unknown), partitions and topics
    the broker does not have, a topic name too long for a ``-future`` dir, and a partition
    named under two paths (the last one counts)."""
    topic = s.name()
    create_topic(s, topic, partitions=2)
    described = s.call(ApiKey.DESCRIBE_LOG_DIRS, top(ApiKey.DESCRIBE_LOG_DIRS), {"topics": []})
    (own,) = [result.log_dir for result in described.results]

    def request(*moves: tuple[str, str, list[int]]) -> dict[str, Any]:
        return {
            "dirs": [
                {"path": path, "topics": [{"name": name, "partitions": partitions}]}
                for path, name, partitions in moves
            ]
        }

    s.send(ApiKey.ALTER_REPLICA_LOG_DIRS, request((own, topic, [0, 1, 9])), label="own dir")
    s.send(ApiKey.ALTER_REPLICA_LOG_DIRS, request(("logs", topic, [0])), label="relative path")
    unknown_dir = "/nonexistent/franz-differential-log-dir"
    s.send(ApiKey.ALTER_REPLICA_LOG_DIRS, request((unknown_dir, topic, [0])), label="unknown dir")
    s.send(
        ApiKey.ALTER_REPLICA_LOG_DIRS,
        request((own, s.name("unknown"), [0])),
        label="unknown topic",
    )
    s.send(
        ApiKey.ALTER_REPLICA_LOG_DIRS, request((own, "t" * 249, [0])), label="topic name too long"
    )
    s.send(
        ApiKey.ALTER_REPLICA_LOG_DIRS,
        request((unknown_dir, topic, [1]), (own, topic, [1])),
        label="same partition, own dir last",
    )
    s.send(
        ApiKey.ALTER_REPLICA_LOG_DIRS,
        request((own, topic, [1]), (unknown_dir, topic, [1])),
        label="same partition, unknown dir last",
    )


def elect_leaders(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic)
    request = {
        "election_type": 0,
        "topic_partitions": [{"topic": topic, "partitions": [0, 4]}],
        "timeout": 30_000,
    }
    s.send(ApiKey.ELECT_LEADERS, request, label="preferred")
    unknown = {**request, "topic_partitions": [{"topic": s.name("unknown"), "partitions": [0]}]}
    s.send(ApiKey.ELECT_LEADERS, unknown, label="unknown topic")


def reassign_request(
    moves: list[tuple[str, list[tuple[int, list[int] | None]]]],
) -> dict[str, Any]:
    """An AlterPartitionReassignments request: per topic, (partition, target or None)."""
    return {
        "timeout": 30_000,
        "topics": [
            {
                "name": topic,
                "partitions": [{"partition_index": p, "replicas": r} for p, r in partitions],
            }
            for topic, partitions in moves
        ],
    }


def alter_partition_reassignments(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic, partitions=2)
    api = ApiKey.ALTER_PARTITION_REASSIGNMENTS
    s.send(api, reassign_request([(topic, [(0, None)])]), label="cancel, none in progress")
    s.send(api, reassign_request([(topic, [(0, [])])]), label="empty replica list")
    s.send(api, reassign_request([(topic, [(0, [0, 0])])]), label="duplicate replicas")
    s.send(api, reassign_request([(topic, [(0, [-1])])]), label="negative broker id")
    s.send(api, reassign_request([(topic, [(0, [7, 0])])]), label="broker not alive")
    unknown = s.name("unknown")
    s.send(api, reassign_request([(unknown, [(0, [0]), (1, None)])]), label="unknown topic")
    s.send(api, reassign_request([(topic, [(5, [0]), (6, [9])])]), label="unknown partition")
    s.send(api, reassign_request([(topic, [(0, [0]), (1, [0])])]), label="to its replicas")
    # Complete at once, with the leader epoch bumped (updateLeaderEpochAndSendRequest); the
    # answer does not wait for the broker's metadata.
    metadata_request = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    s.wait_until(
        ApiKey.METADATA,
        top(ApiKey.METADATA),
        metadata_request,
        lambda r: all(p.leader_epoch == 1 for p in r.topics[0].partitions),
    )
    s.send(ApiKey.METADATA, metadata_request, version=top(ApiKey.METADATA), label="after")


def list_partition_reassignments(s: Session, v: int) -> None:
    topic = s.name()
    create_topic(s, topic)
    api = ApiKey.LIST_PARTITION_REASSIGNMENTS
    s.send(api, {"timeout": 30_000, "topics": None}, label="all")
    named = [
        {"name": topic, "partition_indexes": [0, 3]},
        {"name": s.name("unknown"), "partition_indexes": [0]},
    ]
    s.send(api, {"timeout": 30_000, "topics": named}, label="named")
    s.send(api, {"timeout": 30_000, "topics": []}, label="none named")


def find_coordinator(s: Session, v: int) -> None:
    group = s.name()
    s.send(ApiKey.FIND_COORDINATOR, {"key": group, "key_type": 0, "coordinator_keys": [group]})
    if v >= 1:
        bad = {"key": group, "key_type": 7, "coordinator_keys": [group]}
        s.send(ApiKey.FIND_COORDINATOR, bad, label="invalid key type")


# -- groups ----------------------------------------------------------------------------------

SUBSCRIPTION: Final = b"\x00\x01\x00\x00\x00\x01\x00\x05topic\xff\xff\xff\xff"
ASSIGNMENT: Final = (
    b"\x00\x01\x00\x00\x00\x01\x00\x05topic\x00\x00\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"
)


def wait_for_coordinator(s: Session, group: str) -> None:
    s.wait_until(
        ApiKey.FIND_COORDINATOR,
        top(ApiKey.FIND_COORDINATOR),
        {"key_type": 0, "coordinator_keys": [group]},
        lambda r: all(int(c.error_code) == 0 for c in r.coordinators),
    )


def join(group: str, member_id: str = "") -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout": 30_000,
        "rebalance_timeout": 30_000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": SUBSCRIPTION}],
        "reason": None,
    }


def joined_member(s: Session, group: str, *, record: bool, version: int | None = None) -> Any:
    """Join ``group`` as its only member (two rounds from JoinGroup v4: MEMBER_ID_REQUIRED)."""
    v = top(ApiKey.JOIN_GROUP) if version is None else version

    def call(request: Any, label: str) -> Any:
        if record:
            return s.send(ApiKey.JOIN_GROUP, request, version=v, label=label)
        return s.call(ApiKey.JOIN_GROUP, v, request)

    wait_for_coordinator(s, group)
    response = call(join(group), "join")
    if int(response.error_code) == 79:  # MEMBER_ID_REQUIRED
        response = call(join(group, response.member_id), "join with member id")
    return response


def sync(s: Session, group: str, generation: int, member: str) -> dict[str, Any]:
    return {
        "group_id": group,
        "generation_id": generation,
        "member_id": member,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [{"member_id": member, "assignment": ASSIGNMENT}],
    }


def stable_member(s: Session, group: str) -> tuple[int, str]:
    joined = joined_member(s, group, record=False)
    assert int(joined.error_code) == 0, joined
    synced = s.call(
        ApiKey.SYNC_GROUP,
        top(ApiKey.SYNC_GROUP),
        sync(s, group, joined.generation_id, joined.member_id),
    )
    assert int(synced.error_code) == 0, synced
    return joined.generation_id, joined.member_id


def join_group(s: Session, v: int) -> None:
    group = s.name()
    joined = joined_member(s, group, record=True, version=v)
    rejoin = join(group, joined.member_id)
    s.send(ApiKey.JOIN_GROUP, rejoin, label="rejoin, same metadata")
    s.send(ApiKey.JOIN_GROUP, join(group, "unknown-member"), label="unknown member")
    other = {**join(s.name("other")), "protocol_type": ""}
    wait_for_coordinator(s, s.name("other"))
    s.send(ApiKey.JOIN_GROUP, other, label="empty protocol type")


def sync_group(s: Session, v: int) -> None:
    group = s.name()
    joined = joined_member(s, group, record=False)
    member, generation = joined.member_id, joined.generation_id
    s.send(ApiKey.SYNC_GROUP, sync(s, group, generation + 1, member), label="illegal generation")
    s.send(ApiKey.SYNC_GROUP, sync(s, group, generation, "nobody"), label="unknown member")
    s.send(ApiKey.SYNC_GROUP, sync(s, group, generation, member), label="sync")
    s.send(ApiKey.SYNC_GROUP, sync(s, s.name("unknown"), 1, member), label="unknown group")


def heartbeat(s: Session, v: int) -> None:
    group = s.name()
    generation, member = stable_member(s, group)

    def request(generation: int, member: str, name: str = group) -> Any:
        return {"group_id": name, "generation_id": generation, "member_id": member}

    s.send(ApiKey.HEARTBEAT, request(generation, member), label="heartbeat")
    s.send(ApiKey.HEARTBEAT, request(generation + 5, member), label="illegal generation")
    s.send(ApiKey.HEARTBEAT, request(generation, "nobody"), label="unknown member")
    s.send(ApiKey.HEARTBEAT, request(1, "nobody", s.name("unknown")), label="unknown group")


def leave_group(s: Session, v: int) -> None:
    group = s.name()
    _, member = stable_member(s, group)

    def request(member: str, name: str = group) -> Any:
        return {"group_id": name, "member_id": member, "members": [{"member_id": member}]}

    s.send(ApiKey.LEAVE_GROUP, request("nobody"), label="unknown member")
    s.send(ApiKey.LEAVE_GROUP, request(member), label="leave")
    s.send(ApiKey.LEAVE_GROUP, request(member, s.name("unknown")), label="unknown group")


def commit_request(
    group: str, generation: int, member: str, topic: str, offset: int
) -> dict[str, Any]:
    return {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member,
        "group_instance_id": None,
        "retention_time": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "meta",
                    }
                ],
            }
        ],
    }


def offset_commit(s: Session, v: int) -> None:
    topic, group = s.name(), s.name()
    create_topic(s, topic)
    generation, member = stable_member(s, group)
    s.send(
        ApiKey.OFFSET_COMMIT, commit_request(group, generation, member, topic, 3), label="commit"
    )
    s.send(
        ApiKey.OFFSET_COMMIT,
        commit_request(group, generation + 2, member, topic, 3),
        label="illegal generation",
    )
    s.send(
        ApiKey.OFFSET_COMMIT,
        commit_request(group, generation, "nobody", topic, 3),
        label="unknown member",
    )
    simple = s.name("simple")
    wait_for_coordinator(s, simple)
    s.send(ApiKey.OFFSET_COMMIT, commit_request(simple, -1, "", topic, 4), label="simple group")
    s.send(
        ApiKey.OFFSET_COMMIT,
        commit_request(simple, -1, "", s.name("unknown"), 4),
        label="unknown topic",
    )


def fetch_offsets_request(group: str, topic: str | None) -> dict[str, Any]:
    topics = None if topic is None else [{"name": topic, "partition_indexes": [0, 1]}]
    return {
        "group_id": group,
        "topics": topics,
        "groups": [{"group_id": group, "topics": topics}],
        "require_stable": False,
    }


def offset_fetch(s: Session, v: int) -> None:
    topic, group = s.name(), s.name()
    create_topic(s, topic)
    wait_for_coordinator(s, group)
    top_commit = top(ApiKey.OFFSET_COMMIT)
    committed = s.call(ApiKey.OFFSET_COMMIT, top_commit, commit_request(group, -1, "", topic, 2))
    assert ok(committed), committed
    s.send(ApiKey.OFFSET_FETCH, fetch_offsets_request(group, topic), label="partitions")
    if v >= 2:
        s.send(ApiKey.OFFSET_FETCH, fetch_offsets_request(group, None), label="all")
    unknown = s.name("unknown")
    wait_for_coordinator(s, unknown)
    s.send(ApiKey.OFFSET_FETCH, fetch_offsets_request(unknown, topic), label="unknown group")


def describe_groups(s: Session, v: int) -> None:
    group = s.name()
    stable_member(s, group)
    request = {"groups": [group, s.name("unknown")], "include_authorized_operations": False}
    s.send(ApiKey.DESCRIBE_GROUPS, request)


def list_groups(s: Session, v: int) -> None:
    group = s.name()
    stable_member(s, group)

    def mine(response: Any) -> Any:
        # The session's Kafka holds other tests' groups: keep this scenario's.
        return {**response, "groups": [g for g in response["groups"] if g["group_id"] == group]}

    s.send(ApiKey.LIST_GROUPS, {"states_filter": [], "types_filter": []}, select=mine)
    if v >= 4:
        stable = {"states_filter": ["Stable"], "types_filter": []}
        s.send(ApiKey.LIST_GROUPS, stable, label="stable", select=mine)
        empty = {"states_filter": ["Empty"], "types_filter": []}
        s.send(ApiKey.LIST_GROUPS, empty, label="empty", select=mine)


def delete_groups(s: Session, v: int) -> None:
    live, empty = s.name("live"), s.name("empty")
    create_topic(s, s.name())
    stable_member(s, live)
    wait_for_coordinator(s, empty)
    commit = commit_request(empty, -1, "", s.name(), 1)
    assert ok(s.call(ApiKey.OFFSET_COMMIT, top(ApiKey.OFFSET_COMMIT), commit))
    groups = [live, empty, s.name("unknown")]
    s.send(ApiKey.DELETE_GROUPS, {"groups_names": groups})


def offset_delete(s: Session, v: int) -> None:
    topic, group = s.name(), s.name()
    create_topic(s, topic)
    wait_for_coordinator(s, group)
    commit = commit_request(group, -1, "", topic, 1)
    assert ok(s.call(ApiKey.OFFSET_COMMIT, top(ApiKey.OFFSET_COMMIT), commit))

    def request(name: str) -> Any:
        return {
            "group_id": name,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}],
        }

    s.send(ApiKey.OFFSET_DELETE, request(group), label="delete")
    s.send(ApiKey.OFFSET_DELETE, request(s.name("unknown")), label="unknown group")


def offset_for_leader_epoch(s: Session, v: int) -> None:
    """Both brokers lead the new topic's partitions at leader epoch 0 from offset 0."""
    topic = s.name()
    create_topic(s, topic, partitions=2)
    produce(s, topic, records(3))
    produce(s, topic, records(2))

    def request(
        partitions: list[tuple[int, int, int]], name: str = topic, replica_id: int = -1
    ) -> dict[str, Any]:
        """``partitions``: (partition, leader_epoch, current_leader_epoch)."""
        return {
            "replica_id": replica_id,
            "topics": [
                {
                    "topic": name,
                    "partitions": [
                        {"partition": p, "leader_epoch": e, "current_leader_epoch": c}
                        for p, e, c in partitions
                    ],
                }
            ],
        }

    epochs = request([(0, 0, -1), (1, 0, -1), (0, -1, -1), (0, 1, -1)])
    s.send(ApiKey.OFFSET_FOR_LEADER_EPOCH, epochs, label="latest, undefined and future epochs")
    s.send(ApiKey.OFFSET_FOR_LEADER_EPOCH, request([(0, 0, -1), (4, 0, -1)]), label="no partition")
    unknown = request([(0, 0, -1)], name=s.name("unknown"))
    s.send(ApiKey.OFFSET_FOR_LEADER_EPOCH, unknown, label="unknown topic")
    if v >= 2:  # KIP-320: the leaders' epoch is 0; 1 is one they do not know yet
        fenced = request([(0, 0, 0), (0, 0, 1), (1, 0, 1)])
        s.send(ApiKey.OFFSET_FOR_LEADER_EPOCH, fenced, label="current leader epoch")
    if v >= 3:  # the debugging consumer and a replica id
        for replica_id in (-2, 5):
            s.send(
                ApiKey.OFFSET_FOR_LEADER_EPOCH,
                request([(0, 0, -1)], replica_id=replica_id),
                label=f"replica id {replica_id}",
            )


def _quota_entry(entity: list[tuple[str, str | None]], ops: list[tuple[str, float | None]]) -> Any:
    return {
        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
        "ops": [{"key": k, "value": v or 0.0, "remove": v is None} for k, v in ops],
    }


def alter_client_quotas(s: Session, v: int) -> None:
    """One entity per request (Kafka answers a request's entities in hash order). Only
    entities named for this scenario: the Kafka broker is shared by the session."""
    client, user = s.name("client"), s.name("user")
    cases: list[tuple[str, list[tuple[str, str | None]], list[tuple[str, float | None]]]] = [
        (
            "set",
            [("client-id", client)],
            [("producer_byte_rate", 1048576.0), ("request_percentage", 12.5)],
        ),
        (
            "user and default client",
            [("user", user), ("client-id", None)],
            [("consumer_byte_rate", 2048.0)],
        ),
        ("unknown key", [("client-id", client)], [("retention.ms", 1.0)]),
        ("not a long", [("client-id", client)], [("consumer_byte_rate", 1.5)]),
        ("negative long", [("user", user)], [("producer_byte_rate", -5.0)]),
        ("empty entity", [], [("producer_byte_rate", 1.0)]),
        ("empty name", [("user", "")], [("producer_byte_rate", 1.0)]),
        ("unknown entity type", [("group", client)], [("producer_byte_rate", 1.0)]),
        (
            "remove",
            [("client-id", client)],
            [("producer_byte_rate", None), ("request_percentage", None)],
        ),
        ("remove user", [("user", user), ("client-id", None)], [("consumer_byte_rate", None)]),
    ]
    for label, entity, ops in cases:
        request = {"entries": [_quota_entry(entity, ops)], "validate_only": False}
        s.send(ApiKey.ALTER_CLIENT_QUOTAS, request, label=label)
    validate = {
        "entries": [_quota_entry([("client-id", client)], [("producer_byte_rate", 5.0)])],
        "validate_only": True,
    }
    s.send(ApiKey.ALTER_CLIENT_QUOTAS, validate, label="validate only")
    exact = {
        "components": [{"entity_type": "client-id", "match_type": 0, "match": client}],
        "strict": True,
    }
    s.send(
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        exact,
        version=top(ApiKey.DESCRIBE_CLIENT_QUOTAS),
        label="nothing left",
    )


def describe_client_quotas(s: Session, v: int) -> None:
    """Filters that match only this scenario's entities (the Kafka broker is shared)."""
    client, user = s.name("client"), s.name("user")
    sets = [
        (
            [("client-id", client)],
            [("producer_byte_rate", 1048576.0), ("request_percentage", 50.0)],
        ),
        ([("user", user)], [("consumer_byte_rate", 4096.0)]),
        ([("user", user), ("client-id", client)], [("producer_byte_rate", 1000.0)]),
    ]
    for entity, ops in sets:
        request = {"entries": [_quota_entry(entity, ops)], "validate_only": False}
        assert ok(s.call(ApiKey.ALTER_CLIENT_QUOTAS, top(ApiKey.ALTER_CLIENT_QUOTAS), request))

    def component(entity_type: str, match_type: int, match: str | None) -> Any:
        return {"entity_type": entity_type, "match_type": match_type, "match": match}

    filters: list[tuple[str, list[Any], bool]] = [
        ("exact client strict", [component("client-id", 0, client)], True),
        ("exact user strict", [component("user", 0, user)], True),
        (
            "exact user and client",
            [component("user", 0, user), component("client-id", 0, client)],
            True,
        ),
        (
            "user and any client",
            [component("user", 0, user), component("client-id", 2, None)],
            True,
        ),
        ("exact without match", [component("user", 0, None)], False),
        ("duplicate type", [component("user", 0, user), component("user", 0, user)], False),
        ("empty type", [component("", 2, None)], False),
        ("custom type", [component("group", 2, None)], False),
        ("ip with user", [component("ip", 2, None), component("user", 2, None)], False),
        ("unknown match type", [component("user", 7, None)], False),
    ]
    for label, components, strict in filters:
        s.send(
            ApiKey.DESCRIBE_CLIENT_QUOTAS,
            {"components": components, "strict": strict},
            label=label,
        )
    for entity, ops in sets:
        removal = [(key, None) for key, _value in ops]
        request = {"entries": [_quota_entry(entity, removal)], "validate_only": False}
        assert ok(s.call(ApiKey.ALTER_CLIENT_QUOTAS, top(ApiKey.ALTER_CLIENT_QUOTAS), request))


#: Scenarios that do not apply below a version: idempotent batches need magic 2 (Produce v3+),
#: fetch sessions Fetch v7 (KIP-227).
FIRST_VERSION: Final = {"produce-idempotent": FIRST_V2_PRODUCE, "fetch-sessions": 7}

SCENARIOS: Final[tuple[Scenario, ...]] = tuple(
    Scenario(
        name,
        api,
        run,
        range(
            max(FIRST_VERSION.get(name, 0), common_versions(api)[0]), common_versions(api)[-1] + 1
        ),
    )
    for name, api, run in (
        ("api-versions", ApiKey.API_VERSIONS, api_versions),
        ("metadata", ApiKey.METADATA, metadata),
        ("produce", ApiKey.PRODUCE, produce_scenario),
        ("produce-idempotent", ApiKey.PRODUCE, produce_idempotent),
        ("fetch", ApiKey.FETCH, fetch),
        ("fetch-sessions", ApiKey.FETCH, fetch_sessions),
        ("list-offsets", ApiKey.LIST_OFFSETS, list_offsets),
        ("create-topics", ApiKey.CREATE_TOPICS, create_topics),
        ("delete-topics", ApiKey.DELETE_TOPICS, delete_topics),
        ("create-partitions", ApiKey.CREATE_PARTITIONS, create_partitions),
        ("describe-configs", ApiKey.DESCRIBE_CONFIGS, describe_configs),
        ("alter-configs", ApiKey.ALTER_CONFIGS, alter_configs),
        ("incremental-alter-configs", ApiKey.INCREMENTAL_ALTER_CONFIGS, incremental_alter_configs),
        ("delete-records", ApiKey.DELETE_RECORDS, delete_records),
        ("init-producer-id", ApiKey.INIT_PRODUCER_ID, init_producer_id),
        ("describe-cluster", ApiKey.DESCRIBE_CLUSTER, describe_cluster),
        ("describe-log-dirs", ApiKey.DESCRIBE_LOG_DIRS, describe_log_dirs),
        ("alter-replica-log-dirs", ApiKey.ALTER_REPLICA_LOG_DIRS, alter_replica_log_dirs),
        ("elect-leaders", ApiKey.ELECT_LEADERS, elect_leaders),
        (
            "alter-partition-reassignments",
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            alter_partition_reassignments,
        ),
        (
            "list-partition-reassignments",
            ApiKey.LIST_PARTITION_REASSIGNMENTS,
            list_partition_reassignments,
        ),
        ("find-coordinator", ApiKey.FIND_COORDINATOR, find_coordinator),
        ("join-group", ApiKey.JOIN_GROUP, join_group),
        ("sync-group", ApiKey.SYNC_GROUP, sync_group),
        ("heartbeat", ApiKey.HEARTBEAT, heartbeat),
        ("leave-group", ApiKey.LEAVE_GROUP, leave_group),
        ("offset-commit", ApiKey.OFFSET_COMMIT, offset_commit),
        ("offset-fetch", ApiKey.OFFSET_FETCH, offset_fetch),
        ("describe-groups", ApiKey.DESCRIBE_GROUPS, describe_groups),
        ("list-groups", ApiKey.LIST_GROUPS, list_groups),
        ("delete-groups", ApiKey.DELETE_GROUPS, delete_groups),
        ("offset-delete", ApiKey.OFFSET_DELETE, offset_delete),
        ("offset-for-leader-epoch", ApiKey.OFFSET_FOR_LEADER_EPOCH, offset_for_leader_epoch),
        ("alter-client-quotas", ApiKey.ALTER_CLIENT_QUOTAS, alter_client_quotas),
        ("describe-client-quotas", ApiKey.DESCRIBE_CLIENT_QUOTAS, describe_client_quotas),
    )
)


def scenario_cases() -> list[tuple[Scenario, int]]:
    """Every (scenario, version) to run."""
    return [(sc, v) for sc in SCENARIOS for v in sc.versions]
