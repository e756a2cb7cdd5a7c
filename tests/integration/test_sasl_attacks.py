"""A ``SASL_PLAINTEXT`` listener under bad input and attacks, byte for byte on the wire
(``tests.support.wire``): requests before authentication, unsupported mechanisms, a second
handshake, garbage tokens, a tampered SCRAM nonce or proof, wrong passwords (the error, the
``connection.failed.authentication.delay.ms`` delay, the close), the v0 handshake's raw
tokens, SaslHandshake/SaslAuthenticate after authentication, KIP-368 re-authentication and
session expiry, the SCRAM credential APIs' errors, and 1,000 failed logins while another
client produces and consumes. After each attack the broker still serves a good client."""

from __future__ import annotations

import base64
import hashlib
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from kio.schema.alter_user_scram_credentials.v0.request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kio.schema.describe_user_scram_credentials.v0.request import (
    DescribeUserScramCredentialsRequest,
    UserName,
)
from kio.schema.sasl_authenticate.v0.request import (
    SaslAuthenticateRequest as SaslAuthenticateV0,
)
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as SaslHandshakeV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from franz.errors import ErrorCode
from franz.security.scram import ScramMechanism, client_final_message
from tests.integration.sasl_support import librdkafka_config, sasl_overrides
from tests.support.broker import BrokerProcess
from tests.support.wire import ConnectionClosed, WireClient, api_versions, metadata_request

pytestmark = pytest.mark.timeout(240)

GENERIC_SCRAM = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism SCRAM-SHA-256"
)


def _broker(tmp: Path, log_level: str = "INFO", **extra: str) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp, sasl_overrides(**extra), log_level=log_level).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, proc.output()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc_iter = _broker(tmp_path_factory.mktemp("sasl-attacks"))
    proc = next(proc_iter)
    _create_scram_user(proc, "alice", "alice-secret")
    yield proc
    next(proc_iter, None)


def _plain_login(client: WireClient, user: str, password: str, *, version: int = 2) -> Any:
    handshake = client.request(SaslHandshakeRequest(mechanism="PLAIN"))
    assert handshake.error_code == 0
    token = f"\0{user}\0{password}".encode()
    request = (
        SaslAuthenticateRequest(auth_bytes=token)
        if version == 2
        else SaslAuthenticateV0(auth_bytes=token)
    )
    return client.request(request)


def _scram_first(client: WireClient, user: str, nonce: str = "clientnonce123") -> tuple[str, str]:
    assert client.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-256")).error_code == 0
    bare = f"n={user},r={nonce}"
    response = client.request(SaslAuthenticateRequest(auth_bytes=f"n,,{bare}".encode()))
    assert response.error_code == 0, response
    return bare, bytes(response.auth_bytes).decode()


def _scram_login(client: WireClient, user: str, password: str) -> Any:
    bare, server_first = _scram_first(client, user)
    final, _ = client_final_message(ScramMechanism.SCRAM_SHA_256, password, bare, server_first)
    return client.request(SaslAuthenticateRequest(auth_bytes=final.encode()))


def _create_scram_user(
    broker: BrokerProcess, user: str, password: str, iterations: int = 4096
) -> None:
    with WireClient.connect(broker.bootstrap) as client:
        assert _plain_login(client, "admin", "admin-secret").error_code == 0
        salt = b"0123456789abcdef"
        salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
        response = client.request(
            AlterUserScramCredentialsRequest(
                deletions=(),
                upsertions=(
                    ScramCredentialUpsertion(
                        name=user,
                        mechanism=1,
                        iterations=iterations,
                        salt=salt,
                        salted_password=salted,
                    ),
                ),
            )
        )
        assert [(r.user, r.error_code) for r in response.results] == [(user, ErrorCode.NONE)]


def _assert_serves(broker: BrokerProcess) -> None:
    """A good client still authenticates and gets metadata."""
    with WireClient.connect(broker.bootstrap) as client:
        assert _plain_login(client, "alice", "alice-secret").error_code == 0
        response = client.request(metadata_request(None))
        assert len(response.brokers) == 1


def test_api_versions_then_plain_login_then_requests(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as client:
        versions = api_versions(client)
        assert versions[17] == (0, 1) and versions[36] == (0, 2)
        assert versions[50] == (0, 0) and versions[51] == (0, 0)
        response = _plain_login(client, "alice", "alice-secret")
        assert response.error_code == 0 and response.error_message is None
        assert len(client.request(metadata_request(None)).brokers) == 1


def test_request_before_authentication_closes_the_connection(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as client:
        client.send(metadata_request(None))
        assert client.wait_closed(10), "a Metadata before authentication was served"
        assert client.pending == b""
    with WireClient.connect(broker.bootstrap) as client:
        assert client.request(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
        client.send(metadata_request(None))  # during the token exchange
        assert client.wait_closed(10)
        assert client.pending == b""
    _assert_serves(broker)


def test_unsupported_mechanism_gets_the_enabled_list_then_a_close(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as client:
        started = time.monotonic()
        response = client.request(SaslHandshakeRequest(mechanism="GSSAPI"))
        assert time.monotonic() - started >= 0.09
        assert response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert sorted(response.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert client.wait_closed(10)
    _assert_serves(broker)


def test_second_handshake_during_authentication_is_illegal(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as client:
        assert client.request(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
        response = client.request(SaslHandshakeRequest(mechanism="PLAIN"))
        assert response.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert client.wait_closed(10)
    _assert_serves(broker)


def test_wrong_password_is_delayed_generic_and_closes(broker: BrokerProcess) -> None:
    for user, password in (("alice", "wrong"), ("nobody", "alice-secret")):
        with WireClient.connect(broker.bootstrap) as client:
            started = time.monotonic()
            response = _plain_login(client, user, password)
            elapsed = time.monotonic() - started
            assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert response.error_message == "Authentication failed: Invalid username or password"
            assert elapsed >= 0.09, elapsed  # connection.failed.authentication.delay.ms=100
            assert client.wait_closed(10)
    for user, password in (("alice", "wrong"), ("nobody", "x")):
        with WireClient.connect(broker.bootstrap) as client:
            if user == "nobody":
                assert (
                    client.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-256")).error_code == 0
                )
                response = client.request(SaslAuthenticateRequest(auth_bytes=b"n,,n=nobody,r=abc"))
            else:
                response = _scram_login(client, user, password)
            assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert response.error_message == GENERIC_SCRAM  # no hint which part was wrong
            assert client.wait_closed(10)
    assert "alice-secret" not in broker.output()
    _assert_serves(broker)


@pytest.mark.parametrize(
    "token",
    [
        b"",
        b"\xff" * 300,
        b"n,,n=alice",
        b"y,,n=alice,r=abc",
        b"p=tls-server-end-point,,n=alice,r=x",
    ],
)
def test_garbage_scram_first_messages_fail(broker: BrokerProcess, token: bytes) -> None:
    with WireClient.connect(broker.bootstrap) as client:
        assert client.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-256")).error_code == 0
        response = client.request(SaslAuthenticateRequest(auth_bytes=token))
        assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert response.error_message == GENERIC_SCRAM
        assert client.wait_closed(10)
    _assert_serves(broker)


def test_unparsable_sasl_authenticate_closes(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as client:
        assert client.request(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
        # A SaslAuthenticate v2 header followed by a truncated body.
        client.send_frame(b"\x00\x24\x00\x02\x00\x00\x00\x07\x00\x01x\x00\x7f")
        assert client.wait_closed(10)
    _assert_serves(broker)


@pytest.mark.parametrize("tamper", ["nonce", "proof", "channel"])
def test_tampered_scram_final_message_fails(broker: BrokerProcess, tamper: str) -> None:
    with WireClient.connect(broker.bootstrap) as client:
        bare, server_first = _scram_first(client, "alice")
        final, _ = client_final_message(
            ScramMechanism.SCRAM_SHA_256, "alice-secret", bare, server_first
        )
        fields = final.split(",")
        if tamper == "nonce":
            fields[1] = fields[1][:-1] + ("A" if fields[1][-1] != "A" else "B")
        elif tamper == "proof":
            proof = bytearray(base64.b64decode(fields[2][2:]))
            proof[0] ^= 0x01
            fields[2] = "p=" + base64.b64encode(bytes(proof)).decode()
        else:
            fields[0] = "c=" + base64.b64encode(b"y,,").decode()
        response = client.request(SaslAuthenticateRequest(auth_bytes=",".join(fields).encode()))
        assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert response.error_message == GENERIC_SCRAM
        assert client.wait_closed(10)
    _assert_serves(broker)


def test_scram_login_returns_the_server_signature(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as client:
        bare, server_first = _scram_first(client, "alice")
        assert server_first.startswith("r=clientnonce123") and ",i=4096" in server_first
        final, signature = client_final_message(
            ScramMechanism.SCRAM_SHA_256, "alice-secret", bare, server_first
        )
        response = client.request(SaslAuthenticateRequest(auth_bytes=final.encode()))
        assert response.error_code == 0
        assert bytes(response.auth_bytes) == b"v=" + base64.b64encode(signature)
        assert len(client.request(metadata_request(None)).brokers) == 1


def test_v0_handshake_uses_raw_tokens(broker: BrokerProcess) -> None:
    """KIP-43: after SaslHandshake v0 the tokens are bare size-prefixed frames."""
    with WireClient.connect(broker.bootstrap) as client:
        assert client.request(SaslHandshakeV0(mechanism="PLAIN")).error_code == 0
        client.send_frame(b"\0alice\0alice-secret")
        assert client.recv_frame() == b""  # PLAIN's empty challenge
        assert len(client.request(metadata_request(None)).brokers) == 1
    with WireClient.connect(broker.bootstrap) as client:
        assert client.request(SaslHandshakeV0(mechanism="SCRAM-SHA-256")).error_code == 0
        client.send_frame(b"n,,n=alice,r=rawnonce")
        server_first = client.recv_frame().decode()
        final, signature = client_final_message(
            ScramMechanism.SCRAM_SHA_256, "alice-secret", "n=alice,r=rawnonce", server_first
        )
        client.send_frame(final.encode())
        assert client.recv_frame() == b"v=" + base64.b64encode(signature)
        assert len(client.request(metadata_request(None)).brokers) == 1
    with WireClient.connect(broker.bootstrap) as client:
        assert client.request(SaslHandshakeV0(mechanism="PLAIN")).error_code == 0
        client.send_frame(b"\0alice\0wrong")
        assert client.wait_closed(10)  # no header, so no error response: a close
        assert client.pending == b""


def test_sasl_requests_after_authentication_are_illegal(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as client:
        assert _plain_login(client, "alice", "alice-secret", version=0).error_code == 0
        # A v0 SaslAuthenticate client cannot re-authenticate: KafkaApis answers.
        assert (
            client.request(SaslHandshakeRequest(mechanism="PLAIN")).error_code
            == ErrorCode.ILLEGAL_SASL_STATE
        )
        response = client.request(SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"))
        assert response.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert (
            response.error_message
            == "SaslAuthenticate request received after successful authentication"
        )
        assert len(client.request(metadata_request(None)).brokers) == 1


# -- the SCRAM credential APIs -----------------------------------------------------------------


def _admin(broker: BrokerProcess) -> WireClient:
    client = WireClient.connect(broker.bootstrap)
    assert _plain_login(client, "admin", "admin-secret").error_code == 0
    return client


def _upsert(name: str, mechanism: int = 1, iterations: int = 4096) -> ScramCredentialUpsertion:
    return ScramCredentialUpsertion(
        name=name,
        mechanism=mechanism,
        iterations=iterations,
        salt=b"s" * 16,
        salted_password=b"p" * 32,
    )


def test_alter_user_scram_credentials_errors_as_kafka(broker: BrokerProcess) -> None:
    with _admin(broker) as client:
        response = client.request(
            AlterUserScramCredentialsRequest(
                deletions=(
                    ScramCredentialDeletion(name="gone", mechanism=2),
                    ScramCredentialDeletion(name="badmech", mechanism=9),
                ),
                upsertions=(
                    _upsert(""),
                    _upsert("few", iterations=1000),
                    _upsert("many", iterations=20000),
                    _upsert("twice"),
                    _upsert("twice"),
                    _upsert("fine", mechanism=2, iterations=16384),
                ),
            )
        )
        got = {r.user: (r.error_code, r.error_message) for r in response.results}
        assert got == {
            "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
            "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
            "many": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
            "badmech": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
            "twice": (
                ErrorCode.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            ),
            "gone": (
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            ),
            "fine": (ErrorCode.NONE, None),
        }
        described = client.request(
            DescribeUserScramCredentialsRequest(
                users=(
                    UserName(name="fine"),
                    UserName(name="few"),
                    UserName(name=""),
                    UserName(name="x"),
                    UserName(name="x"),
                )
            )
        )
        results = {r.user: r for r in described.results}
        assert [(i.mechanism, i.iterations) for i in results["fine"].credential_infos] == [
            (2, 16384)
        ]
        assert results["few"].error_code == ErrorCode.RESOURCE_NOT_FOUND
        assert (
            results["few"].error_message
            == "Attempt to describe a user credential that does not exist: few"
        )
        assert results[""].error_message == "Username must not be empty"
        assert results["x"].error_code == ErrorCode.DUPLICATE_RESOURCE
        everyone = client.request(DescribeUserScramCredentialsRequest(users=None))
        assert [r.user for r in everyone.results] == sorted(r.user for r in everyone.results)
        assert {"alice", "fine"} <= {r.user for r in everyone.results}


# -- KIP-368 ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reauth_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from _broker(
        tmp_path_factory.mktemp("sasl-reauth"),
        log_level="DEBUG",
        **{"connections.max.reauth.ms": "1500"},
    )


def test_session_lifetime_and_reauthentication(reauth_broker: BrokerProcess) -> None:
    with WireClient.connect(reauth_broker.bootstrap) as client:
        response = _plain_login(client, "alice", "alice-secret")
        assert response.error_code == 0
        assert response.session_lifetime.total_seconds() * 1000 == 1500
        for _ in range(3):  # re-authenticate on the same connection, keep using it
            time.sleep(0.8)
            again = _plain_login(client, "alice", "alice-secret")
            assert again.error_code == 0
            assert len(client.request(metadata_request(None)).brokers) == 1


def test_expired_session_is_closed(reauth_broker: BrokerProcess) -> None:
    with WireClient.connect(reauth_broker.bootstrap) as client:
        assert _plain_login(client, "alice", "alice-secret").error_code == 0
        assert len(client.request(metadata_request(None)).brokers) == 1
        time.sleep(1.7)
        client.send(metadata_request(None))
        assert client.wait_closed(10)
        assert client.pending == b""


def test_reauthentication_cannot_change_the_principal(reauth_broker: BrokerProcess) -> None:
    with WireClient.connect(reauth_broker.bootstrap) as client:
        assert _plain_login(client, "alice", "alice-secret").error_code == 0
        response = _plain_login(client, "admin", "admin-secret")
        assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert response.error_message == (
            "Cannot change principals during re-authentication from User.alice: User.admin"
        )
        assert client.wait_closed(10)


def test_librdkafka_reauthenticates_past_the_session_lifetime(reauth_broker: BrokerProcess) -> None:
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    before = len(reauth_broker.output())
    producer = Producer(
        librdkafka_config(reauth_broker.bootstrap, "PLAIN", "alice", "alice-secret")
    )
    for i in range(6):  # spans four session lifetimes on one connection
        producer.produce(topic, f"r{i}".encode())
        assert producer.flush(20) == 0
        time.sleep(0.9)
    output = reauth_broker.output()[before:]
    # librdkafka re-authenticated on its connections (the gate logs each success at DEBUG
    # with the peer address): some connection authenticated at least three times.
    peers = re.findall(r"(\S+) authenticated as User:alice", output)
    assert max(Counter(peers).values()) >= 3, Counter(peers)
    assert "Disconnecting expired channel" not in output
    producer.purge()


# -- 1,000 failed logins ----------------------------------------------------------------------


def test_thousand_failed_logins_while_another_client_works(broker: BrokerProcess) -> None:
    topic = f"busy-{uuid.uuid4().hex[:8]}"
    conf = librdkafka_config(broker.bootstrap, "SCRAM-SHA-256", "alice", "alice-secret")
    stop = threading.Event()
    produced: list[int] = []

    def produce() -> None:
        producer = Producer(conf)
        i = 0
        while not stop.is_set():
            producer.produce(topic, str(i).encode())
            assert producer.flush(30) == 0
            produced.append(i)
            i += 1
            time.sleep(0.01)

    failures = [0]
    lock = threading.Lock()

    def attack(count: int) -> None:
        for _ in range(count):
            try:
                with WireClient.connect(broker.bootstrap) as client:
                    response = _plain_login(client, "alice", "guess")
                    assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
                    assert client.wait_closed(10)
            except ConnectionClosed:
                raise
            with lock:
                failures[0] += 1

    producer_thread = threading.Thread(target=produce)
    producer_thread.start()
    attackers = [threading.Thread(target=attack, args=(50,)) for _ in range(20)]
    started = time.monotonic()
    for t in attackers:
        t.start()
    for t in attackers:
        t.join(200)
    attack_s = time.monotonic() - started
    produced_during = len(produced)
    stop.set()
    producer_thread.join(60)
    assert failures[0] == 1000
    assert produced_during > 10, f"only {produced_during} produced during {attack_s:.1f} s"
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while len(seen) < len(produced) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                seen.add(int(message.value()))
    finally:
        consumer.close()
    assert seen == set(produced)
    _assert_serves(broker)


def test_large_frames_wait_for_authentication(broker: BrokerProcess) -> None:
    """sasl.server.max.receive.size (524288) bounds frames before authentication only."""
    with WireClient.connect(broker.bootstrap) as client:
        client.send_bytes((600_000).to_bytes(4, "big") + b"\x00" * 1000)
        assert client.wait_closed(10)
        assert client.pending == b""
    topic = f"big-{uuid.uuid4().hex[:8]}"
    producer = Producer(librdkafka_config(broker.bootstrap, "PLAIN", "alice", "alice-secret"))
    producer.produce(topic, b"x" * 700_000)
    assert producer.flush(30) == 0
