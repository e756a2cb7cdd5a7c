"""The reference servers' lifecycle and the parsing of redis-benchmark's output.

The fixtures in ``fixtures/`` were captured from the installed binaries (Redis 7.0.15's
``redis-benchmark``, one ``XADD`` test, in ``--csv``, plain and ``-q`` form). The two server
tests start the real servers on loopback for a second or two; they are skipped where the
binaries are missing.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from bench.broker_bench import latency_run
from bench.broker_clients import CHILDREN, parse_json_line, run_timed
from bench.peer_clients import parse_args as peer_args
from bench.peer_clients import peer_child
from bench.peers import (
    NatsServer,
    RedisServer,
    free_port,
    parse_redis_benchmark,
    redis_benchmark_args,
    tool_version,
)

FIXTURES = Path(__file__).parent / "fixtures"


def _latency_args(out: dict) -> dict:
    """The latency children's JSON line, as ``broker_bench.latency_run``'s arguments."""
    assert out["received"] == len(out["latencies_us"])
    return {"latencies_us": out["latencies_us"], "sent": out["sent"]}


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_redis_benchmark_csv_gives_rps_and_latencies():
    result = parse_redis_benchmark(fixture("redis-benchmark-csv.txt"))
    assert result.test == "XADD bench * v vvvvvvvvvv"
    assert result.rps == 200000.0
    assert (result.avg_ms, result.p50_ms, result.p99_ms, result.max_ms) == (
        0.215,
        0.159,
        3.191,
        3.215,
    )


def test_redis_benchmark_plain_output_reads_the_summary_not_the_progress_line():
    result = parse_redis_benchmark(fixture("redis-benchmark-plain.txt"))
    assert result.rps == 40816.33
    assert result.test == "XADD bench * v vvvvvvvvvv"
    assert (result.avg_ms, result.p50_ms, result.p99_ms, result.max_ms) == (
        1.173,
        0.295,
        5.719,
        5.759,
    )


def test_redis_benchmark_quiet_output_skips_the_carriage_return_progress():
    text = fixture("redis-benchmark-quiet.txt")
    assert "rps=0.0 (overall: 55000.0)" in text  # the progress figure must not be taken
    result = parse_redis_benchmark(text)
    assert result.rps == 95238.09
    assert result.p50_ms == 0.111
    assert result.test == "XADD bench * v vvvvvvvvvv"


def test_redis_benchmark_without_a_result_says_so():
    with pytest.raises(ValueError, match="no redis-benchmark result"):
        parse_redis_benchmark("Could not connect to Redis at 127.0.0.1:1: Connection refused\n")


def test_redis_benchmark_args_run_only_xadd_in_csv():
    args = redis_benchmark_args(6400, "k", "vvv", 1000, 50, 100)
    assert args[:3] == ["redis-benchmark", "-h", "127.0.0.1"]
    assert args[args.index("-p") + 1] == "6400"
    assert args[args.index("-n") + 1] == "1000"
    assert args[args.index("-c") + 1] == "50"
    assert args[args.index("-P") + 1] == "100"
    assert "--csv" in args
    assert args[-5:] == ["XADD", "k", "*", "v", "vvv"]
    with pytest.raises(ValueError):
        redis_benchmark_args(6400, "k", "a\nb", 1, 1, 1)


def test_free_port_is_bindable():
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_tool_version_is_the_first_line_or_a_question_mark():
    assert tool_version(["printf", "v1 x\nmore\n"]) == "v1 x"
    assert tool_version(["/nonexistent/tool"]) == "?"


def test_peer_child_arguments_parse():
    args = peer_args(peer_child("redis-produce", "--port", 7, "--records", 10)[3:])
    assert (args.command, args.port, args.records, args.value_size) == ("redis-produce", 7, 10, 100)


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed")
def test_redis_server_with_the_aof_serves_the_redis_children(tmp_path):
    server = RedisServer(tmp_path / "redis").start()
    try:
        assert server.pid in CHILDREN
        assert "--appendonly" in server.args() and "everysec" in server.args()
        port = str(server.port)
        produce = run_timed(
            peer_child("redis-produce", "--port", port, "--key", "t", "--records", 3000),
            timeout=30.0,
            stdout="capture",
        )
        assert produce.ok, produce.describe_failure()
        out = parse_json_line(produce.stdout)
        assert (out["records"], out["stored"], out["bytes"], out["cut"]) == (
            3000,
            3000,
            300_000,
            False,
        )
        consume = run_timed(
            peer_child("redis-consume", "--port", port, "--key", "t", "--batch", 1000),
            timeout=30.0,
            stdout="capture",
        )
        assert consume.ok, consume.describe_failure()
        got = parse_json_line(consume.stdout)
        assert (got["records"], got["expected"], got["bytes"]) == (3000, 3000, 300_000)
        latency = run_timed(
            peer_child("redis-latency", "--port", port, "--key", "l", "--seconds", 0.3,
                       "--rate", 100),
            timeout=30.0,
            stdout="capture",
        )  # fmt: skip
        assert latency.ok, latency.describe_failure()
        lat = latency_run(**_latency_args(parse_json_line(latency.stdout)))
        assert lat.received == 30 and lat.lost == 0 and 0 < lat.p50 < 1000
        assert server.sample() is not None
    finally:
        code = server.stop()
    assert code == 0
    assert server.proc is None
    assert (tmp_path / "redis" / "appendonlydir").is_dir()


@pytest.mark.skipif(shutil.which("nats-server") is None, reason="nats-server not installed")
def test_nats_server_with_jetstream_serves_the_nats_children(tmp_path):
    server = NatsServer(tmp_path / "nats").start()
    try:
        produce = run_timed(
            peer_child("nats-produce", "--url", server.url, "--stream", "s", "--records", 500),
            timeout=30.0,
            stdout="capture",
        )
        assert produce.ok, produce.describe_failure()
        out = parse_json_line(produce.stdout)
        assert (out["records"], out["stored"]) == (500, 500)
        consume = run_timed(
            peer_child("nats-consume", "--url", server.url, "--stream", "s"),
            timeout=30.0,
            stdout="capture",
        )
        assert consume.ok, consume.describe_failure()
        got = parse_json_line(consume.stdout)
        assert (got["records"], got["expected"], got["bytes"]) == (500, 500, 50_000)
        latency = run_timed(
            peer_child("nats-latency", "--url", server.url, "--stream", "l", "--seconds", 0.3,
                       "--rate", 100),
            timeout=30.0,
            stdout="capture",
        )  # fmt: skip
        assert latency.ok, latency.describe_failure()
        lat = latency_run(**_latency_args(parse_json_line(latency.stdout)))
        assert lat.received == 30 and lat.lost == 0 and 0 < lat.p50 < 1000
    finally:
        server.stop()
    assert server.proc is None
    assert (tmp_path / "nats" / "jetstream").is_dir()
