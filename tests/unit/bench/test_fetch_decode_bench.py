"""bench.fetch_decode_bench runs end to end on a tiny response and prints its table."""

from __future__ import annotations

import pytest

from bench import fetch_decode_bench
from franz.protocol.fetch_response import decode_fetch_response


def test_tiny_run_prints_both_versions(capsys: pytest.CaptureFixture[str]) -> None:
    fetch_decode_bench.main(["--mib", "0.05", "--partitions", "2", "--runs", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["version", "parts"]
    assert [line.split()[0] for line in lines[1:]] == ["12", "17"]


def test_made_response_decodes_to_the_batches() -> None:
    body = fetch_decode_bench.make_response(12, 0.05, 2)
    (topic,) = decode_fetch_response(12, body).responses
    assert [len(p.records) > 0 for p in topic.partitions] == [True, True]
