"""The consumer-group pages' pure helpers: the reset form."""

from __future__ import annotations

import pytest

from franz.console.groups_data import ResetRequest, parse_reset_form


def test_reset_form() -> None:
    assert parse_reset_form({"target": "earliest", "topic": ""}) == ResetRequest(
        "earliest", None, None
    )
    assert parse_reset_form({"target": "latest", "topic": "t"}) == ResetRequest("latest", "t", None)
    assert parse_reset_form({"target": "offset", "offset": " 12 "}) == ResetRequest(
        "offset", None, 12
    )
    assert parse_reset_form(
        {"target": "timestamp", "timestamp": "2023-11-14T22:13:20.123Z"}
    ) == ResetRequest("timestamp", None, 1700000000123)
    assert parse_reset_form({"target": "timestamp", "timestamp": "5"}).value == 5


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"target": "current"}, "reset to one of earliest, latest, timestamp, offset"),
        ({"target": "offset", "offset": ""}, "offset must be a whole number"),
        ({"target": "offset", "offset": "-3"}, "offset must be 0 or more"),
        ({"target": "timestamp", "timestamp": "soon"}, "ISO-8601"),
    ],
)
def test_reset_form_errors(form: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_reset_form(form)
