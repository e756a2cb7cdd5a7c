"""Certificates for TLS tests, made with the ``openssl`` CLI (``cryptography`` is not
installed here).

``make_pki(directory)`` writes, all PEM:

* ``ca.pem`` / ``ca.key``: a self-signed CA; ``other-ca.pem``: an unrelated one;
* ``broker.pem``: the broker's key and certificate chain in one file (Kafka's PEM key store:
  ``ssl.keystore.type=PEM``), subject ``CN=broker``, SANs 127.0.0.1 and localhost;
* ``client.pem`` / ``client.crt`` / ``client.key``: a client signed by the CA, subject
  ``CN=alice,OU=clients,O=Franz,C=DE``;
* ``untrusted.crt`` / ``untrusted.key``: a client signed by the other CA;
* ``expired.crt`` / ``expired.key``: a client signed by the CA, valid 2020-01-01..2020-01-02
  (``openssl ca -startdate/-enddate``: ``x509 -days`` cannot date into the past).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Pki", "make_pki"]


@dataclass(frozen=True)
class Pki:
    directory: Path

    def __truediv__(self, name: str) -> Path:
        """``pki / "ca.pem"``."""
        return self.directory / name

    def broker_ssl_props(self, listener: str | None = None, **extra: str) -> dict[str, str]:
        """The ``ssl.*`` keys of a broker (``listener.name.<l>.`` prefixed when given)."""
        prefix = f"listener.name.{listener.lower()}." if listener else ""
        props = {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.directory / "broker.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.directory / "ca.pem"),
            **extra,
        }
        return {prefix + k: v for k, v in props.items()}


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _key(name: str, cwd: Path) -> None:
    _run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-out", f"{name}.key", cwd=cwd)  # fmt: skip


def _ca(name: str, subject: str, cwd: Path) -> None:
    _key(name, cwd)
    _run("req", "-x509", "-new", "-key", f"{name}.key", "-subj", subject, "-days", "30",
         "-out", f"{name}.pem", cwd=cwd)  # fmt: skip


def _signed(name: str, subject: str, ca: str, cwd: Path, ext: str = "") -> None:
    _key(name, cwd)
    _run("req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr", cwd=cwd)
    args = ["x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-days", "30", "-out", f"{name}.crt"]  # fmt: skip
    if ext:
        (cwd / f"{name}.ext").write_text(ext)
        args += ["-extfile", f"{name}.ext"]
    _run(*args, cwd=cwd)


def _expired(name: str, subject: str, cwd: Path) -> None:
    _key(name, cwd)
    _run("req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr", cwd=cwd)
    (cwd / "ca-db").mkdir(exist_ok=True)
    (cwd / "ca-db" / "index.txt").write_text("")
    (cwd / "ca-db" / "serial").write_text("1000\n")
    (cwd / "ca.cnf").write_text(
        "[ca]\ndefault_ca = test\n[test]\ndir = ca-db\ndatabase = ca-db/index.txt\n"
        "new_certs_dir = ca-db\nserial = ca-db/serial\ndefault_md = sha256\n"
        "policy = any\nunique_subject = no\n[any]\ncommonName = supplied\n"
        "organizationName = optional\ncountryName = optional\norganizationalUnitName = optional\n"
    )
    _run("ca", "-batch", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca.key",
         "-startdate", "20200101000000Z", "-enddate", "20200102000000Z",
         "-in", f"{name}.csr", "-out", f"{name}.crt", "-notext", cwd=cwd)  # fmt: skip


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    _ca("ca", "/CN=Franz Test CA", directory)
    _ca("other-ca", "/CN=Someone Else's CA", directory)
    _signed(
        "broker", "/CN=broker", "ca", directory,
        "subjectAltName = IP:127.0.0.1, DNS:localhost\n",
    )  # fmt: skip
    (directory / "broker.pem").write_text(
        (directory / "broker.key").read_text() + (directory / "broker.crt").read_text()
    )
    _signed("client", "/C=DE/O=Franz/OU=clients/CN=alice", "ca", directory)
    (directory / "client.pem").write_text(
        (directory / "client.key").read_text() + (directory / "client.crt").read_text()
    )
    _signed("untrusted", "/CN=mallory", "other-ca", directory)
    _expired("expired", "/CN=old-timer", directory)
    return Pki(directory)
