"""The storage benchmark's harness: aggregation, rendering, JSON shape, and a tiny real run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.report import (
    JSON_VERSION,
    Ratio,
    Report,
    Run,
    fmt_bytes,
    paired_ratios,
    render_markdown_table,
    summarize,
)
from bench.storage_bench import parse_args, settings_from_args
from bench.storage_io import KiB, MiB, build_template, make_pool
from franz.protocol.records.batch import iter_batches
from franz.protocol.records.inflated import iter_records

REPO = Path(__file__).resolve().parents[3]


# -- aggregation -------------------------------------------------------------------------


def test_summarize_odd_and_even_counts():
    assert summarize([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert summarize([4, 1, 3, 2]) == {"median": 2.5, "min": 1.0, "max": 4.0, "n": 4}
    assert summarize([7]) == {"median": 7.0, "min": 7.0, "max": 7.0, "n": 1}


def test_summarize_needs_values():
    with pytest.raises(ValueError):
        summarize([])


def test_run_derived_figures():
    run = Run(seconds=2.0, nbytes=4_000_000_000, batches=1000, cpu_seconds=1.0)
    assert run.mb_s == pytest.approx(2000.0)
    assert run.batches_s == pytest.approx(500.0)
    assert run.cpu_s_per_gb == pytest.approx(0.25)
    zero = Run(seconds=0.0, nbytes=0, batches=0, cpu_seconds=0.0)
    assert (zero.mb_s, zero.batches_s, zero.cpu_s_per_gb) == (0.0, 0.0, 0.0)


def test_paired_ratios_pair_by_run_index_and_skip_empty_runs():
    franz = [Run(1.0, 100, 1, 0.1), Run(1.0, 300, 1, 0.1), Run(1.0, 0, 0, 0.0)]
    ref = [Run(1.0, 200, 1, 0.1), Run(1.0, 300, 1, 0.1), Run(1.0, 100, 1, 0.1)]
    assert paired_ratios(franz, ref) == pytest.approx([0.5, 1.0])
    assert paired_ratios(franz[:1], ref) == pytest.approx([0.5])


def test_ratio_targets_and_verdicts():
    at_least = Ratio("a", "a", "x", "y", low=0.8)
    band = Ratio("b", "b", "x", "y", low=0.9, high=1.1)
    info = Ratio("c", "c", "x", "y")
    assert (at_least.verdict(0.8), at_least.verdict(0.79)) == ("PASS", "FAIL")
    assert (band.verdict(1.05), band.verdict(0.85), band.verdict(1.2)) == ("PASS", "FAIL", "FAIL")
    assert info.verdict(0.1) == "-"
    assert (at_least.target_text, band.target_text, info.target_text) == (
        ">= 80%",
        "90% - 110%",
        "info",
    )


# -- rendering ---------------------------------------------------------------------------


def test_render_markdown_table_aligns_columns():
    table = render_markdown_table(["name", "MB/s"], [["a", "1"], ["longer", "1,234"]], align="lr")
    lines = table.splitlines()
    assert lines[0] == "| name   |  MB/s |"
    assert lines[1] == "|--------|------:|"
    assert lines[2] == "| a      |     1 |"
    assert lines[3] == "| longer | 1,234 |"
    assert len({len(line) for line in lines}) == 1


def test_render_markdown_table_rejects_ragged_rows():
    with pytest.raises(ValueError):
        render_markdown_table(["a", "b"], [["1"]])


def test_fmt_bytes():
    assert fmt_bytes(512) == "512 B"
    assert fmt_bytes(16 * KiB) == "16 KiB"
    assert fmt_bytes(1536) == "1.5 KiB"
    assert fmt_bytes(10 * 1024 * MiB) == "10 GiB"
    assert fmt_bytes(1280 * MiB) == "1.25 GiB"


def _report() -> Report:
    report = Report(benchmark="storage", mode="quick", params={"runs": 2})
    franz = report.row("append.16k.franz", "append", "16 KiB batches", "franz", franz=True)
    ref = report.row("append.16k.os.write", "append", "16 KiB batches", "os.write", franz=False)
    franz.runs += [Run(1.0, 400_000_000, 100, 0.5), Run(1.0, 600_000_000, 150, 0.6)]
    ref.runs += [Run(1.0, 800_000_000, 200, 0.2), Run(1.0, 800_000_000, 200, 0.2, truncated=True)]
    report.add_ratio(Ratio("r", "franz / os.write", franz.id, ref.id, low=0.8))
    report.add_ratio(Ratio("missing", "x", "nope", ref.id))
    report.rss["append"] = 123.0
    return report


def test_report_markdown_has_figures_and_ratios():
    text = _report().markdown()
    assert "| append   | 16 KiB batches | franz    |         500 |      400-600 |" in text
    assert "62% of os.write" in text  # median of the paired ratios 0.5 and 0.75
    assert "| franz / os.write          |    62% | 50%-75% |       75% | >= 80% | FAIL    |" in text
    assert "2 (1 cut)" in text
    assert "append 123 MiB" in text


def test_report_json_shape():
    data = json.loads(json.dumps(_report().to_json()))
    assert data["version"] == JSON_VERSION
    assert set(data) >= {"benchmark", "mode", "params", "machine", "rows", "ratios", "caveats"}
    row = data["rows"][0]
    assert set(row) >= {"id", "scenario", "case", "system", "franz", "runs", "mb_s", "batches_s"}
    assert row["mb_s"] == {"median": 500.0, "min": 400.0, "max": 600.0, "n": 2}
    assert set(row["runs"][0]) >= {"seconds", "bytes", "batches", "cpu_seconds", "mb_s"}
    ratio = data["ratios"][0]
    assert ratio["ratio"]["median"] == pytest.approx(0.625)
    assert ratio["ratio"]["best"] == pytest.approx(0.75)
    assert ratio["verdict"] == "FAIL"
    assert data["ratios"][1]["ratio"] is None
    assert data["rows"][1]["truncated_runs"] == 1


# -- settings and batches ----------------------------------------------------------------


def test_settings_modes_and_overrides():
    full = settings_from_args(parse_args([]))
    assert (full.mode, full.runs, full.append_bytes) == ("full", 7, 1280 * MiB)
    assert (full.prefill_bytes, full.measure_bytes) == (10240 * MiB, 512 * MiB)
    quick = settings_from_args(parse_args(["--quick"]))
    assert (quick.runs, quick.append_bytes, quick.prefill_bytes) == (3, 200 * MiB, 1024 * MiB)
    tiny = settings_from_args(parse_args(["--quick", "--size-mb", "8", "--prefill-mb", "0"]))
    assert (tiny.append_bytes, tiny.measure_bytes, tiny.prefill_bytes) == (8 * MiB, 8 * MiB, 0)
    with pytest.raises(SystemExit):
        settings_from_args(parse_args(["--scenarios", "append,bogus"]))


def test_template_is_a_valid_batch_of_100_byte_records_close_to_the_target():
    template = build_template("16 KiB", 16 * KiB)
    assert 16 * KiB - 200 < template.size <= 16 * KiB
    (view,) = iter_batches(template.data)  # validates length and CRC
    records = list(iter_records(view))
    assert len(records) == template.records == view.records_count
    assert 140 <= template.records <= 160
    assert {len(r.value or b"") for r in records} == {100}
    pool = make_pool(template, 64 * KiB, batches=1000)
    assert len(pool) == 64 * KiB // template.size
    assert all(bytes(b) == template.data for b in pool)
    assert len(make_pool(template, 64 * MiB, batches=3)) == 3


# -- end to end --------------------------------------------------------------------------


def test_quick_run_end_to_end(tmp_path: Path):
    out = tmp_path / "results.json"
    data_parent = tmp_path / "data"
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.storage_bench",
            "--quick",
            "--size-mb",
            "8",
            "--prefill-mb",
            "16",
            "--segment-mb",
            "4",
            "--runs",
            "3",
            "--dir",
            str(data_parent),
            "--out",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 20, f"took {elapsed:.1f} s"
    stdout = proc.stdout
    # One progress line per system per run; the final tables.
    assert stdout.count("[append 16k] run ") == 9
    assert stdout.count("[read 1m] run ") == 9
    assert stdout.count("[stored] run ") == 6
    assert "## Results" in stdout
    for system in (
        "franz Log.append_as_leader",
        "reference os.write",
        "reference f.write (buffered)",
        "franz Log.read + sendfile",
        "reference sendfile 1 MiB chunks",
        "reference sendfile, same ranges",
        "franz, 0 B stored",
    ):
        assert f"| {system}" in stdout
    data = json.loads(out.read_text())
    ids = {row["id"] for row in data["rows"]}
    assert ids == {
        "append.16k.franz",
        "append.16k.os.write",
        "append.16k.f.write",
        "append.1m.franz",
        "append.1m.os.write",
        "append.1m.f.write",
        "read.16k.franz",
        "read.16k.ranges",
        "read.16k.chunks",
        "read.1m.franz",
        "read.1m.ranges",
        "read.1m.chunks",
        "stored.empty",
        "stored.full",
    }
    for row in data["rows"]:
        assert len(row["runs"]) == 3, row["id"]
        for metric in ("mb_s", "batches_s", "cpu_s_per_gb"):
            assert row[metric]["min"] > 0, (row["id"], metric)
        assert all(run["bytes"] > 0 for run in row["runs"])
    assert all(r["ratio"]["median"] > 0 for r in data["ratios"])
    assert data["notes"]["stored.bytes"] >= 15 * MiB
    assert data["rss_max_mib"]["append"] > 0
    assert data["caveats"]
    # The data directory is removed afterwards.
    assert list(data_parent.iterdir()) == []
