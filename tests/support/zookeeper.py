"""Throwaway Apache ZooKeeper servers for tests (Debian's ``libzookeeper-java``).

We start ``java ... QuorumPeerMain zoo.cfg`` ourselves (no systemd, no zkServer.sh), under
``setpriv --pdeathsig KILL`` so a killed test runner leaves no JVM behind, keep the ``Popen``
handle and stop exactly that PID (SIGTERM, bounded wait, SIGKILL). Readiness is the ``srvr``
four-letter word answering with a ``Mode:`` line. Every wait is bounded.

Test settings: ``tickTime=500`` and ``minSessionTimeout=1000`` (sessions of 1-2 s expire
quickly but not spuriously on a loaded 2-core box), ``forceSync=no``, loopback only,
``maxClientCnxns=0``, no AdminServer (it would grab 0.0.0.0:8080).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

ZK_JAR = "/usr/share/java/zookeeper.jar"
SLF4J_NOP = "/usr/share/java/slf4j-nop.jar"
MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
JVM_FLAGS = (
    "-Xms32m",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Djava.net.preferIPv4Stack=true",
    "-Dzookeeper.admin.enableServer=false",
)


def zookeeper_available() -> bool:
    return os.path.exists(ZK_JAR) and shutil.which("java") is not None


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (all sockets held until all are chosen)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def port_taken(port: int) -> bool:
    """Whether some process holds loopback ``port`` (a plain ``bind`` fails)."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def four_letter_word(port: int, word: str, timeout: float = 1.0) -> str:
    """The reply to a four-letter word, or ``""`` when the server does not answer."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(word.encode("ascii"))
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


def server_mode(port: int) -> str | None:
    """``standalone``, ``leader``, ``follower``, or None when not serving."""
    for line in four_letter_word(port, "srvr").splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


class ZooKeeperServer:
    def __init__(
        self,
        directory: Path,
        port: int | None = None,
        *,
        myid: int | None = None,
        servers: tuple[str, ...] = (),
        tick_ms: int = 500,
        min_session_ms: int = 1000,
    ) -> None:
        self.dir = directory
        self.port = port or free_ports(1)[0]
        self.myid = myid
        self.servers = servers
        self.tick_ms = tick_ms
        self.min_session_ms = min_session_ms
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def connect_string(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _write_config(self) -> Path:
        data = self.dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        lines = [
            f"tickTime={self.tick_ms}",
            "initLimit=10",
            "syncLimit=5",
            f"dataDir={data}",
            f"clientPort={self.port}",
            "clientPortAddress=127.0.0.1",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=srvr,stat,cons",
            "forceSync=no",
            "preAllocSize=4096",
            "autopurge.purgeInterval=0",
            f"minSessionTimeout={self.min_session_ms}",
            *self.servers,
        ]
        cfg = self.dir / "zoo.cfg"
        cfg.write_text("\n".join(lines) + "\n")
        if self.myid is not None:
            (data / "myid").write_text(f"{self.myid}\n")
        return cfg

    def start(self) -> ZooKeeperServer:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        cfg = self._write_config()
        self._log = open(self.dir / "zk.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                "setpriv",
                "--pdeathsig",
                "KILL",
                "--",
                "java",
                *JVM_FLAGS,
                "-cp",
                f"{ZK_JAR}:{SLF4J_NOP}",
                MAIN,
                str(cfg),
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in pytest does not reach it
        )
        return self

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, timeout_s: float = 30.0) -> float:
        """Poll ``srvr`` every 20 ms until it reports a mode; seconds waited."""
        start = time.monotonic()
        while time.monotonic() - start < timeout_s:
            if not self.is_running():
                code = None if self.proc is None else self.proc.returncode
                raise RuntimeError(f"ZooKeeper exited ({code}); see {self.dir / 'zk.log'}")
            if server_mode(self.port) is not None:
                return time.monotonic() - start
            time.sleep(0.02)
        raise TimeoutError(f"ZooKeeper on port {self.port} not serving after {timeout_s} s")

    def stop(self, kill: bool = False, timeout_s: float = 10.0) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout_s)
        if self._log is not None:
            self._log.close()
            self._log = None


def start_standalone(
    directory: Callable[[], Path], timeout_s: float = 30.0, attempts: int = 3
) -> ZooKeeperServer:
    """A standalone server on a free port, serving; each try in a fresh ``directory()``.

    ``free_ports`` lets the port go before the JVM binds it, so another process (a parallel
    pytest worker's server or client) may take it meanwhile. ZooKeeper then exits (it logs
    nothing here: slf4j-nop), and when the port is held by someone else it is started again
    on another port; any other failure is raised at once.
    """
    for attempt in range(attempts):
        server = ZooKeeperServer(directory()).start()
        try:
            server.wait_ready(timeout_s)
            return server
        except RuntimeError:
            server.stop()
            if attempt + 1 == attempts or not port_taken(server.port):
                raise
        except BaseException:
            server.stop()
            raise
    raise AssertionError("unreachable")


class ZooKeeperEnsemble:
    """``count`` members on loopback with distinct client, peer and election ports."""

    def __init__(self, directory: Path, count: int = 3) -> None:
        ports = free_ports(3 * count)
        client, peer, election = ports[:count], ports[count : 2 * count], ports[2 * count :]
        servers = tuple(f"server.{i + 1}=127.0.0.1:{peer[i]}:{election[i]}" for i in range(count))
        self.members = [
            ZooKeeperServer(directory / f"zk{i + 1}", client[i], myid=i + 1, servers=servers)
            for i in range(count)
        ]

    @property
    def connect_string(self) -> str:
        return ",".join(m.connect_string for m in self.members)

    def start(self) -> ZooKeeperEnsemble:
        for member in self.members:
            member.start()
        return self

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        for member in self.members:
            member.wait_ready(max(0.1, deadline - time.monotonic()))

    def leader(self) -> ZooKeeperServer | None:
        """The running member whose ``srvr`` says ``Mode: leader`` (None during an election)."""
        leaders = [m for m in self.members if m.is_running() and server_mode(m.port) == "leader"]
        return leaders[0] if len(leaders) == 1 else None

    def stop(self) -> None:
        for member in self.members:
            if member.proc is not None and member.is_running():
                member.proc.send_signal(signal.SIGTERM)
        for member in self.members:
            member.stop()
