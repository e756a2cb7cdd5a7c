"""Scraping a Franz broker's ``/metrics`` (``metrics.listener``) in tests: the URL from the
broker's start-up line (``... , metrics http://127.0.0.1:40123/metrics``), a scrape with
urllib parsed by prometheus_client's text parser, and the TCP ports a process listens on
(from /proc, to show that nothing listens when the endpoint is off)."""

from __future__ import annotations

import os
import re
import urllib.request
from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families

from tests.support.broker import BrokerProcess

__all__ = ["Samples", "listening_ports", "metrics_url", "scrape", "value"]

_URL = re.compile(r"started: listener \S+, .*, metrics (http://\S+/metrics)")

#: sample name -> {sorted label pairs -> value}
Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


def metrics_url(broker: BrokerProcess) -> str | None:
    """The metrics URL of the broker's current run, None when the endpoint is off."""
    match = _URL.search(broker.output())
    return match.group(1) if match else None


def scrape(url: str, timeout: float = 10.0) -> Samples:
    """GET ``url``, parse Prometheus' text format: every sample by name and labels."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = tuple(sorted(sample.labels.items()))
            samples.setdefault(sample.name, {})[labels] = sample.value
    return samples


def value(samples: Samples, name: str, labels: Mapping[str, str] | None = None) -> float:
    """The one sample ``name`` with ``labels`` (none: the unlabelled one)."""
    return samples[name][tuple(sorted((labels or {}).items()))]


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` has listening sockets on (IPv4 and IPv6)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = set()
    for table in (f"/proc/{pid}/net/tcp", f"/proc/{pid}/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # TCP_LISTEN
                ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports
