"""TLS listeners and several listeners at once, with real clients (issue 20, parts 1-2).

A broker with a PLAINTEXT and an SSL listener: confluent-kafka, kafka-python, aiokafka and
kcat each produce and consume over SSL (values large enough that fetches go through the TLS
copy path, not only the small-response one); Metadata on each listener answers that
listener's endpoints. A broker with ``ssl.client.auth=required`` refuses a client without a
certificate, with an untrusted one and with an expired one (the handshake fails) and keeps
serving a good one. The principal of a connection is its certificate's subject through
``ssl.principal.mapping.rules`` (an in-process broker, to read it). Bad TLS configs stop the
broker with a clear message.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.helpers import create_ssl_context
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition

from franz.security.principal import ANONYMOUS, KafkaPrincipal
from tests.support.broker import BrokerProcess
from tests.support.clients import run_kcat
from tests.support.inprocess_broker import InProcessBroker
from tests.support.tls import Pki, make_pki

CLIENTS = ("confluent", "kafka-python", "aiokafka", "kcat")
#: Records per run and their size: 300 x 3 KiB is ~0.9 MiB, fetched in responses far above
#: the 32 KiB that are copied inline, so the TLS region copy is what sends them.
COUNT = 300
VALUE_SIZE = 3000


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def two_listeners(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """PLAINTEXT and SSL at once; client certificates requested, not required."""
    process = BrokerProcess(
        tmp_path_factory.mktemp("tls-broker"),
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            **pki.broker_ssl_props(**{"ssl.client.auth": "requested"}),
        },
    )
    with process:
        yield process


@pytest.fixture(scope="module")
def mutual_tls(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One SSL listener (also the inter-broker one) with ``ssl.client.auth=required``."""
    process = BrokerProcess(
        tmp_path_factory.mktemp("mtls-broker"),
        {
            "listeners": "SSL://127.0.0.1:0",
            "security.inter.broker.protocol": "SSL",
            **pki.broker_ssl_props("SSL", **{"ssl.client.auth": "required"}),
        },
    )
    with process:
        yield process


def ssl_bootstrap(broker: BrokerProcess) -> str:
    return f"127.0.0.1:{broker.ports['SSL']}"


def kcat_ssl(pki: Pki, cert: str | None = "client") -> list[str]:
    args = ["-X", "security.protocol=ssl", "-X", f"ssl.ca.location={pki / 'ca.pem'}"]
    if cert is not None:
        args += [
            "-X", f"ssl.certificate.location={pki / f'{cert}.crt'}",
            "-X", f"ssl.key.location={pki / f'{cert}.key'}",
        ]  # fmt: skip
    return args


def values(run: str) -> list[bytes]:
    return [f"{run}-{i:05d}-".encode() + bytes([65 + i % 26]) * VALUE_SIZE for i in range(COUNT)]


def produce_ssl(client: str, bootstrap: str, topic: str, pki: Pki, batch: list[bytes]) -> None:
    ca, crt, key = str(pki / "ca.pem"), str(pki / "client.crt"), str(pki / "client.key")
    if client == "confluent":
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "security.protocol": "SSL",
                "ssl.ca.location": ca,
                "ssl.certificate.location": crt,
                "ssl.key.location": key,
                "acks": "all",
            }
        )
        errors: list[Any] = []
        for value in batch:
            producer.produce(topic, value, on_delivery=lambda e, m: e and errors.append(e))
        assert producer.flush(60) == 0 and not errors, errors
    elif client == "kafka-python":
        kp = KafkaProducer(
            bootstrap_servers=bootstrap,
            security_protocol="SSL",
            ssl_cafile=ca,
            ssl_certfile=crt,
            ssl_keyfile=key,
            acks="all",
        )
        futures = [kp.send(topic, value) for value in batch]
        for future in futures:
            future.get(timeout=60)
        kp.close()
    elif client == "aiokafka":

        async def run() -> None:
            producer = AIOKafkaProducer(
                bootstrap_servers=bootstrap,
                security_protocol="SSL",
                ssl_context=create_ssl_context(cafile=ca, certfile=crt, keyfile=key),
                acks="all",
            )
            await producer.start()
            try:
                for value in batch:
                    await producer.send(topic, value)
                await producer.flush()
            finally:
                await producer.stop()

        asyncio.run(run())
    else:
        done = subprocess.run(
            ["kcat", "-P", "-b", bootstrap, "-t", topic, "-X", "acks=all", *kcat_ssl(pki)],
            input=b"\n".join(batch) + b"\n",
            capture_output=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")


def consume_ssl(client: str, bootstrap: str, topic: str, pki: Pki, count: int) -> list[bytes]:
    ca, crt, key = str(pki / "ca.pem"), str(pki / "client.crt"), str(pki / "client.key")
    deadline = time.monotonic() + 60
    got: list[bytes] = []
    if client == "confluent":
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "unused",
                "security.protocol": "SSL",
                "ssl.ca.location": ca,
                "enable.auto.commit": False,
            }
        )
        consumer.assign([CTopicPartition(topic, 0, 0)])
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got.append(message.value())
        consumer.close()
    elif client == "kafka-python":
        kc = KafkaConsumer(
            bootstrap_servers=bootstrap,
            security_protocol="SSL",
            ssl_cafile=ca,
            ssl_certfile=crt,
            ssl_keyfile=key,
            enable_auto_commit=False,
        )
        tp = KTopicPartition(topic, 0)
        kc.assign([tp])
        kc.seek(tp, 0)
        while len(got) < count and time.monotonic() < deadline:
            for records in kc.poll(1000).values():
                got.extend(r.value for r in records)
        kc.close()
    elif client == "aiokafka":

        async def run() -> None:
            consumer = AIOKafkaConsumer(
                bootstrap_servers=bootstrap,
                security_protocol="SSL",
                ssl_context=create_ssl_context(cafile=ca),
                enable_auto_commit=False,
            )
            await consumer.start()
            try:
                tp = TopicPartition(topic, 0)
                consumer.assign([tp])
                consumer.seek(tp, 0)
                while len(got) < count and time.monotonic() < deadline:
                    for records in (await consumer.getmany(timeout_ms=1000)).values():
                        got.extend(r.value for r in records if r.value is not None)
            finally:
                await consumer.stop()

        asyncio.run(run())
    else:
        done = run_kcat(
            ["-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-c", str(count), "-e",
             "-D", "\\n", *kcat_ssl(pki, cert=None)],
            timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        got = [line for line in done.stdout.split(b"\n") if line]
    return got


@pytest.mark.parametrize("client", CLIENTS)
def test_each_client_produces_and_consumes_over_ssl(
    two_listeners: BrokerProcess, pki: Pki, client: str
) -> None:
    topic = f"tls-{client}-{uuid.uuid4().hex[:8]}"
    batch = values(client)
    produce_ssl(client, ssl_bootstrap(two_listeners), topic, pki, batch)
    assert consume_ssl(client, ssl_bootstrap(two_listeners), topic, pki, COUNT) == batch
    # The same records read over PLAINTEXT (sendfile) are the same bytes.
    done = run_kcat(
        ["-C", "-b", two_listeners.bootstrap, "-t", topic, "-o", "beginning", "-c", str(COUNT),
         "-e", "-D", "\\n"],
        timeout=60,
    )  # fmt: skip
    assert [line for line in done.stdout.split(b"\n") if line] == batch


def kcat_metadata(bootstrap: str, extra: list[str]) -> dict[str, Any]:
    done = run_kcat(["-J", "-L", "-b", bootstrap, "-m", "15", *extra], timeout=30)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    value: dict[str, Any] = json.loads(done.stdout)
    return value


def test_metadata_answers_the_endpoints_of_the_requests_listener(
    two_listeners: BrokerProcess, pki: Pki
) -> None:
    plain = kcat_metadata(two_listeners.bootstrap, [])
    tls = kcat_metadata(ssl_bootstrap(two_listeners), kcat_ssl(pki))
    assert [b["name"] for b in plain["brokers"]] == [
        f"127.0.0.1:{two_listeners.ports['PLAINTEXT']}"
    ]
    assert [b["name"] for b in tls["brokers"]] == [f"127.0.0.1:{two_listeners.ports['SSL']}"]
    assert two_listeners.ports["PLAINTEXT"] != two_listeners.ports["SSL"]


def test_plaintext_clients_cannot_talk_to_the_ssl_listener(
    two_listeners: BrokerProcess, pki: Pki
) -> None:
    done = run_kcat(["-L", "-b", ssl_bootstrap(two_listeners), "-m", "3"], timeout=30)
    assert done.returncode != 0
    # ... and the broker goes on serving TLS clients.
    assert kcat_metadata(ssl_bootstrap(two_listeners), kcat_ssl(pki))["brokers"]


@pytest.mark.parametrize("cert", [None, "untrusted", "expired"])
def test_required_client_auth_refuses_bad_certificates(
    mutual_tls: BrokerProcess, pki: Pki, cert: str | None
) -> None:
    before = mutual_tls.output().count("SSL handshake failed")
    done = run_kcat(
        ["-L", "-b", ssl_bootstrap(mutual_tls), "-m", "3", *kcat_ssl(pki, cert)], timeout=30
    )
    assert done.returncode != 0
    deadline = time.monotonic() + 15
    while mutual_tls.output().count("SSL handshake failed") == before:
        assert time.monotonic() < deadline, mutual_tls.output()[-2000:]
        time.sleep(0.1)
    # A client with a good certificate is served meanwhile.
    assert kcat_metadata(ssl_bootstrap(mutual_tls), kcat_ssl(pki, "client"))["brokers"]


def test_required_client_auth_serves_a_good_certificate(
    mutual_tls: BrokerProcess, pki: Pki
) -> None:
    topic = f"mtls-{uuid.uuid4().hex[:8]}"
    batch = values("mtls")[:20]
    produce_ssl("kcat", ssl_bootstrap(mutual_tls), topic, pki, batch)
    done = run_kcat(
        ["-C", "-b", ssl_bootstrap(mutual_tls), "-t", topic, "-o", "beginning", "-c", "20", "-e",
         "-D", "\\n", *kcat_ssl(pki)],
        timeout=60,
    )  # fmt: skip
    assert [line for line in done.stdout.split(b"\n") if line] == batch


def _tls_connect(port: int, pki: Pki, cert: str | None) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    if cert is not None:
        context.load_cert_chain(str(pki / f"{cert}.crt"), str(pki / f"{cert}.key"))
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


@pytest.mark.parametrize(
    ("rules", "cert", "expected"),
    [
        ("DEFAULT", "client", KafkaPrincipal("User", "CN=alice,OU=clients,O=Franz,C=DE")),
        ("RULE:^CN=([^,]*),OU=clients,.*$/$1/U,DEFAULT", "client", KafkaPrincipal("User", "ALICE")),
        ("DEFAULT", None, ANONYMOUS),
    ],
)
def test_principal_is_the_certificate_subject_mapped_by_the_rules(
    tmp_path: Path, pki: Pki, rules: str, cert: str | None, expected: KafkaPrincipal
) -> None:
    broker = InProcessBroker(
        tmp_path,
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            **pki.broker_ssl_props(
                "SSL",
                **{"ssl.client.auth": "requested", "ssl.principal.mapping.rules": rules},
            ),
        },
    ).start()
    try:
        assert broker.broker is not None
        servers = broker.broker.listeners.servers
        with (
            _tls_connect(servers["SSL"].bound_port, pki, cert),
            socket.create_connection(("127.0.0.1", servers["PLAINTEXT"].bound_port)),
        ):
            deadline = time.monotonic() + 10
            seen: list[tuple[str, str, KafkaPrincipal]] = []
            while len(seen) < 2:
                assert time.monotonic() < deadline, seen
                time.sleep(0.05)
                seen = broker.call(
                    lambda: sorted(
                        (c.listener_name, c.security_protocol, c.principal)
                        for s in servers.values()
                        for c in s.connections
                    )
                )
        assert seen == [("PLAINTEXT", "PLAINTEXT", ANONYMOUS), ("SSL", "SSL", expected)]
    finally:
        broker.stop()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"listeners": "SSL://127.0.0.1:0", "security.inter.broker.protocol": "SSL"},
            "ssl.keystore.location (or ssl.keystore.certificate.chain and ssl.keystore.key) "
            "is required on an SSL listener",
        ),
        (
            {
                "listeners": "SSL://127.0.0.1:0",
                "security.inter.broker.protocol": "SSL",
                "ssl.keystore.location": "/nonexistent.jks",
            },
            "Franz reads PEM key stores only",
        ),
        (
            {
                "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                "inter.broker.listener.name": "SSL",
                "security.inter.broker.protocol": "SSL",
            },
            "Only one of inter.broker.listener.name and security.inter.broker.protocol "
            "should be set.",
        ),
    ],
)
def test_bad_tls_configs_stop_the_broker(
    tmp_path: Path, overrides: dict[str, str], message: str
) -> None:
    args = [sys.executable, "-m", "franz", "broker", "--override", f"log.dirs={tmp_path}"]
    for key, value in overrides.items():
        args += ["--override", f"{key}={value}"]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert message in result.stderr, result.stderr


def test_a_consumer_group_over_ssl_finds_its_coordinator_on_the_ssl_listener(
    two_listeners: BrokerProcess, pki: Pki
) -> None:
    topic = f"tls-group-{uuid.uuid4().hex[:8]}"
    batch = values("group")[:50]
    produce_ssl("confluent", ssl_bootstrap(two_listeners), topic, pki, batch)
    ssl_conf = {
        "bootstrap.servers": ssl_bootstrap(two_listeners),
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki / "ca.pem"),
    }
    consumer = Consumer(
        {**ssl_conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
         "enable.auto.commit": False}
    )  # fmt: skip
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(got) < len(batch) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got.append(message.value())
        consumer.commit(asynchronous=False)
        committed = consumer.committed([CTopicPartition(topic, 0)], timeout=30)
    finally:
        consumer.close()
    assert got == batch
    # FindCoordinator and OffsetCommit went through the SSL listener: the committed offset.
    assert committed[0].offset == len(batch)


def test_hundreds_of_refused_handshakes_leave_the_broker_serving(
    mutual_tls: BrokerProcess, pki: Pki
) -> None:
    """Clients without a certificate, in a row: each is refused (TLS 1.3 lets the client
    finish its side first, so the refusal shows as an alert or EOF on the first read), no
    connection is left behind, and a good client is served right after."""
    port = mutual_tls.ports["SSL"]
    fds = Path(f"/proc/{mutual_tls.pid}/fd")
    before = len(list(fds.iterdir()))
    refused = 0
    for _ in range(300):
        try:
            with _tls_connect(port, pki, None) as conn:
                conn.sendall(b"\x00\x00\x00\x00")
                if conn.recv(1) == b"":
                    refused += 1
        except (ssl.SSLError, OSError):
            refused += 1
    assert refused == 300
    # The broker closed every refused socket (a few may still be closing: allow 5).
    deadline = time.monotonic() + 15
    while len(list(fds.iterdir())) > before + 5:
        assert time.monotonic() < deadline, f"{len(list(fds.iterdir()))} fds, {before} before"
        time.sleep(0.1)
    assert kcat_metadata(ssl_bootstrap(mutual_tls), kcat_ssl(pki, "client"))["brokers"]
