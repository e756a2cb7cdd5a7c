"""Null and empty arrays in the controller's requests to a cluster-mode broker.

The sibling of ``tests/integration/test_null_arrays.py`` (which covers the client APIs of an
embedded broker) for the APIs a broker serves only in cluster mode: LeaderAndIsr,
StopReplica, UpdateMetadata (ControlledShutdown has no arrays to fuzz), every version
(``INTER_BROKER_APIS``, all accepted), against one broker registered in a chroot of the
session's ZooKeeper. Same rules, Kafka 3.9's: null in an array the schema does not declare
nullable closes the connection (Kafka's generated ``read()`` throws, the ``SocketServer``
closes that connection); any other mutant gets a well-formed response at its version (here
a refusal: the samples carry broker epoch 0 and controller epoch 0, older than the broker's
registration and its controller's epoch, so STALE_BROKER_EPOCH; versions older than the
controller's are UNSUPPORTED_VERSION). A fuzzed request never takes effect.

Afterwards the broker is still up with no traceback, its records are all there, its own
controller still creates topics (the fuzz did not move the controller epoch it accepts), and
a real client produces and consumes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from franz.broker.handlers import HANDLERS
from franz.protocol.api_keys import INTER_BROKER_APIS, ApiKey
from franz.protocol.messages import request_type, response_type
from tests.support.clients import consume_with, create_topic
from tests.support.cluster import Cluster, new_chroot, produce_all, start_cluster
from tests.support.mutants import array_paths, is_nullable, mutate, sample
from tests.support.wire import ConnectionClosed, WireClient, decode_response
from tests.support.zookeeper import ZooKeeperServer

ANSWER_TIMEOUT = 10.0


def _has_arrays(api_key: int) -> bool:
    version = INTER_BROKER_APIS[ApiKey(api_key)].max_version
    return bool(array_paths(sample(request_type(api_key, version))))


#: The controller's APIs this broker serves in cluster mode whose requests carry arrays.
#: ControlledShutdown carries none (broker id and epoch only): nothing to fuzz here.
SERVED = sorted(k for k in INTER_BROKER_APIS if k in HANDLERS)
CONTROLLER_APIS = [k for k in SERVED if _has_arrays(k)]
KEPT = [b"kept-%d" % i for i in range(5)]


@pytest.fixture(scope="module")
def one_broker(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """Broker 1 alone (its own controller) on a fresh chroot, with records to keep."""
    base = Path(tmp_path_factory.mktemp("controller-null-arrays"))
    zk_connect = new_chroot(zookeeper_server.connect_string, "franz-fuzz")
    with start_cluster(zk_connect, base, ids=(1,)) as cluster:
        create_topic(cluster.bootstrap(), "kept", partitions=1)
        produce_all(cluster.bootstrap(), [("kept", 0, v) for v in KEPT])
        yield cluster


def _versions(api_key: int) -> list[int]:
    versions = []
    for version in range(INTER_BROKER_APIS[ApiKey(api_key)].max_version + 1):
        try:
            request_type(api_key, version)
        except Exception:
            continue
        versions.append(version)
    return versions


def _send(client: WireClient, request: Any, api_key: int, version: int) -> Any | None:
    """The decoded response, or None if the broker closed the connection."""
    try:
        correlation_id = client.send(request)
        payload = client.recv_frame()
    except (ConnectionClosed, BrokenPipeError, ConnectionResetError):
        return None
    got, response = decode_response(response_type(api_key, version), payload)
    assert got == correlation_id, f"correlation id {got}, expected {correlation_id}"
    return response


def _fuzz(
    cluster: Cluster, api_key: int, versions: list[int], fields: dict[str, int], *, fenced: bool
) -> dict[str, int]:
    """Send every null and empty array mutant of ``api_key`` at ``versions`` (the sample
    with ``fields`` replaced); check the outcomes; return their counts."""
    broker = cluster.brokers[1]
    problems: list[str] = []
    outcomes = {"answered": 0, "closed": 0, "accepted": 0}
    client: WireClient | None = None
    try:
        for version in versions:
            base = dataclasses.replace(sample(request_type(api_key, version)), **fields)
            for path in array_paths(base):
                where = ".".join(name for name, _ in path)
                for label, value, must_answer in (
                    ("null", None, is_nullable(base, path)),
                    ("[]", (), True),
                ):
                    what = f"{ApiKey(api_key).name} v{version} {where}={label}"
                    if client is None:
                        client = WireClient.connect(broker.bootstrap, timeout=ANSWER_TIMEOUT)
                    try:
                        response = _send(client, mutate(base, path, value), api_key, version)
                    except (AssertionError, ValueError, TimeoutError) as exc:
                        problems.append(f"{what}: {exc}")
                        response = None
                    if response is None:
                        client.close()
                        client = None
                    outcomes["closed" if response is None else "answered"] += 1
                    if response is not None and int(response.error_code) == 0:
                        outcomes["accepted"] += 1
                    if must_answer and response is None:
                        problems.append(f"{what}: closed the connection instead of answering")
                    elif not must_answer and response is not None:
                        problems.append(f"{what}: answered {response} instead of closing")
                    elif fenced and response is not None and int(response.error_code) == 0:
                        problems.append(f"{what}: a fenced request was applied: {response}")
    finally:
        if client is not None:
            client.close()
    assert broker.proc is not None and broker.proc.poll() is None, (
        f"the broker died:\n{broker.output()}"
    )
    assert not problems, "\n".join(problems)
    assert "Traceback" not in broker.output(), broker.output()
    print(ApiKey(api_key).name, outcomes)
    # Both kinds of mutants were sent: every API has non-nullable arrays, and empty ones.
    assert outcomes["answered"] > 0 and outcomes["closed"] > 0, outcomes
    return outcomes


@pytest.mark.parametrize("api_key", CONTROLLER_APIS, ids=lambda k: ApiKey(k).name)
def test_controller_api_null_and_empty_arrays_are_answered_or_close_only_that_connection(
    one_broker: Cluster, api_key: int
) -> None:
    """Every version, as sampled: refused by the fencing (or the version) when decoded."""
    _fuzz(one_broker, api_key, _versions(api_key), {}, fenced=True)


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(ApiKey.LEADER_AND_ISR, 7), (ApiKey.STOP_REPLICA, 4)],
    ids=["LEADER_AND_ISR", "STOP_REPLICA"],
)
def test_controller_api_mutants_past_the_fencing_are_answered_or_close_the_connection(
    one_broker: Cluster, api_key: int, version: int
) -> None:
    """The versions Kafka 3.9's controller sends, with the current controller epoch and no
    broker epoch, so the handlers themselves see the mutants. They name topic ``fuzz``
    (which does not exist) and replica 0 (not this broker), so nothing kept is touched.
    UpdateMetadata is left out here: at the current epoch it would replace the live brokers
    of the metadata cache, as it would in Kafka."""
    epoch = int(one_broker.kazoo.get("/controller_epoch")[0])
    fields = {"controller_id": 1, "controller_epoch": epoch, "broker_epoch": -1}
    outcomes = _fuzz(one_broker, api_key, [version], fields, fenced=False)
    assert outcomes["accepted"] > 0, outcomes  # the handlers, not the fencing, answered


def test_the_broker_serves_and_loses_nothing_after_the_controller_api_fuzz(
    one_broker: Cluster,
) -> None:
    """Runs after the fuzz (module order)."""
    bootstrap = one_broker.bootstrap()
    got = consume_with("confluent-kafka", bootstrap, "kept", [0], len(KEPT))
    assert [r.value for r in got] == KEPT
    # Its controller still acts: a new topic gets its leader, and clients use it.
    create_topic(bootstrap, "after-fuzz", partitions=2)
    produce_all(bootstrap, [("after-fuzz", p, b"v%d" % p) for p in (0, 1)])
    for p in (0, 1):
        got = consume_with("confluent-kafka", bootstrap, "after-fuzz", [p], 1)
        assert [r.value for r in got] == [b"v%d" % p]
    assert "Traceback" not in one_broker.brokers[1].output()


def test_only_controlled_shutdown_is_left_out_of_the_fuzz() -> None:
    """A controller API added later with arrays is fuzzed, not skipped silently."""
    assert [k for k in SERVED if k not in CONTROLLER_APIS] == [ApiKey.CONTROLLED_SHUTDOWN]
