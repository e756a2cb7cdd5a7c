"""Jackson's output and the iteration order of the Scala/Java maps Kafka hands to it, plus
the decoding helpers every znode shares (see the package docstring for the rules)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from franz.errors import FranzError

__all__ = [
    "ZNodeDecodeError",
    "as_object",
    "get_int",
    "get_str",
    "int_list",
    "jackson_bytes",
    "java_hash_order",
    "ordered",
    "parse",
    "scala_immutable_order",
    "scala_mutable_order",
]


class ZNodeDecodeError(FranzError):
    """A znode's bytes are not the JSON Kafka writes there; ``path`` names the znode."""

    def __init__(self, path: str, reason: str, data: bytes | None = None) -> None:
        shown = "" if data is None else f": {data[:200]!r}"
        super().__init__(f"malformed znode {path}: {reason}{shown}")
        self.path = path


# --------------------------------------------------------------------------- Jackson + order
_ESCAPE: Final = re.compile(r"\\u00([0-9a-f]{2})")


def jackson_bytes(value: Any) -> bytes:
    """Serialize like Kafka's ``Json.encodeAsBytes`` (Jackson's defaults); dicts keep their
    order, so callers order keys with the helpers below."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _ESCAPE.sub(lambda m: "\\u00" + m.group(1).upper(), text).encode("utf-8")


def _i32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def _java_hash(s: str) -> int:
    """``String.hashCode`` over UTF-16 code units."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = _i32(31 * h + ((data[i] << 8) | data[i + 1]))
    return h


def _spread(h: int) -> int:
    return _i32(h ^ ((h & 0xFFFFFFFF) >> 16))


def _scala_improve(h: int) -> int:
    h = _i32(h + ~_i32(h << 9))
    h = _i32(h ^ ((h & 0xFFFFFFFF) >> 14))
    h = _i32(h + _i32(h << 4))
    return _i32(h ^ ((h & 0xFFFFFFFF) >> 10))


def _table_size_for(capacity: int) -> int:
    return 1 << max(capacity - 1, 4).bit_length()


def scala_immutable_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of Scala 2.13 ``Map(k -> v, ...)`` (CHAMP with 5+ entries)."""
    if len(keys) <= 4:
        return list(keys)
    masks = {k: _scala_improve(_java_hash(k)) & 0x1F for k in keys}
    if len(set(masks.values())) != len(keys):  # pragma: no cover - no Kafka key set collides
        raise AssertionError(f"CHAMP sub-node ordering not modelled for {keys}")
    return sorted(keys, key=masks.__getitem__)


def scala_mutable_order(keys: Sequence[str], initial: int | None = None) -> list[str]:
    """Iteration order of a Scala 2.13 ``mutable.HashMap`` built from ``initial`` entries
    (``mutable.Map(a, b)``, sized from the known count) and grown by ``+=`` of the rest;
    ``initial=None`` means ``mutable.Map()`` (16 slots)."""
    length = _table_size_for(16 if not initial else int((initial + 1) / 0.75))
    threshold = int(length * 0.75)
    for size in range(len(keys)):
        if size + 1 >= threshold:
            length *= 2
            threshold = int(length * 0.75)
    hashes = {k: _spread(_java_hash(k)) for k in keys}
    return sorted(keys, key=lambda k: (hashes[k] & (length - 1), hashes[k]))


def java_hash_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of a ``java.util.HashMap`` (or ``Properties``) with these keys put in
    this order (16 slots, doubling when the size exceeds 3/4; bins keep insertion order)."""
    length = 16
    while len(keys) > length * 3 // 4:
        length *= 2
    return sorted(keys, key=lambda k: _spread(_java_hash(k)) & (length - 1))


def ordered(mapping: Mapping[str, Any], order: list[str]) -> dict[str, Any]:
    return {k: mapping[k] for k in order}


# --------------------------------------------------------------------------- decoding helpers
def parse(path: str, data: bytes | None) -> Any:
    if data is None:
        raise ZNodeDecodeError(path, "no data")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ZNodeDecodeError(path, f"not JSON ({exc})", data) from exc


def as_object(path: str, value: Any, what: str = "the znode") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ZNodeDecodeError(path, f"{what} is not a JSON object")
    return value


def get_int(path: str, obj: Mapping[str, Any], key: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZNodeDecodeError(path, f"{key!r} is not an integer: {value!r}")
    return value


def get_str(path: str, obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise ZNodeDecodeError(path, f"{key!r} is not a string: {value!r}")
    return value


def int_list(path: str, value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise ZNodeDecodeError(path, f"{what} is not a list of integers: {value!r}")
    return list(value)
