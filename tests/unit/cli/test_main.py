"""``franz <tool>``: every tool has ``--help``, and the entry point's exit codes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from franz.cli.main import TOOLS, main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "franz", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_tool_has_help(tool: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([tool, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: franz {tool}"), out[:200]
    # The module docstring is the description: more than the usage line.
    assert len(out.splitlines()) > 5


def test_top_level_help_lists_every_tool() -> None:
    result = run("--help")
    assert result.returncode == 0
    for tool, (_, summary) in TOOLS.items():
        assert f"  {tool}" in result.stdout and summary in result.stdout


def test_no_tool_prints_help_and_exits_2() -> None:
    result = run()
    assert result.returncode == 2
    assert "Tools:" in result.stdout


def test_unknown_tool_and_bad_flag_exit_2() -> None:
    unknown = run("no-such-tool")
    assert unknown.returncode == 2
    assert "unknown tool 'no-such-tool'" in unknown.stderr
    bad = run("topics", "--bootstrap-server", "127.0.0.1:1", "--list", "--no-such-flag")
    assert bad.returncode == 2
    assert "unrecognized arguments: --no-such-flag" in bad.stderr


def test_a_closed_stdout_pipe_exits_quietly() -> None:
    # `franz --help | head -1`-style: the reader goes away; no traceback on stderr.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from franz.cli.main import main; "
            "sys.exit(main(['get-offsets', '--help']))",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err
