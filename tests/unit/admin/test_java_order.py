"""``franz.admin.java_order``: the iteration order of Java's HashMap / HashSet, checked
against orders Kafka 3.9's tools print (and hash codes the JDK documents)."""

from __future__ import annotations

from franz.admin.java_order import (
    collection_capacity,
    hash_order,
    int_hash,
    string_hash,
    table_size,
    topic_partition_hash,
)


def test_hash_codes_are_javas() -> None:
    assert string_hash("") == 0
    assert string_hash("a") == 97
    assert string_hash("hello") == 99162322  # "hello".hashCode()
    assert string_hash("polygenelubricants") == -2147483648  # Integer.MIN_VALUE, a JDK classic
    assert string_hash("é") == 233  # UTF-16 code units
    assert topic_partition_hash(("t", 0)) == 31 * 31 + 116
    assert int_hash(-1) == -1


def test_table_sizes() -> None:
    assert table_size(0) == 16
    assert table_size(12) == 16
    assert table_size(13) == 32
    assert table_size(1, initial_capacity=1) == 2  # HashMap(1): threshold 0, one resize
    assert table_size(3, initial_capacity=3) == 4
    assert collection_capacity(3) == 16
    assert collection_capacity(30) == 41


def test_jackson_key_orders_of_kafka_log_dirs() -> None:
    """The key orders kafka-log-dirs.sh prints its JSON in (HashMap<String, Object>)."""
    assert hash_order(["version", "brokers"], string_hash) == ["brokers", "version"]
    assert hash_order(["logDir", "error", "partitions"], string_hash) == [
        "partitions",
        "error",
        "logDir",
    ]
    assert hash_order(["partition", "size", "offsetLag", "isFuture"], string_hash) == [
        "partition",
        "size",
        "offsetLag",
        "isFuture",
    ]


def test_small_integers_ascend_and_collisions_keep_insertion_order() -> None:
    assert hash_order([3, 1, 2], int_hash) == [1, 2, 3]
    assert hash_order([17, 2, 1], int_hash) == [17, 1, 2]  # 17 and 1 share bucket 1
    assert hash_order([6, 1, 2], int_hash) == [1, 2, 6]
    assert hash_order([6, 1, 2], int_hash, initial_capacity=3) == [1, 6, 2]  # table of 4
