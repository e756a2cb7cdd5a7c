"""Java ``.properties`` files, the format of ``server.properties`` and ``meta.properties``.

Supported: ``key=value``, ``key: value`` and ``key value`` lines, ``#``/``!`` comments, blank
lines, backslash line continuations and the escapes ``\\t \\n \\r \\f \\\\ \\uXXXX``. That is the
subset Kafka's own files and operators' hand-written ones use.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["dump_properties", "load_properties", "parse_properties", "write_properties_atomic"]

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATOR = re.compile(r"(?<!\\)[=:\s]")


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Parse properties text into an ordered dict (later keys win, as in Java)."""
    result: dict[str, str] = {}
    logical: list[str] = []
    for raw in text.splitlines():
        line = raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        continued = len(line) - len(line.rstrip("\\"))
        if continued % 2 == 1:
            logical.append(line[:-1])
            continue
        logical.append(line)
        entry = "".join(logical)
        logical = []
        match = _SEPARATOR.search(entry)
        if match is None:
            key, value = entry, ""
        else:
            key = entry[: match.start()]
            rest = entry[match.start() :].lstrip()
            if rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip()
            value = rest
        result[_unescape(key)] = _unescape(value)
    return result


def load_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    return parse_properties(Path(path).read_text(encoding="utf-8"))


def dump_properties(values: Mapping[str, str], header: str | None = None) -> str:
    lines = [f"#{header}"] if header else []
    for key, value in values.items():
        safe_key = key.replace("\\", "\\\\").replace("=", "\\=").replace(":", "\\:")
        safe_value = value.replace("\\", "\\\\").replace("\n", "\\n")
        lines.append(f"{safe_key}={safe_value}")
    return "\n".join(lines) + "\n"


def write_properties_atomic(
    path: str | os.PathLike[str], values: Mapping[str, str], header: str | None = None
) -> None:
    """Write via a temp file, fsync and rename, so a crash leaves the old or the new file."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(dump_properties(values, header))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
