"""Consumer-group offset resets, planned without I/O (Kafka's ``GroupOffsetsResetter``).

``franz consumer-groups --reset-offsets`` gathers facts from the cluster (committed offsets,
log start/end offsets, offsets for a timestamp) and hands them to the functions here, which
decide the new offset of every partition. Everything here is pure and unit-tested.

Input formats, as Kafka's tool reads them:

* ``--topic t`` (every partition of ``t``) or ``--topic t:0,2`` (partitions 0 and 2):
  ``parse_topic_arg``.
* ``--to-datetime YYYY-MM-DDTHH:mm:SS.sss`` with an optional zone (``Z``, ``+hh``,
  ``+hhmm``, ``+hh:mm``); without one UTC (Kafka's ``Utils.getDateTime``):
  ``parse_datetime_ms``.
* ``--by-duration PnDTnHnMnS`` (``java.time.Duration.parse``: signs and fractional seconds
  allowed, case-insensitive): ``parse_duration_ms``; the target time is now minus it.
* ``--from-file``: CSV lines ``topic,partition,offset`` (one group) or
  ``group,topic,partition,offset`` (any number of groups), as ``--export`` writes them:
  ``parse_reset_csv`` / ``export_csv``.

Range check (Kafka's ``checkOffsetsRange``): a requested offset above the log end offset
becomes the log end offset, one below the log start offset becomes the log start offset,
each with a warning; ``--to-earliest``/``--to-latest``/``--to-current``/``--to-datetime``/
``--by-duration`` take offsets from the log and are not clamped.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from franz.admin.options import ToolError

__all__ = [
    "TP",
    "LogOffsets",
    "ResetPlan",
    "clamp_offsets",
    "export_csv",
    "parse_datetime_ms",
    "parse_duration_ms",
    "parse_reset_csv",
    "parse_topic_arg",
    "plan_shift_by",
    "plan_to_current",
    "plan_to_offset",
]

#: A topic partition as a plain value: ``(topic, partition)``.
TP = tuple[str, int]


@dataclass(frozen=True)
class LogOffsets:
    """What the cluster said about partitions: ``start`` (log start offset, ListOffsets -2)
    and ``end`` (log end offset / high watermark, ListOffsets -1) per partition."""

    start: Mapping[TP, int] = field(default_factory=dict)
    end: Mapping[TP, int] = field(default_factory=dict)


@dataclass
class ResetPlan:
    """New offsets per partition, and the warnings the planning produced (Kafka logs them)."""

    offsets: dict[TP, int]
    warnings: list[str] = field(default_factory=list)


# -- parsing -----------------------------------------------------------------------------------


def parse_topic_arg(arg: str) -> tuple[str, list[int] | None]:
    """``t`` -> ``("t", None)`` (every partition); ``t:0,2`` -> ``("t", [0, 2])``.

    Errors carry Kafka's wording ("Invalid topic arg ..., expected topic name and partitions").
    """
    if ":" not in arg:
        if not arg:
            raise ToolError("--topic needs a topic name")
        return arg, None
    parts = arg.split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise ToolError(f"Invalid topic arg '{arg}', expected topic name and partitions")
    topic, partitions = parts
    out: list[int] = []
    for item in partitions.split(","):
        try:
            number = int(item.strip())
        except ValueError:
            raise ToolError(
                f"Invalid partition '{item}' specified in topic arg '{arg}'"
            ) from None
        if number < 0:
            raise ToolError(f"Invalid partition '{item}' specified in topic arg '{arg}'")
        out.append(number)
    return topic, out


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration_ms(text: str) -> int:
    """An ISO-8601 duration as ``java.time.Duration.parse`` reads it (``PnDTnHnMn.nS``), in
    milliseconds. ``P1DT2H`` -> 93600000; ``PT0.5S`` -> 500; ``-PT1M`` -> -60000."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or (match.group(3) is not None and match.group(3).upper() == "T"):
        raise ToolError(
            f"--by-duration {text!r} is not a duration of the form PnDTnHnMnS (e.g. PT1H30M)"
        )
    sign, days, _t, hours, minutes, seconds, fraction = match.groups()
    if days is None and hours is None and minutes is None and seconds is None:
        raise ToolError(
            f"--by-duration {text!r} is not a duration of the form PnDTnHnMnS (e.g. PT1H30M)"
        )
    total_ms = (
        int(days or 0) * 86_400_000
        + int(hours or 0) * 3_600_000
        + int(minutes or 0) * 60_000
        + int(seconds or 0) * 1000
    )
    if fraction:
        frac_ms = int((fraction + "000")[:3])
        total_ms += -frac_ms if (seconds or "").startswith("-") else frac_ms
    return -total_ms if sign == "-" else total_ms


_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})(Z|[+-]\d{2}(?::?\d{2})?)?"
)


def parse_datetime_ms(text: str) -> int:
    """``YYYY-MM-DDTHH:mm:SS.sss`` with an optional zone (``Z``, ``+hh``, ``+hhmm``,
    ``+hh:mm``) as epoch milliseconds. A time without a zone is UTC: Kafka's
    ``Utils.getDateTime`` appends ``Z`` then."""
    match = _DATETIME.fullmatch(text.strip())
    if match is None:
        raise ToolError(
            f"--to-datetime {text!r}: expected YYYY-MM-DDTHH:mm:SS.sss "
            "(e.g. 2024-01-31T13:45:00.000, UTC unless followed by Z, +hh, +hhmm or +hh:mm)"
        )
    year, month, day, hour, minute, second, millis, zone = match.groups()
    offset = datetime.timedelta(0)
    if zone is not None and zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        if zone[0] == "-":
            offset = -offset
    try:
        moment = datetime.datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            int(second),
            int(millis) * 1000,
            tzinfo=datetime.timezone(offset),
        )
    except ValueError as exc:
        raise ToolError(f"--to-datetime {text!r}: {exc}") from None
    return (moment - _EPOCH) // datetime.timedelta(milliseconds=1)


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def parse_reset_csv(text: str, groups: Sequence[str]) -> dict[str, dict[TP, int]]:
    """A ``--from-file`` reset plan: ``{group: {(topic, partition): offset}}``.

    Lines are ``topic,partition,offset`` when exactly one ``--group`` was given and the first
    line has three fields, else ``group,topic,partition,offset`` (Kafka's two CSV layouts).
    Blank lines are skipped.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise ToolError("--from-file: the file has no reset plan lines")
    without_group = len(groups) == 1 and len(lines[0].split(",")) == 3
    plan: dict[str, dict[TP, int]] = {}
    for number, line in enumerate(lines, 1):
        fields = [f.strip() for f in line.split(",")]
        wanted = 3 if without_group else 4
        if len(fields) != wanted:
            layout = "topic,partition,offset" if without_group else "group,topic,partition,offset"
            raise ToolError(f"--from-file line {number}: expected {layout}, got {line!r}")
        group = groups[0] if without_group else fields[0]
        topic, partition, offset = fields[-3:]
        try:
            tp = (topic, int(partition))
            value = int(offset)
        except ValueError:
            raise ToolError(
                f"--from-file line {number}: partition and offset must be integers: {line!r}"
            ) from None
        plan.setdefault(group, {})[tp] = value
    return plan


def export_csv(plans: Mapping[str, Mapping[TP, int]], single_group: bool) -> str:
    """``--export`` output: one CSV line per partition (``topic,partition,offset`` for a single
    group, ``group,topic,partition,offset`` otherwise), in topic/partition order."""
    out = []
    for group, offsets in plans.items():
        for (topic, partition), offset in sorted(offsets.items()):
            prefix = "" if single_group else f"{group},"
            out.append(f"{prefix}{topic},{partition},{offset}\n")
    return "".join(out)


# -- planning ----------------------------------------------------------------------------------


def clamp_offsets(requested: Mapping[TP, int], logs: LogOffsets) -> ResetPlan:
    """Kafka's ``checkOffsetsRange``: bring each requested offset within
    ``[log start, log end]``, warning (in Kafka's words) for each one moved."""
    plan = ResetPlan({})
    for tp, offset in requested.items():
        end = logs.end.get(tp)
        start = logs.start.get(tp)
        name = f"{tp[0]}-{tp[1]}"
        if end is not None and offset > end:
            plan.warnings.append(
                f"New offset ({offset}) is higher than latest offset for topic partition "
                f"{name}. Value will be set to {end}"
            )
            plan.offsets[tp] = end
        elif start is not None and offset < start:
            plan.warnings.append(
                f"New offset ({offset}) is lower than earliest offset for topic partition "
                f"{name}. Value will be set to {start}"
            )
            plan.offsets[tp] = start
        else:
            plan.offsets[tp] = offset
    return plan


def plan_to_offset(partitions: Iterable[TP], offset: int, logs: LogOffsets) -> ResetPlan:
    """``--to-offset N``: N for every partition, clamped to the log."""
    return clamp_offsets({tp: offset for tp in partitions}, logs)


def plan_shift_by(
    partitions: Iterable[TP], shift: int, committed: Mapping[TP, int], logs: LogOffsets
) -> ResetPlan:
    """``--shift-by N``: committed offset + N, clamped. A partition without a committed
    offset is an error (Kafka: "Cannot shift offset for partition ...")."""
    requested: dict[TP, int] = {}
    for tp in partitions:
        if tp not in committed:
            raise ToolError(
                f"Cannot shift offset for partition {tp[0]}-{tp[1]} since there is no current "
                "committed offset"
            )
        requested[tp] = committed[tp] + shift
    return clamp_offsets(requested, logs)


def plan_to_current(
    partitions: Iterable[TP], committed: Mapping[TP, int], logs: LogOffsets
) -> ResetPlan:
    """``--to-current``: the committed offset; the log end offset where none is committed."""
    plan = ResetPlan({})
    for tp in partitions:
        if tp in committed:
            plan.offsets[tp] = committed[tp]
        elif tp in logs.end:
            plan.offsets[tp] = logs.end[tp]
        else:
            raise ToolError(f"Error getting ending offset of topic partition: {tp[0]}-{tp[1]}")
    return plan
