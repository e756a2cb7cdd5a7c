"""The suite's client children: each runs one timed loop and prints one JSON line.

``python -m bench.peer_clients <command> [options]``, started by :mod:`bench.suite` through
``broker_clients.run_timed`` (so it is timed from spawn to exit, killed at a limit and
registered by PID); the loop inside times itself from its first request to its last answer,
which is the figure the suite reports (the process's wall time is kept for the CPU figure):

- ``kafka-produce``: a confluent-kafka ``Producer`` (``--acks 1|all``; the loop of
  ``broker_clients``' client child, with the acks as a flag), N keyless values, then
  ``flush()``; the high watermarks before and after give the count stored;
- ``kafka-consume``: a confluent-kafka ``Consumer`` ``assign()``ed every partition from the
  beginning, until it has every record the topic holds (no group, no commits);
- ``redis-produce``: redis-py, ``XADD key * v <value>`` in non-transactional pipelines of
  ``--batch`` (1,000) commands; ``redis-consume``: ``XRANGE`` of ``--batch`` (10,000) entries
  at a time from ``-`` to the end; ``redis-latency``: one ``XADD`` at a time at a fixed rate,
  a second connection in a thread blocked in ``XREAD BLOCK`` stamps the arrivals;
- ``nats-produce``: nats-py JetStream ``publish_async`` (acknowledged publishes, a window of
  pending acks) to a file-storage stream, then ``publish_async_completed()``;
  ``nats-consume``: a pull consumer (``AckPolicy.NONE``) fetching ``--batch`` messages at a
  time; ``nats-latency``: ``js.publish`` (waits for the PubAck) at a fixed rate, an ordered
  push consumer stamps the arrivals.

Every loop stops at ``--seconds`` and says so (``"cut": true``): the suite's scenarios are
bounded in time whatever a system's speed. Output shapes: throughput children print
``{"records", "bytes", "seconds", "cpu_s", "cut", "stored"?, ...}``; latency children print
``{"latencies_us", "sent", "received"}`` like ``broker_clients``' latency child.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import struct
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "peer_child"]

_STAMP = struct.Struct(">qq")  # sequence number, perf_counter_ns() at send (as broker_clients)


def peer_child(command: str, *args: object) -> list[str]:
    """argv for ``python -m bench.peer_clients <command> <args>``."""
    return [sys.executable, "-m", "bench.peer_clients", command, *(str(a) for a in args)]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _values(size: int, count: int = 256) -> list[bytes]:
    return [os.urandom(size) for _ in range(count)]


def _stamped(seq: int, size: int) -> bytes:
    return _STAMP.pack(seq, time.perf_counter_ns()) + bytes(max(0, size - _STAMP.size))


# -- confluent-kafka ---------------------------------------------------------------------------


def _kafka_produce(args: argparse.Namespace) -> dict[str, Any]:
    from bench.broker_clients import _consumer, _open_producer, _watermarks

    producer, bootstrap, partitions = _open_producer(args, {"acks": args.acks})
    probe = _consumer(bootstrap, {})
    before = _watermarks(probe, args.topic, partitions) if not args.mock_in_client else {}
    values = _values(args.value_size, 1024)
    produce, poll, topic, n = producer.produce, producer.poll, args.topic, args.records
    deadline = time.perf_counter() + args.seconds
    sent, cut = 0, False
    cpu0, t0 = _cpu(), time.perf_counter()
    for i in range(n):
        while True:
            try:
                produce(topic, values[i & 1023])
                break
            except BufferError:
                poll(0.001)
        sent += 1
        if not i & 0x3FFF:
            poll(0)
            if time.perf_counter() > deadline:
                cut = True
                break
    left = producer.flush(max(1.0, deadline + 10 - time.perf_counter()))
    t1, cpu1 = time.perf_counter(), _cpu()
    out: dict[str, Any] = {
        "records": sent - left,
        "bytes": (sent - left) * args.value_size,
        "seconds": t1 - t0,
        "cpu_s": cpu1 - cpu0,
        "cut": cut,
        "unflushed": left,
    }
    if before:
        after = _watermarks(probe, args.topic, partitions)
        out["stored"] = sum(after[p][1] - before[p][1] for p in partitions)
    probe.close()
    return out


def _kafka_consume(args: argparse.Namespace) -> dict[str, Any]:
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    from bench.broker_clients import _consumer, _watermarks

    consumer = _consumer(args.bootstrap, {})
    meta = consumer.list_topics(args.topic, timeout=10.0).topics[args.topic]
    partitions = sorted(meta.partitions)
    marks = _watermarks(consumer, args.topic, partitions)
    held = sum(hi - lo for lo, hi in marks.values())
    got = nbytes = errors = 0
    deadline = time.perf_counter() + args.seconds
    cpu0, t0 = _cpu(), time.perf_counter()
    consumer.assign([TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in partitions])
    consume = consumer.consume
    while got < held and time.perf_counter() < deadline:
        for m in consume(num_messages=min(10_000, held - got), timeout=1.0):
            if m.error() is None:
                got += 1
                nbytes += len(m.value())
            else:
                errors += 1
    t1, cpu1 = time.perf_counter(), _cpu()
    consumer.close()
    return {
        "records": got,
        "bytes": nbytes,
        "seconds": t1 - t0,
        "cpu_s": cpu1 - cpu0,
        "cut": got < held,
        "expected": held,
        "errors": errors,
    }


# -- Redis Streams (redis-py) ------------------------------------------------------------------


def _redis(args: argparse.Namespace) -> Any:
    import redis

    return redis.Redis(host="127.0.0.1", port=args.port, socket_timeout=30)


def _redis_produce(args: argparse.Namespace) -> dict[str, Any]:
    r = _redis(args)
    before = int(r.xlen(args.key))
    values = _values(args.value_size)
    pipe = r.pipeline(transaction=False)
    sent, n, batch, cut = 0, args.records, args.batch, False
    deadline = time.perf_counter() + args.seconds
    cpu0, t0 = _cpu(), time.perf_counter()
    while sent < n:
        k = min(batch, n - sent)
        for i in range(sent, sent + k):
            pipe.xadd(args.key, {"v": values[i & 255]})
        pipe.execute()
        sent += k
        if time.perf_counter() > deadline:
            cut = sent < n
            break
    t1, cpu1 = time.perf_counter(), _cpu()
    stored = int(r.xlen(args.key)) - before
    return {
        "records": sent,
        "bytes": sent * args.value_size,
        "seconds": t1 - t0,
        "cpu_s": cpu1 - cpu0,
        "cut": cut,
        "stored": stored,
    }


def _redis_consume(args: argparse.Namespace) -> dict[str, Any]:
    r = _redis(args)
    held = int(r.xlen(args.key))
    got = nbytes = 0
    start: bytes | str = "-"
    deadline = time.perf_counter() + args.seconds
    cpu0, t0 = _cpu(), time.perf_counter()
    while got < held and time.perf_counter() < deadline:
        entries = r.xrange(args.key, min=start, max="+", count=args.batch)
        if not entries:
            break
        got += len(entries)
        nbytes += sum(len(fields[b"v"]) for _, fields in entries)
        start = b"(" + entries[-1][0]
    t1, cpu1 = time.perf_counter(), _cpu()
    return {
        "records": got,
        "bytes": nbytes,
        "seconds": t1 - t0,
        "cpu_s": cpu1 - cpu0,
        "cut": got < held,
        "expected": held,
    }


def _redis_latency(args: argparse.Namespace) -> dict[str, Any]:
    producer, reader = _redis(args), _redis(args)
    latencies: list[int] = []
    stop = threading.Event()
    last_id = producer.xadd(args.key, {"v": b"warm-up"})  # the reader starts after it

    def read() -> None:
        position = last_id
        while not stop.is_set():
            reply = reader.xread({args.key: position}, count=1000, block=100)
            for _, entries in reply or []:
                for entry_id, fields in entries:
                    got = time.perf_counter_ns()
                    seq, stamp = _STAMP.unpack_from(fields[b"v"])
                    if seq >= 0:
                        latencies.append((got - stamp) // 1000)
                    position = entry_id

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    sent = _paced(args, lambda seq: producer.xadd(args.key, {"v": _stamped(seq, args.value_size)}))
    end = time.monotonic() + 2.0
    while len(latencies) < sent and time.monotonic() < end:
        time.sleep(0.01)
    stop.set()
    thread.join(2.0)
    return {"latencies_us": latencies, "sent": sent, "received": len(latencies)}


def _paced(args: argparse.Namespace, send: Any) -> int:
    """Call ``send(seq)`` ``args.rate`` times a second for ``args.seconds``; the count sent."""
    interval = 1.0 / args.rate
    start = time.perf_counter()
    end, sent = start + args.seconds, 0
    while True:
        due = start + sent * interval
        now = time.perf_counter()
        if due >= end:
            return sent
        if due > now:
            time.sleep(due - now)
        send(sent)
        sent += 1


# -- NATS JetStream (nats-py) ------------------------------------------------------------------


async def _jetstream(args: argparse.Namespace) -> tuple[Any, Any]:
    import nats
    from nats.js.api import StorageType

    nc = await nats.connect(args.url, max_reconnect_attempts=0)
    js = nc.jetstream()
    await js.add_stream(name=args.stream, subjects=[args.stream], storage=StorageType.FILE)
    return nc, js


async def _nats_produce(args: argparse.Namespace) -> dict[str, Any]:
    nc, js = await _jetstream(args)
    before = (await js.stream_info(args.stream)).state.messages
    values = _values(args.value_size)
    sent, cut = 0, False
    deadline = time.perf_counter() + args.seconds
    cpu0, t0 = _cpu(), time.perf_counter()
    for i in range(args.records):
        await js.publish_async(args.stream, values[i & 255], wait_stall=30.0)
        sent += 1
        if not i & 0x3FF and time.perf_counter() > deadline:
            cut = True
            break
    await js.publish_async_completed()
    t1, cpu1 = time.perf_counter(), _cpu()
    info = await js.stream_info(args.stream)
    await nc.close()
    return {
        "records": sent,
        "bytes": sent * args.value_size,
        "seconds": t1 - t0,
        "cpu_s": cpu1 - cpu0,
        "cut": cut,
        "stored": info.state.messages - before,
        "stream_bytes": info.state.bytes,
    }


async def _nats_consume(args: argparse.Namespace) -> dict[str, Any]:
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

    nc, js = await _jetstream(args)
    held = (await js.stream_info(args.stream)).state.messages
    config = ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL)
    got = nbytes = 0
    deadline = time.perf_counter() + args.seconds
    cpu0, t0 = _cpu(), time.perf_counter()
    sub = await js.pull_subscribe(args.stream, config=config)
    while got < held and time.perf_counter() < deadline:
        try:
            msgs = await sub.fetch(batch=min(args.batch, held - got), timeout=2.0)
        except NatsTimeout:
            continue
        got += len(msgs)
        nbytes += sum(len(m.data) for m in msgs)
    t1, cpu1 = time.perf_counter(), _cpu()
    await nc.close()
    return {
        "records": got,
        "bytes": nbytes,
        "seconds": t1 - t0,
        "cpu_s": cpu1 - cpu0,
        "cut": got < held,
        "expected": held,
    }


async def _nats_latency(args: argparse.Namespace) -> dict[str, Any]:
    from nats.js.api import DeliverPolicy

    nc, js = await _jetstream(args)
    latencies: list[int] = []

    async def on_msg(msg: Any) -> None:
        got = time.perf_counter_ns()
        _seq, stamp = _STAMP.unpack_from(msg.data)
        latencies.append((got - stamp) // 1000)

    await js.subscribe(
        args.stream, cb=on_msg, ordered_consumer=True, deliver_policy=DeliverPolicy.NEW
    )
    await asyncio.sleep(0.2)  # the consumer is created before the first send
    interval = 1.0 / args.rate
    loop = asyncio.get_running_loop()
    start = loop.time()
    sent = 0
    while start + sent * interval < start + args.seconds:
        delay = start + sent * interval - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        await js.publish(args.stream, _stamped(sent, args.value_size))
        sent += 1
    end = loop.time() + 2.0
    while len(latencies) < sent and loop.time() < end:
        await asyncio.sleep(0.01)
    await nc.close()
    return {"latencies_us": latencies, "sent": sent, "received": len(latencies)}


# -- entry point -------------------------------------------------------------------------------

COMMANDS = {
    "kafka-produce": _kafka_produce,
    "kafka-consume": _kafka_consume,
    "redis-produce": _redis_produce,
    "redis-consume": _redis_consume,
    "redis-latency": _redis_latency,
    "nats-produce": _nats_produce,
    "nats-consume": _nats_consume,
    "nats-latency": _nats_latency,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.peer_clients")
    p.add_argument("command", choices=sorted(COMMANDS))
    p.add_argument("--bootstrap", default="127.0.0.1:9", help="kafka: bootstrap servers")
    p.add_argument("--mock-in-client", action="store_true", help="kafka: test.mock.num.brokers=1")
    p.add_argument("--topic", default="bench", help="kafka topic")
    p.add_argument("--acks", default="1", help="kafka producer acks (1 or all)")
    p.add_argument("--port", type=int, default=6379, help="redis port")
    p.add_argument("--key", default="bench", help="redis stream key")
    p.add_argument("--url", default="nats://127.0.0.1:4222", help="nats server")
    p.add_argument("--stream", default="bench", help="nats stream (and its subject)")
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--value-size", type=int, default=100)
    p.add_argument("--batch", type=int, default=1000, help="pipeline / XRANGE / fetch size")
    p.add_argument("--seconds", type=float, default=30.0, help="stop the loop after this")
    p.add_argument("--rate", type=float, default=1000.0, help="latency: records/s sent")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    result = COMMANDS[args.command](args)
    if asyncio.iscoroutine(result):
        result = asyncio.run(result)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
