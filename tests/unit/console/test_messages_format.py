"""The message browser's pure helpers: how bytes are shown (auto, text, JSON, hex, the
10 KiB cut), the query string, timestamps and the produce form."""

from __future__ import annotations

import pytest

from franz.console.messages_format import (
    DISPLAY_LIMIT,
    BrowseQuery,
    hex_dump,
    iso_time,
    parse_browse_query,
    parse_produce_form,
    parse_timestamp_ms,
    show_bytes,
)


def test_auto_pretty_prints_json_objects() -> None:
    shown = show_bytes(b'{"a":1,"b":[true,null]}')
    assert shown.kind == "json"
    assert shown.text == '{\n  "a": 1,\n  "b": [\n    true,\n    null\n  ]\n}'
    assert shown.size == 23
    assert not shown.truncated


def test_auto_shows_plain_utf8_as_text() -> None:
    assert show_bytes("héllo wörld\nline two\t!".encode()) == show_bytes(
        "héllo wörld\nline two\t!".encode(), "text"
    )
    assert show_bytes(b"hello").kind == "text"
    # a JSON scalar is shown as the text it is
    assert show_bytes(b"42").kind == "text"


def test_auto_shows_binary_and_control_characters_as_hex() -> None:
    assert show_bytes(b"\x00\xff\x10binary").kind == "hex"
    assert show_bytes(b"ok\x01").kind == "hex"  # valid UTF-8 with a control character
    assert show_bytes(b"\xc3\x28").kind == "hex"  # invalid UTF-8


def test_asked_formats() -> None:
    assert show_bytes(b'{"a":1}', "text").text == '{"a":1}'
    assert show_bytes(b"hi", "hex").text == ("00000000  68 69" + " " * 45 + "|hi|")
    assert show_bytes(b"42", "json") == show_bytes(b"42", "json")
    assert show_bytes(b"42", "json").kind == "json"
    # a format that does not fit falls back: non-JSON -> text, non-UTF-8 -> hex
    assert show_bytes(b"not json", "json").kind == "text"
    assert show_bytes(b"\xff\xfe", "text").kind == "hex"
    assert show_bytes(None).kind == "null"


def test_hex_dump_layout() -> None:
    dump = hex_dump(bytes(range(0x41, 0x41 + 20)))
    first, second = dump.splitlines()
    assert first == (
        "00000000  41 42 43 44 45 46 47 48  49 4a 4b 4c 4d 4e 4f 50  |ABCDEFGHIJKLMNOP|"
    )
    assert second.startswith("00000010  51 52 53 54")
    assert second.endswith("|QRST|")


def test_big_values_are_cut_unless_full() -> None:
    big = b"x" * (DISPLAY_LIMIT + 100)
    cut = show_bytes(big)
    assert cut.truncated and len(cut.text) == DISPLAY_LIMIT and cut.size == DISPLAY_LIMIT + 100
    whole = show_bytes(big, full=True)
    assert not whole.truncated and len(whole.text) == DISPLAY_LIMIT + 100
    binary = show_bytes(b"\x00" * (DISPLAY_LIMIT + 1))
    assert binary.kind == "hex" and binary.truncated
    assert len(binary.text.splitlines()) == DISPLAY_LIMIT // 16
    small = show_bytes(b"y" * DISPLAY_LIMIT)
    assert not small.truncated


def test_timestamps() -> None:
    assert parse_timestamp_ms("1700000000123") == 1700000000123
    assert parse_timestamp_ms("2023-11-14T22:13:20.123Z") == 1700000000123
    assert parse_timestamp_ms("2023-11-14T22:13:20.123") == 1700000000123  # UTC
    assert parse_timestamp_ms("2023-11-15T00:13:20.123+02:00") == 1700000000123
    assert parse_timestamp_ms("2023-11-14") == 1699920000000
    assert iso_time(1700000000123) == "2023-11-14T22:13:20.123Z"
    assert iso_time(5) == "1970-01-01T00:00:00.005Z"
    with pytest.raises(ValueError, match="ISO-8601"):
        parse_timestamp_ms("yesterday")
    with pytest.raises(ValueError):
        parse_timestamp_ms("")


def test_browse_query_defaults_and_values() -> None:
    assert parse_browse_query({}) == BrowseQuery()
    assert parse_browse_query({"partition": "", "from": "", "limit": ""}) == BrowseQuery()
    query = parse_browse_query(
        {
            "partition": "2",
            "from": "offset",
            "offset": "17",
            "limit": "5",
            "format": "hex",
            "full": "1",
        }
    )
    assert query == BrowseQuery(2, "offset", 17, None, 5, "hex", True)
    at = parse_browse_query({"from": "timestamp", "timestamp": "2023-11-14T22:13:20.123Z"})
    assert at.start == "timestamp" and at.timestamp_ms == 1700000000123
    # an offset given with another start is ignored
    assert parse_browse_query({"from": "latest", "offset": "3"}).offset is None


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"from": "middle"}, "from must be one of"),
        ({"format": "xml"}, "format must be one of"),
        ({"limit": "0"}, "limit must be between 1 and 1000"),
        ({"limit": "1001"}, "limit must be between 1 and 1000"),
        ({"partition": "x"}, "partition must be a whole number"),
        ({"partition": "-1"}, "partition must be 0 or more"),
        ({"from": "offset"}, "needs an offset"),
        ({"from": "timestamp"}, "a timestamp is needed"),
    ],
)
def test_browse_query_errors(params: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_browse_query(params)


def test_produce_form() -> None:
    form = parse_produce_form(
        {"key": "k", "value": "v\r\nw", "headers": "a=1\r\n\r\nb=x=y\nb=2\n", "partition": "3"}
    )
    assert form.key == b"k"
    assert form.value == b"v\r\nw"
    assert form.headers == [("a", b"1"), ("b", b"x=y"), ("b", b"2")]
    assert form.partition == 3
    empty = parse_produce_form({"key": "", "value": "", "headers": "", "partition": ""})
    assert (empty.key, empty.value, empty.headers, empty.partition) == (None, b"", [], None)
    with pytest.raises(ValueError, match="header line 1 'novalue': expected key=value"):
        parse_produce_form({"headers": "novalue"})
    with pytest.raises(ValueError, match="expected key=value"):
        parse_produce_form({"headers": "=v"})
    with pytest.raises(ValueError, match="partition must be a whole number"):
        parse_produce_form({"partition": "one"})
