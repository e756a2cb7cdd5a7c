"""Screenshots of ``franz console`` for the README: ``docs/console/<page>.png``.

    python -m tools.console_screenshots [--out docs/console] [--charts-s 40]

Starts one ``franz broker`` (temporary data dir; ``metrics.listener`` on a free port, an
authorizer with ``User:ANONYMOUS`` as super user so the ACL page has something to show) and
one ``franz console --metrics-url`` against it, loads demo data, and saves a PNG of each
main page in headless Chromium (``tests.support.console.chromium``):

* topics ``orders`` (3 partitions, JSON values with keys and headers), ``clickstream``
  (text lines), ``payments`` (6 partitions) and ``audit-log``;
* a consumer group ``billing`` that committed offset 40 of each partition of ``orders``
  (100 records each: a lag of 60 per partition);
* two ACLs and one SCRAM user;
* a producer paced at ~200 records/s to ``clickstream`` and ``audit-log``, and a consumer
  group ``analytics`` reading ``clickstream``, for ``--charts-s`` seconds before the
  screenshots are taken (the live charts need a few scrapes).

Pages: overview, topics, topic detail, messages, groups, group detail, charts, acls, users.
A page the console does not serve (404: not on this branch yet) is skipped and listed at
the end. Every child is stopped by PID, also on an error or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import httpx

from tests.support.broker import BrokerProcess
from tests.support.console import ConsoleProcess, chromium
from tests.support.metrics import metrics_url

REPO: Final = Path(__file__).resolve().parents[1]
#: (file name, path): the main pages, in the README's order.
PAGES: Final = (
    ("overview", "/"),
    ("topics", "/topics"),
    ("topic-detail", "/topics/orders"),
    ("messages", "/topics/orders/messages?partition=0&from=earliest&limit=12"),
    ("groups", "/groups"),
    ("group-detail", "/groups/billing"),
    ("charts", "/charts"),
    ("acls", "/acls"),
    ("users", "/users"),
)
#: The tallest PNG (px): a README shows the top of a long page.
MAX_HEIGHT: Final = 2000
TOPICS: Final = {"orders": 3, "clickstream": 1, "payments": 6, "audit-log": 1}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tools.console_screenshots", description=__doc__
    )
    parser.add_argument("--out", default=str(REPO / "docs" / "console"), help="PNG directory")
    parser.add_argument(
        "--charts-s", type=float, default=40.0, help="seconds of traffic before the charts"
    )
    return parser.parse_args(argv)


def load_demo_data(bootstrap: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        NewTopic,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics(
        [NewTopic(name, partitions, 1) for name, partitions in TOPICS.items()]
    ).values():
        future.result(60)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(TOPICS["orders"] * 100):
        order = {"id": f"o-{i:05d}", "customer": f"c-{i % 23}", "total": round(9.5 + i * 1.25, 2),
                 "items": [{"sku": f"sku-{i % 7}", "qty": 1 + i % 3}]}  # fmt: skip
        producer.produce(
            "orders",
            json.dumps(order).encode(),
            key=f"c-{i % 23}".encode(),
            partition=i % TOPICS["orders"],
            headers=[("source", b"web"), ("trace-id", f"{i:08x}".encode())],
        )
        producer.produce("clickstream", f"GET /products/{i % 40} 200 {12 + i % 90}ms".encode())
        producer.produce("payments", bytes([i % 256, 0, 1, 2, 3]) * 4, key=str(i).encode())
    producer.produce("audit-log", b"user admin created topic orders")
    if producer.flush(60) != 0:
        raise RuntimeError("demo records not all delivered")

    # The group "billing" committed offset 40 of each partition of orders (lag 60 each).
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing"})
    consumer.commit(
        offsets=[TopicPartition("orders", p, 40) for p in range(TOPICS["orders"])],
        asynchronous=False,
    )
    consumer.close()

    for future in admin.create_acls([
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:billing",
                   "*", AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.GROUP, "billing", ResourcePatternType.PREFIXED, "User:billing",
                   "*", AclOperation.READ, AclPermissionType.ALLOW),
    ]).values():  # fmt: skip
        future.result(30)
    upsertion = UserScramCredentialUpsertion(
        "billing", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"billing-secret"
    )
    for future in admin.alter_user_scram_credentials([upsertion]).values():
        future.result(30)


class Traffic:
    """A producer paced at ~``rate`` records/s and a consumer of ``clickstream`` in the
    group ``analytics`` (Stable, one member, committing: bytes out on the charts) until
    ``stop()``."""

    def __init__(self, bootstrap: str, rate: int = 200) -> None:
        self.bootstrap, self.rate = bootstrap, rate
        self.stopped = threading.Event()
        self.threads = [
            threading.Thread(target=self._run, daemon=True),
            threading.Thread(target=self._consume, daemon=True),
        ]

    def _consume(self) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "analytics",
                "auto.offset.reset": "earliest",
                "client.id": "analytics-1",
            }
        )
        consumer.subscribe(["clickstream"])
        while not self.stopped.is_set():
            consumer.poll(0.2)
        consumer.close()

    def _run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        i = 0
        while not self.stopped.is_set():
            began = time.monotonic()
            for _ in range(self.rate // 10):
                i += 1
                producer.produce("clickstream", f"GET /cart {i}".encode())
                if i % 3 == 0:
                    producer.produce("audit-log", f"order live-{i} accepted".encode())
            producer.poll(0)
            self.stopped.wait(max(0.0, 0.1 - (time.monotonic() - began)))
        producer.flush(30)

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self.stopped.set()
        for thread in self.threads:
            thread.join(60)


def save(driver: Any, path: Path) -> None:
    """The whole page's height (as ``tests.support.console.screenshot``), into ``path``."""
    height = int(driver.execute_script("return document.documentElement.scrollHeight") or 900)
    driver.set_window_size(1400, max(900, min(height + 40, MAX_HEIGHT)))
    driver.save_screenshot(str(path))
    driver.set_window_size(1400, 1000)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    saved: list[str] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="franz-screenshots-") as work:
        overrides = {
            "metrics.listener": "http://127.0.0.1:0",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:ANONYMOUS",
        }
        with BrokerProcess(Path(work) / "broker", overrides) as broker:
            url = metrics_url(broker)
            print(f"broker {broker.bootstrap}, metrics {url}", flush=True)
            load_demo_data(broker.bootstrap)
            traffic = Traffic(broker.bootstrap)
            traffic.start()
            extra = ["--metrics-url", url] if url else []
            try:
                with ConsoleProcess(broker.bootstrap, Path(work) / "console", *extra) as console:
                    print(f"console {console.url}; traffic for {args.charts_s:.0f} s", flush=True)
                    time.sleep(args.charts_s)
                    driver = chromium()
                    try:
                        for name, path in PAGES:
                            target = console.url.rstrip("/") + path
                            status = httpx.get(target, timeout=60).status_code
                            if status != 200:
                                skipped.append(f"{name} ({path}: HTTP {status})")
                                continue
                            driver.get(target)
                            time.sleep(0.5)  # fonts and layout settle
                            save(driver, out / f"{name}.png")
                            saved.append(name)
                            print(f"  {name}: {out / (name + '.png')}", flush=True)
                    finally:
                        driver.quit()
            finally:
                traffic.stop()
    print(f"saved {len(saved)}: {', '.join(saved)}")
    if skipped:
        print(f"skipped {len(skipped)} (not served): {', '.join(skipped)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
