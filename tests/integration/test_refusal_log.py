"""Unsupported requests and refused operations leave a line in the broker log: DEBUG each
time, INFO the first time per client (client id and host) and kind (``franz.broker.refusals``).

Read from the broker's own output (``BrokerProcess.output``), with the broker at DEBUG so
both levels show.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0

from tests.support.broker import BrokerProcess
from tests.support.wire import WireClient, encode_header, request_at

API_PRODUCE = 0
API_API_VERSIONS = 18


@pytest.fixture
def debug_broker(broker_factory, tmp_path) -> Iterator[BrokerProcess]:
    proc = broker_factory(tmp_path / "b", {}, log_level="DEBUG").start()
    yield proc
    assert proc.stop() == 0, proc.output()


def _refusals(broker: BrokerProcess, text: str) -> list[str]:
    """``INFO``/``DEBUG`` for each refusal log line containing ``text``."""
    levels = []
    for line in broker.output().splitlines():
        if "franz.broker.refusals" in line and text in line:
            levels.append("INFO" if " INFO " in line else "DEBUG" if " DEBUG " in line else line)
    return levels


def _closed_after(broker: BrokerProcess, payload: bytes, client_id: str) -> None:
    with WireClient.connect(broker.bootstrap, client_id=client_id) as client:
        client.send_frame(payload)
        assert client.wait_closed(10), "the broker kept the connection open"


def test_unknown_api_key_is_logged_info_once_per_client(debug_broker):
    for _ in range(3):
        _closed_after(debug_broker, encode_header(999, 0, 1, "probe") + b"\x00" * 8, "probe")
    _closed_after(debug_broker, encode_header(999, 0, 1, "other") + b"\x00" * 8, "other")
    assert _refusals(debug_broker, "refused API key 999 to client 'probe' at 127.0.0.1") == [
        "INFO",
        "DEBUG",
        "DEBUG",
    ], debug_broker.output()
    assert _refusals(debug_broker, "refused API key 999 to client 'other'") == ["INFO"]


def test_unsupported_versions_are_logged_info_once_per_client_and_kind(debug_broker):
    for _ in range(2):
        # Every advertised version is served (from v0): only versions above the range are
        # refused, whatever the API.
        _closed_after(
            debug_broker,
            encode_header(API_PRODUCE, 99, 1, "old", flexible=True) + b"\x00" * 8,
            "old",
        )
        _closed_after(
            debug_broker,
            encode_header(API_PRODUCE, 127, 1, "old", flexible=True) + b"\x00" * 8,
            "old",
        )
    assert _refusals(debug_broker, "refused PRODUCE v99 to client 'old'") == ["INFO", "DEBUG"]
    assert _refusals(debug_broker, "refused PRODUCE v127 to client 'old'") == ["INFO", "DEBUG"]
    with WireClient.connect(debug_broker.bootstrap, client_id="new") as client:
        for correlation_id in (1, 2):
            # What a newer client sends: header v2, then a body the broker cannot know.
            body = b"\x04new\x021\x00"
            client.send_frame(
                encode_header(API_API_VERSIONS, 99, correlation_id, "new", flexible=True) + body
            )
            response = client.recv(ApiVersionsResponseV0, correlation_id)
            assert response.error_code == 35, response
    assert _refusals(debug_broker, "refused API_VERSIONS v99 to client 'new'") == [
        "INFO",
        "DEBUG",
    ]


def test_refused_topic_deletion_is_logged_info_once_per_client(broker_factory, tmp_path):
    proc = broker_factory(
        tmp_path / "nodelete", {"delete.topic.enable": "false"}, log_level="DEBUG"
    ).start()
    for _ in range(2):
        with WireClient.connect(proc.bootstrap, client_id="deleter") as client:
            response = request_at(client, 20, 4, {"topic_names": ["t"], "timeout": 1000})
            assert [r.error_code for r in response.responses] == [73], response
    assert _refusals(proc, "refused DeleteTopics to client 'deleter'") == ["INFO", "DEBUG"]
    assert proc.stop() == 0, proc.output()
