"""BrokerSender / OutboundChannel: retry until answered, in order, reconnect with backoff."""

from __future__ import annotations

import asyncio
import socket

import pytest

from franz.network.sender import (
    BrokerRemovedError,
    BrokerSender,
    OutboundChannel,
    SenderConfig,
    reconnect_backoff,
)
from franz.protocol.api_keys import ApiKey
from franz.protocol.headers import RequestHeader
from tests.unit.network.fake_broker import CLOSE, FakeBroker, echo
from tests.unit.network.test_client import run

FAST = SenderConfig(request_timeout=0.2, reconnect_backoff=0.01, reconnect_backoff_max=0.05)
UPDATE_METADATA_V5 = (ApiKey.UPDATE_METADATA, 5)  # non-flexible: response header v0


def free_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = int(probe.getsockname()[1])
    probe.close()
    return port


def test_reconnect_backoff_doubles_to_the_maximum_with_jitter() -> None:
    middle = [reconnect_backoff(n, 0.05, 1.0, lambda: 0.5) for n in range(7)]
    assert middle == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0])
    assert reconnect_backoff(0, 0.05, 1.0, lambda: 0.0) == pytest.approx(0.04)
    assert reconnect_backoff(10, 0.05, 1.0, lambda: 1.0) == pytest.approx(1.2)
    assert reconnect_backoff(1000, 0.05, 1.0, lambda: 0.5) == pytest.approx(1.0)
    assert reconnect_backoff(3, 0.5, 0.1, lambda: 0.5) == pytest.approx(0.5)


def test_request_is_retried_until_answered() -> None:
    def respond(index: int, header: RequestHeader, frame: bytes) -> bytes | None:
        if index == 0:
            return CLOSE  # dropped without an answer
        if index == 1:
            return None  # never answered: the request times out
        return echo(header, frame[-3:])

    async def test() -> None:
        async with FakeBroker(respond) as broker:
            sender = BrokerSender(1, "127.0.0.1", broker.port, FAST)
            sender.start()
            response = await asyncio.wait_for(
                sender.enqueue(*UPDATE_METADATA_V5, b"abc"), timeout=10
            )
            assert bytes(response.body) == b"abc"
            assert broker.connections == 3
            assert sender.failed_attempts == 2
            await sender.close()

    run(test)


def test_requests_are_sent_one_at_a_time_in_order() -> None:
    in_flight: list[int] = []

    def respond(index: int, header: RequestHeader, frame: bytes) -> bytes | None:
        in_flight.append(header.correlation_id)
        return echo(header, frame[-1:])

    async def test() -> None:
        async with FakeBroker(respond) as broker:
            sender = BrokerSender(1, "127.0.0.1", broker.port, FAST)
            sender.start()
            futures = [sender.enqueue(*UPDATE_METADATA_V5, bytes([i])) for i in range(5)]
            assert sender.queue_size == 5
            responses = await asyncio.wait_for(asyncio.gather(*futures), timeout=10)
            assert [bytes(r.body) for r in responses] == [bytes([i]) for i in range(5)]
            assert broker.connections == 1
            await sender.close()

    run(test)


def test_unreachable_broker_is_retried_until_its_new_address_is_given() -> None:
    async def test() -> None:
        sender = BrokerSender(2, "127.0.0.1", free_port(), FAST)
        sender.start()
        future = sender.enqueue(*UPDATE_METADATA_V5, b"x")
        await asyncio.sleep(0.3)
        assert sender.failed_attempts >= 3
        assert not future.done()
        async with FakeBroker(lambda _, h, f: echo(h, b"here")) as broker:
            sender.update_address("127.0.0.1", broker.port)
            response = await asyncio.wait_for(future, timeout=10)
            assert bytes(response.body) == b"here"
            await sender.close()

    run(test)


def test_close_fails_queued_requests_and_leaves_no_task() -> None:
    async def test() -> None:
        async with FakeBroker(lambda *_: None) as broker:
            sender = BrokerSender(3, "127.0.0.1", broker.port, SenderConfig())
            sender.start()
            futures = [sender.enqueue(*UPDATE_METADATA_V5, b"") for _ in range(3)]
            while not broker.requests:
                await asyncio.sleep(0.01)
            await sender.close()
            for future in futures:
                with pytest.raises(BrokerRemovedError, match="broker 3 was removed"):
                    await future
            with pytest.raises(BrokerRemovedError):
                sender.enqueue(*UPDATE_METADATA_V5, b"")

    run(test)


def test_cancelled_request_is_withdrawn() -> None:
    async def test() -> None:
        async with FakeBroker(lambda _, h, f: echo(h, frame_tail(f))) as broker:
            sender = BrokerSender(1, "127.0.0.1", broker.port, FAST)
            withdrawn = sender.enqueue(*UPDATE_METADATA_V5, b"a")
            kept = sender.enqueue(*UPDATE_METADATA_V5, b"b")
            withdrawn.cancel()
            sender.start()
            assert bytes((await asyncio.wait_for(kept, 10)).body) == b"b"
            assert len(broker.requests) == 1
            await sender.close()

    run(test)


def frame_tail(frame: bytes) -> bytes:
    return frame[-1:]


def test_outbound_channel_routes_per_broker() -> None:
    async def test() -> None:
        async with (
            FakeBroker(lambda _, h, f: echo(h, b"one")) as one,
            FakeBroker(lambda _, h, f: echo(h, b"two")) as two,
        ):
            channel = OutboundChannel(FAST)
            channel.add_broker(1, "127.0.0.1", one.port)
            channel.add_broker(2, "127.0.0.1", two.port)
            channel.add_broker(2, "127.0.0.1", two.port)  # known: same sender
            assert channel.broker_ids == [1, 2]
            r1 = await asyncio.wait_for(channel.send(1, *UPDATE_METADATA_V5, b""), 10)
            r2 = await asyncio.wait_for(channel.send(2, *UPDATE_METADATA_V5, b""), 10)
            assert (bytes(r1.body), bytes(r2.body)) == (b"one", b"two")
            await channel.remove_broker(1)
            with pytest.raises(BrokerRemovedError, match="broker 1 is not in the channel"):
                channel.send(1, *UPDATE_METADATA_V5, b"")
            await channel.close()
            assert channel.broker_ids == []

    run(test)
