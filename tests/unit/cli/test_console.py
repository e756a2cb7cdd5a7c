"""The console tools' pure parts (``franz.admin.console``): Kafka's LineMessageReader and
DefaultMessageFormatter behaviour, and the client-config plumbing. Expected strings are the
ones Kafka 3.9's tools produce for the same input and properties."""

from __future__ import annotations

import re

import pytest

from franz.admin.console import (
    ConsoleConfigError,
    ConsoleRecord,
    FormatterConfig,
    LineParseError,
    LineReaderConfig,
    LineRecord,
    format_record,
    librdkafka_config,
    parse_line,
    parse_property_args,
)

KEYED = LineReaderConfig.from_properties({"parse.key": "true"})
FULL = LineReaderConfig.from_properties({"parse.key": "true", "parse.headers": "true"})


# -- line reader -------------------------------------------------------------------------------


def test_plain_line_is_the_value_with_no_key() -> None:
    assert parse_line("a\tb", LineReaderConfig(), 1) == LineRecord(None, b"a\tb")


def test_empty_line_is_an_empty_value() -> None:
    assert parse_line("", LineReaderConfig(), 1) == LineRecord(None, b"")


def test_key_ends_at_the_first_separator() -> None:
    assert parse_line("k\tv\tw", KEYED, 1) == LineRecord(b"k", b"v\tw")


def test_custom_key_separator_of_several_chars() -> None:
    config = LineReaderConfig.from_properties({"parse.key": "TRUE ", "key.separator": "::"})
    assert parse_line("a:b::c::d", config, 1) == LineRecord(b"a:b", b"c::d")


def test_empty_key_and_value_stay_empty_not_null() -> None:
    assert parse_line("\t", KEYED, 1) == LineRecord(b"", b"")


def test_missing_key_separator_names_the_line() -> None:
    with pytest.raises(LineParseError) as info:
        parse_line("novalue", KEYED, 7)
    assert str(info.value) == "No key separator found on line number 7: 'novalue'"


def test_ignore_error_makes_a_null_key_and_keeps_the_line() -> None:
    config = LineReaderConfig.from_properties({"parse.key": "true", "ignore.error": "true"})
    assert parse_line("novalue", config, 1) == LineRecord(None, b"novalue")


def test_headers_then_key_then_value() -> None:
    record = parse_line("h1:v1,h2:v2\tkey\tvalue", FULL, 1)
    assert record == LineRecord(b"key", b"value", (("h1", b"v1"), ("h2", b"v2")))


def test_header_value_keeps_later_key_separators_and_may_be_empty() -> None:
    record = parse_line("h1:a:b,h2:\tv", LineReaderConfig(parse_headers=True), 1)
    assert record == LineRecord(None, b"v", (("h1", b"a:b"), ("h2", b"")))


def test_header_without_key_separator_is_an_error() -> None:
    with pytest.raises(LineParseError) as info:
        parse_line("h1\tk\tv", FULL, 3)
    assert str(info.value) == "No header key separator found in pair 'h1' on line number 3"


def test_empty_header_section_is_an_error_as_in_kafka() -> None:
    with pytest.raises(LineParseError, match="pair '' on line number 1"):
        parse_line("\tk\tv", FULL, 1)


def test_trailing_header_separators_are_dropped() -> None:
    record = parse_line("a:1,,\tv", LineReaderConfig(parse_headers=True), 1)
    assert record.headers == (("a", b"1"),)


def test_headers_separator_is_a_regex() -> None:
    config = LineReaderConfig.from_properties(
        {"parse.headers": "true", "headers.separator": "[;|]"}
    )
    assert parse_line("a:1;b:2|c:3\tv", config, 1).headers == (
        ("a", b"1"),
        ("b", b"2"),
        ("c", b"3"),
    )


def test_missing_headers_delimiter_is_an_error() -> None:
    with pytest.raises(LineParseError, match="No headers delimiter found on line number 2"):
        parse_line("h:1", LineReaderConfig(parse_headers=True), 2)


def test_null_marker_makes_key_value_and_header_values_null() -> None:
    config = LineReaderConfig.from_properties(
        {"parse.key": "true", "parse.headers": "true", "null.marker": "<NULL>"}
    )
    record = parse_line("h:<NULL>\t<NULL>\t<NULL>", config, 1)
    assert record == LineRecord(None, None, (("h", None),))
    assert parse_line("<NULL>\tk\tv", config, 1).headers == ()


def test_null_marker_as_header_key_is_an_error() -> None:
    config = LineReaderConfig.from_properties({"parse.headers": "true", "null.marker": "N"})
    with pytest.raises(LineParseError, match="Header keys should not be equal to the null marker"):
        parse_line("N:v\tvalue", config, 1)


def test_non_utf8_bytes_round_trip() -> None:
    line = b"k\xff\t\xfe\x00v".decode("utf-8", "surrogateescape")
    assert parse_line(line, KEYED, 1) == LineRecord(b"k\xff", b"\xfe\x00v")


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"headers.delimiter": ",", "headers.separator": ","}, "headers.delimiter and headers."),
        ({"headers.key.separator": ","}, "headers.separator and headers.key.separator"),
        ({"null.marker": "\t"}, "null.marker and key.separator may not be equal"),
        ({"key.separator": ""}, "key.separator may not be empty"),
        ({"headers.separator": "("}, "is not a regular expression"),
    ],
)
def test_refused_reader_properties(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConsoleConfigError, match=message):
        LineReaderConfig.from_properties(props)


# -- formatter ---------------------------------------------------------------------------------

RECORD = ConsoleRecord(
    "t", 2, 41, "CreateTime", 1700000000000, b"key", b"value", (("h1", b"v1"), ("h2", b"v2"))
)


def fmt(record: ConsoleRecord = RECORD, **props: str) -> bytes:
    return format_record(record, FormatterConfig.from_properties(props))


def test_default_prints_the_value_and_a_newline() -> None:
    assert fmt() == b"value\n"


def test_every_field_in_kafkas_order() -> None:
    out = fmt(
        **{
            "print.timestamp": "true",
            "print.partition": "true",
            "print.offset": "true",
            "print.headers": "true",
            "print.key": "true",
        }
    )
    assert out == b"CreateTime:1700000000000\tPartition:2\tOffset:41\th1:v1,h2:v2\tkey\tvalue\n"


def test_key_and_value_with_custom_separators() -> None:
    out = fmt(**{"print.key": "true", "key.separator": " => ", "line.separator": "|"})
    assert out == b"key => value|"


def test_no_headers_and_log_append_time() -> None:
    record = RECORD._replace(headers=(), timestamp_type="LogAppendTime", timestamp=5)
    out = fmt(record, **{"print.timestamp": "true", "print.headers": "true"})
    assert out == b"LogAppendTime:5\tNO_HEADERS\tvalue\n"


def test_no_timestamp_type() -> None:
    assert fmt(RECORD._replace(timestamp_type=None), **{"print.timestamp": "true"}) == (
        b"NO_TIMESTAMP\tvalue\n"
    )


def test_nulls_print_the_null_literal() -> None:
    record = RECORD._replace(key=None, value=None, headers=(("h", None),))
    assert fmt(record, **{"print.key": "true", "print.headers": "true"}) == b"h:null\tnull\tnull\n"
    custom = {"print.key": "true", "null.literal": "<nil>"}
    assert fmt(record, **custom) == b"<nil>\t<nil>\n"


def test_headers_separator() -> None:
    assert fmt(**{"print.headers": "true", "headers.separator": ";"}) == b"h1:v1;h2:v2\tvalue\n"


def test_without_value_the_last_field_ends_the_line() -> None:
    assert fmt(**{"print.key": "true", "print.value": "false"}) == b"key\n"
    assert fmt(**{"print.value": "false"}) == b""


def test_booleans_are_javas_true_or_false() -> None:
    assert fmt(**{"print.key": " True "}) == b"key\tvalue\n"
    assert fmt(**{"print.key": "yes"}) == b"value\n"


def test_raw_bytes_are_printed_as_they_are() -> None:
    record = RECORD._replace(value=b"\xff\x00\n")
    assert fmt(record) == b"\xff\x00\n\n"


def test_unsupported_deserializer_is_refused() -> None:
    with pytest.raises(ConsoleConfigError, match=re.escape("value.deserializer=")):
        FormatterConfig.from_properties(
            {"value.deserializer": "org.apache.kafka.common.serialization.LongDeserializer"}
        )
    string = "org.apache.kafka.common.serialization.StringDeserializer"
    assert FormatterConfig.from_properties({"key.deserializer": string}) == FormatterConfig()


# -- properties and client config -----------------------------------------------------------


def test_property_args_split_at_the_first_equals_only() -> None:
    assert parse_property_args(["key.separator=,", "a=b=c", "null.literal="], "--property") == {
        "key.separator": ",",
        "a": "b=c",
        "null.literal": "",
    }


def test_property_args_without_equals_are_refused() -> None:
    with pytest.raises(
        ConsoleConfigError, match=re.escape("--property expects key=value, got 'print.key'")
    ):
        parse_property_args(["print.key"], "--property")


def test_java_client_keys_become_librdkafka_keys() -> None:
    config = librdkafka_config(
        {
            "acks": "all",
            "buffer.memory": "1048576",
            "send.buffer.bytes": "65536",
            "key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
        }
    )
    assert config == {
        "acks": "all",
        "queue.buffering.max.kbytes": "1024",
        "socket.send.buffer.bytes": "65536",
    }
