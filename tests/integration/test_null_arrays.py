"""Null and empty arrays in every field of every request the broker serves.

For every API with a handler and every version the broker advertises (and kio has a class
for), a valid request with one element in each array (``tests.support.mutants.sample``) is
mutated: each array, top level and nested, is replaced once by null (a -1 count, uvarint 0
when flexible) and once by empty. Each mutant goes over a raw socket to one broker shared by
the module, and the outcome must be Kafka's (3.9):

* null in an array the schema declares nullable (``nullableVersions``), or any empty array:
  a well-formed response at the request's version (the whole frame decodes, correlation id
  echoed); the request is legal and Kafka answers it;
* null in an array the schema does not declare nullable: the connection is closed. Kafka's
  generated ``read()`` throws "non-nullable field X was serialized as null",
  ``RequestContext.parseRequest`` wraps it in ``InvalidRequestException`` and the
  ``SocketServer`` processor closes that connection (``processChannelException``);
* a version advertised but refused (below ``min_accepted``, KIP-896): closed, as before.

Throughout, the broker stays up, logs no traceback, and a real client (confluent-kafka)
still produces and consumes afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_response_from_request

from franz.broker.handlers import HANDLERS
from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from franz.protocol.messages import request_type
from tests.support.broker import BrokerProcess
from tests.support.clients import OutRecord, consume_with, create_topic, produce_with
from tests.support.mutants import Path as ArrayPath
from tests.support.mutants import array_paths, is_nullable, mutate, sample
from tests.support.wire import ConnectionClosed, WireClient, decode_response

ANSWER_TIMEOUT = 10.0


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the whole module (the fuzz sends about two thousand requests)."""
    data_dir: Path = tmp_path_factory.mktemp("null-arrays")
    proc = BrokerProcess(data_dir, {"group.initial.rebalance.delay.ms": "0"}).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


def _versions(api_key: int) -> list[int]:
    support = SUPPORTED_APIS[ApiKey(api_key)]
    versions = []
    for version in range(support.min_advertised, support.max_version + 1):
        try:
            request_type(api_key, version)
        except Exception:  # kio has no class for this (refused) version
            continue
        versions.append(version)
    return versions


def _mutants(api_key: int, version: int) -> Iterator[tuple[str, Any, bool]]:
    """``(label, request, must_answer)`` for every null and empty array of the request."""
    base = sample(request_type(api_key, version))
    paths: list[ArrayPath] = array_paths(base)
    for path in paths:
        where = ".".join(name for name, _ in path)
        yield f"{where}=null", mutate(base, path, None), is_nullable(base, path)
        yield f"{where}=[]", mutate(base, path, ()), True


class _Fuzzer:
    """Sends mutants over one connection, opening a new one after each close."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.broker = broker
        self.client: WireClient | None = None

    def send(self, request: Any) -> tuple[int, Any] | None:
        """The decoded ``(correlation_id, response)``, or None if the broker closed."""
        if self.client is None:
            self.client = WireClient.connect(self.broker.bootstrap, timeout=ANSWER_TIMEOUT)
        client = self.client
        try:
            correlation_id = client.send(request)
            payload = client.recv_frame()
        except (ConnectionClosed, BrokenPipeError, ConnectionResetError):
            client.close()
            self.client = None
            return None
        got, response = decode_response(load_response_from_request(request), payload)
        assert got == correlation_id, f"correlation id {got}, expected {correlation_id}"
        return got, response

    def close(self) -> None:
        if self.client is not None:
            self.client.close()


#: The APIs this embedded broker serves to clients. The controller's requests (LeaderAndIsr,
#: StopReplica, UpdateMetadata) are served only in cluster mode; an embedded broker closes
#: the connection on them (``tests/cluster/test_controller_api_null_arrays.py`` fuzzes them).
CLIENT_APIS = sorted(k for k in HANDLERS if k in SUPPORTED_APIS)


@pytest.mark.parametrize("api_key", CLIENT_APIS, ids=lambda k: ApiKey(k).name)
def test_null_and_empty_arrays_are_answered_or_close_only_that_connection(
    shared_broker: BrokerProcess, api_key: int
) -> None:
    fuzzer = _Fuzzer(shared_broker)
    support = SUPPORTED_APIS[ApiKey(api_key)]
    problems: list[str] = []
    try:
        for version in _versions(api_key):
            for label, request, must_answer in _mutants(api_key, version):
                what = f"{ApiKey(api_key).name} v{version} {label}"
                try:
                    outcome = fuzzer.send(request)
                except (AssertionError, ValueError, TimeoutError) as exc:
                    problems.append(f"{what}: {exc}")
                    fuzzer.close()
                    fuzzer.client = None
                    continue
                if not support.accepts(version):
                    if outcome is not None:
                        problems.append(f"{what}: a refused version was answered")
                elif must_answer and outcome is None:
                    problems.append(f"{what}: closed the connection instead of answering")
                elif not must_answer and outcome is not None:
                    problems.append(f"{what}: answered {outcome[1]} instead of closing")
    finally:
        fuzzer.close()
    assert shared_broker.proc is not None and shared_broker.proc.poll() is None, (
        f"the broker died:\n{shared_broker.output()}"
    )
    assert not problems, "\n".join(problems)
    assert "Traceback" not in shared_broker.output(), shared_broker.output()


def test_a_real_client_is_served_after_the_fuzz(shared_broker: BrokerProcess) -> None:
    """Runs after the fuzz (module order): produce and consume with confluent-kafka."""
    create_topic(shared_broker.bootstrap, "after-fuzz", partitions=1)
    records = [OutRecord(f"k{i}".encode(), f"v{i}".encode(), partition=0) for i in range(5)]
    produce_with("confluent-kafka", shared_broker.bootstrap, "after-fuzz", records)
    consumed = consume_with("confluent-kafka", shared_broker.bootstrap, "after-fuzz", [0], 5)
    assert [(c.key, c.value) for c in consumed] == [(r.key, r.value) for r in records]
    assert "Traceback" not in shared_broker.output(), shared_broker.output()
