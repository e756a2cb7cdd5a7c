"""``bench.report``'s helpers shared by the broker and group benches: findings, formatting."""

from __future__ import annotations

import math

import pytest

from bench.report import Findings, fmt_or_dash


def test_findings_keep_a_note_once_and_every_warning(capsys: pytest.CaptureFixture[str]):
    f = Findings()
    f.note("n1")
    f.note("n1")
    f.warn("w1")
    f.warn("w1")
    assert f.notes == ["n1"]
    assert f.warnings == ["w1", "w1"]
    assert capsys.readouterr().out == "WARNING: w1\nWARNING: w1\n"


def test_findings_lines_render_notes_then_warnings_each_after_a_blank_line():
    f = Findings()
    assert f.findings_lines() == []
    f.warnings.append("w")
    assert f.findings_lines() == ["", "Warnings:", "- w"]
    f.notes += ["a", "b"]
    assert f.findings_lines() == ["", "Notes:", "- a", "- b", "", "Warnings:", "- w"]


def test_fmt_or_dash():
    assert fmt_or_dash(1234.5) == "1,234"
    assert fmt_or_dash(0.125, ".2f") == "0.12"
    assert fmt_or_dash(None) == "-"
    assert fmt_or_dash(math.nan, ".2f") == "-"
