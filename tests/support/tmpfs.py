"""A small tmpfs for full-disk tests (we run as root; without mount permission tests skip)."""

from __future__ import annotations

import contextlib
import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["fill_with_a_file", "mounted_tmpfs", "remount"]


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@contextlib.contextmanager
def mounted_tmpfs(mount_point: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (mount's syntax: ``8m``) at ``mount_point``; unmount it
    afterwards (lazily if a process still holds it)."""
    mount_point.mkdir(parents=True, exist_ok=True)
    try:
        mounted = _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point))
    except FileNotFoundError:
        pytest.skip("no mount command")
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield mount_point
    finally:
        unmounted = subprocess.run(["umount", str(mount_point)], capture_output=True, check=False)
        if unmounted.returncode != 0:
            subprocess.run(["umount", "-l", str(mount_point)], check=False)


def remount(mount_point: Path, size: str) -> None:
    """Give the tmpfs at ``mount_point`` a new size, keeping its files."""
    result = _mount("-o", f"remount,size={size}", str(mount_point))
    assert result.returncode == 0, result.stderr


def fill_with_a_file(directory: Path) -> Path:
    """Fill the file system of ``directory`` with a file of our own; return its path."""
    filler = directory / "filler.bin"
    chunk = b"\xa5" * 4096
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler
