"""SASL bench: logins per second on a ``SASL_PLAINTEXT`` listener (issue 20's "SCRAM logins
per second").

System: one embedded ``franz broker`` (``tests.support.broker.BrokerProcess``) with PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512 enabled and ``connection.failed.authentication.delay.ms``
left at Kafka's 100 (only failures wait). A SCRAM user is created with
AlterUserScramCredentials at ``--iterations`` (Kafka's minimum and default, 4096).

Per mechanism, ``--clients`` threads each open a TCP connection, authenticate (SaslHandshake
v1, SaslAuthenticate v2 tokens: the client's PBKDF2 is computed once per client and reused,
so the figure is the broker's cost, which includes its own per-login HMACs but not a PBKDF2:
the broker stores salted keys), send one Metadata, and close, for ``--seconds``; the figure is
completed logins per second with the broker's CPU seconds per login (``/proc/<pid>/stat``).
No peer runs in the same run: a Kafka 3.9 with SASL listeners is not set up by
``bench.kafka_peer`` yet, so the figure stands alone (say so when publishing it).

    python -m bench.sasl_bench [--seconds 5] [--clients 8] [--iterations 4096]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import os
import tempfile
import threading
import time
from pathlib import Path

from kio.schema.alter_user_scram_credentials.v0.request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialUpsertion,
)
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from tests.integration.sasl_support import sasl_broker
from tests.support.wire import WireClient, metadata_request

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _login(bootstrap: str, mechanism: str, salted: bytes | None) -> None:
    with WireClient.connect(bootstrap) as client:
        assert client.request(SaslHandshakeRequest(mechanism=mechanism)).error_code == 0
        if mechanism == "PLAIN":
            response = client.request(SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"))
            assert response.error_code == 0
        else:
            assert salted is not None
            name = HASHES[mechanism]
            bare = f"n=bench,r={os.urandom(12).hex()}"
            first = client.request(SaslAuthenticateRequest(auth_bytes=f"n,,{bare}".encode()))
            assert first.error_code == 0, first
            server_first = bytes(first.auth_bytes).decode()
            nonce = dict(p.split("=", 1) for p in server_first.split(","))["r"]
            ckey = hmac.new(salted, b"Client Key", name).digest()
            stored = hashlib.new(name, ckey).digest()
            without = f"c=biws,r={nonce}"
            auth = f"{bare},{server_first},{without}".encode()
            proof = bytes(
                a ^ b for a, b in zip(ckey, hmac.new(stored, auth, name).digest(), strict=True)
            )
            final = f"{without},p={base64.b64encode(proof).decode()}".encode()
            response = client.request(SaslAuthenticateRequest(auth_bytes=final))
            assert response.error_code == 0, response
        client.request(metadata_request(None))


_LOCK = threading.Lock()


def _worker(
    bootstrap: str, mechanism: str, salted: bytes | None, deadline: float, done: list[int]
) -> None:
    while time.monotonic() < deadline:
        _login(bootstrap, mechanism, salted)
        with _LOCK:
            done[0] += 1


def run(seconds: float, clients: int, iterations: int) -> None:
    salt = b"bench-salt-0123456789"
    with tempfile.TemporaryDirectory(prefix="sasl-bench-") as tmp:
        broker = sasl_broker(Path(tmp)).start()
        try:
            salted = {
                m: hashlib.pbkdf2_hmac(h, b"bench-secret", salt, iterations)
                for m, h in HASHES.items()
            }
            with WireClient.connect(broker.bootstrap) as admin:
                assert admin.request(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
                assert (
                    admin.request(
                        SaslAuthenticateRequest(auth_bytes=b"\0admin\0admin-secret")
                    ).error_code
                    == 0
                )
                upserts = tuple(
                    ScramCredentialUpsertion(
                        name="bench",
                        mechanism=i + 1,
                        iterations=iterations,
                        salt=salt,
                        salted_password=salted[m],
                    )
                    for i, m in enumerate(HASHES)
                )
                response = admin.request(
                    AlterUserScramCredentialsRequest(deletions=(), upsertions=upserts)
                )
                assert all(r.error_code == 0 for r in response.results), response
            print(
                f"franz SASL logins ({clients} clients, {seconds:.0f} s each, "
                f"iterations {iterations})"
            )
            print(f"{'mechanism':<15}{'logins/s':>10}{'broker CPU ms/login':>22}")
            for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
                done = [0]
                deadline = time.monotonic() + seconds
                cpu0, t0 = _cpu_seconds(broker.pid), time.monotonic()
                threads = [
                    threading.Thread(
                        target=_worker,
                        args=(broker.bootstrap, mechanism, salted.get(mechanism), deadline, done),
                    )
                    for _ in range(clients)
                ]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                elapsed = time.monotonic() - t0
                cpu = _cpu_seconds(broker.pid) - cpu0
                rate = done[0] / elapsed
                print(f"{mechanism:<15}{rate:>10.0f}{cpu * 1000 / max(1, done[0]):>22.2f}")
        finally:
            broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=4096)
    args = parser.parse_args()
    run(args.seconds, args.clients, args.iterations)


if __name__ == "__main__":
    main()
