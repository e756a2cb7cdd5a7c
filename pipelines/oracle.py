"""What the pipeline must output for a stream of events, computed in plain Python.

This is the independent check of the Spark jobs: it reads only the records' bytes (never the
generator's labels) and applies the documented event schema and Spark's watermark rules.

**Validation** (the streaming job's order, first match wins): ``invalid_json`` (not UTF-8,
not JSON, or not a JSON object), ``missing_field`` (a required field absent or null, or a
click without ``element``, a search without ``query``), ``unknown_event_type``,
``bad_timestamp`` (``ts`` is not ``yyyy-MM-dd'T'HH:mm:ss.SSSZ`` naming a real instant).

**Watermark** (Spark Structured Streaming, checked against Spark 4.3 with the file source and
with ``format("franz")``): the watermark a micro-batch uses is ``max(event time) - delay``
over the valid rows of the batches before it (0 before any; it never decreases; it survives
restarts through the checkpoint's commit log). In a batch, a row whose window ends at or
before that watermark is dropped (``window.end <= watermark``). After a batch, a window is
final and emitted (append mode) once ``window.end <= watermark`` for the updated watermark;
``availableNow`` runs that extra no-data batch before it stops. So:

- ``runs``: the records each run of the streaming job processes. The oracle assumes one data
  micro-batch per run (no ``maxOffsetsPerTrigger``), which is how the jobs run by default.
  The generator's margins make the result the same for any split of a run into batches, as
  long as one batch does not run ahead of another by more than 30 s of event time.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pipelines.common import WATERMARK_DELAY_MS, WINDOW_MS

__all__ = ["Expected", "WindowKey", "classify", "expected_results", "parse_ts"]

_EVENT_TYPES: Final = frozenset({"page_view", "click", "search"})
_REQUIRED: Final = ("event_id", "event_type", "ts", "user_id", "session_id", "page")
_TYPE_FIELDS: Final = {"click": "element", "search": "query"}
_TS: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z")

#: (window start in epoch ms, page, event type)
WindowKey = tuple[int, str, str]


def parse_ts(text: Any) -> int | None:
    """``yyyy-MM-dd'T'HH:mm:ss.SSSZ`` (UTC) as epoch ms; None if it is not that or no such
    date."""
    if not isinstance(text, str):
        return None
    match = _TS.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, millis = (int(g) for g in match.groups())
    try:
        moment = dt.datetime(year, month, day, hour, minute, second, tzinfo=dt.UTC)
    except ValueError:
        return None
    return int(moment.timestamp()) * 1000 + millis


def classify(value: bytes) -> tuple[str | None, dict[str, Any] | None, int | None]:
    """(dead-letter reason or None, the parsed object, event time in ms) of one record."""
    try:
        parsed = json.loads(value.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return "invalid_json", None, None
    if not isinstance(parsed, dict):
        return "invalid_json", None, None
    if any(parsed.get(name) is None for name in _REQUIRED):
        return "missing_field", parsed, None
    event_type = parsed["event_type"]
    if event_type not in _EVENT_TYPES:
        return "unknown_event_type", parsed, None
    extra = _TYPE_FIELDS.get(event_type)
    if extra is not None and parsed.get(extra) is None:
        return "missing_field", parsed, None
    ts = parse_ts(parsed["ts"])
    if ts is None:
        return "bad_timestamp", parsed, None
    return None, parsed, ts


@dataclass
class Expected:
    """The pipeline's expected outputs.

    ``windows``: the final (emitted) per-minute counts; ``pending``: counts of windows not
    final yet (still in the job's state); ``dropped``: valid records dropped as too late,
    as (run, value); ``dead_letters``: (value, reason) of every malformed record;
    ``watermarks``: the watermark after each run (None while no valid event was seen)."""

    total: int = 0
    valid: int = 0
    windows: dict[WindowKey, int] = field(default_factory=dict)
    pending: dict[WindowKey, int] = field(default_factory=dict)
    dropped: list[tuple[int, bytes]] = field(default_factory=list)
    dead_letters: list[tuple[bytes, str]] = field(default_factory=list)
    watermarks: list[int | None] = field(default_factory=list)

    @property
    def reasons(self) -> Counter[str]:
        return Counter(reason for _, reason in self.dead_letters)

    @property
    def watermark(self) -> int | None:
        return self.watermarks[-1] if self.watermarks else None


def expected_results(
    runs: Sequence[Iterable[bytes]], delay_ms: int = WATERMARK_DELAY_MS
) -> Expected:
    """Replay ``runs`` (the record values each run of the streaming job reads) through the
    validation and Spark's watermark rules."""
    result = Expected()
    state: Counter[WindowKey] = Counter()
    watermark: int | None = None
    for run_no, values in enumerate(runs, start=1):
        batch_max: int | None = None
        for value in values:
            result.total += 1
            reason, parsed, ts = classify(value)
            if reason is not None:
                result.dead_letters.append((value, reason))
                continue
            assert parsed is not None and ts is not None
            result.valid += 1
            batch_max = ts if batch_max is None else max(batch_max, ts)
            start = ts - ts % WINDOW_MS
            if watermark is not None and start + WINDOW_MS <= watermark:
                result.dropped.append((run_no, value))
                continue
            state[(start, parsed["page"], parsed["event_type"])] += 1
        if batch_max is not None:
            candidate = batch_max - delay_ms
            watermark = candidate if watermark is None else max(watermark, candidate)
        result.watermarks.append(watermark)
        if watermark is not None:
            for key in [k for k in state if k[0] + WINDOW_MS <= watermark]:
                result.windows[key] = state.pop(key)
    result.pending = dict(state)
    return result
