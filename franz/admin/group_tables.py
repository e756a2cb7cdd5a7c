"""The tables ``franz consumer-groups`` prints, laid out as Kafka 3.9's
``kafka-consumer-groups.sh`` (``ConsumerGroupCommand``) lays them out. Pure functions from
rows to text; unit-tested.

Kafka's layout rules, kept here exactly:

* Columns are left-aligned ``%-Ns`` fields joined by one space. Columns holding names (group,
  topic, consumer id, host, client id, group instance id) are as wide as their widest value,
  at least 15 (17 for GROUP-INSTANCE-ID); numeric columns have fixed widths (PARTITION 10,
  offsets and lag 15); the last column is not padded (except in the members table, whose
  #PARTITIONS column is ``%-15s `` with a trailing space, as Kafka prints it).
* A missing value is ``-`` (Kafka's ``MISSING_COLUMN_VALUE``).
* The offsets, state, reset and delete-offsets tables start with an empty line (Kafka puts
  ``\\n`` at the start of each row's format); the members table starts with an empty line
  before its header only.

Where Kafka 3.9's Java port of the command regressed, Franz keeps the layout of Kafka up to
3.6 (checked against Kafka 3.9.2 in ``tests/reference/test_tools.py``): Kafka 3.9 prints the
reset (``%-30s %-30s %-10s %-15s``) and delete-offsets (``%-30s %-15s %-15s``) rows with no
newline between them and in ``HashMap`` order, and the ``--verbose`` ASSIGNMENT column
without topic names (``(0,1)``); Franz prints one row per line, sorted, with
``topic(0,1)``. Kafka's offsets table also ends without a newline after its last row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "MISSING",
    "GroupState",
    "MemberRow",
    "OffsetRow",
    "assignment_string",
    "format_delete_offsets",
    "format_group_list",
    "format_members",
    "format_offsets",
    "format_reset",
    "format_state",
]

#: Kafka's ``MISSING_COLUMN_VALUE``.
MISSING = "-"

TP = tuple[str, int]


def _text(value: object | None) -> str:
    return MISSING if value is None else str(value)


def _pad(value: str, width: int) -> str:
    """Java's ``%-<width>s``: left-aligned, never truncated."""
    return value.ljust(width)


@dataclass(frozen=True)
class OffsetRow:
    """One row of ``--describe`` (offsets view). None prints as ``-``."""

    group: str
    topic: str | None
    partition: int | None
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None


def format_offsets(rows: Sequence[OffsetRow]) -> str:
    """``GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID``."""
    group_w = max([15, *(len(r.group) for r in rows)])
    topic_w = max([15, *(len(_text(r.topic)) for r in rows)])
    consumer_w = max([15, *(len(_text(r.consumer_id)) for r in rows)])
    host_w = max([15, *(len(_text(r.host)) for r in rows)])

    widths = (group_w, topic_w, 10, 15, 15, 15, consumer_w, host_w)

    def line(cells: Sequence[str]) -> str:
        padded = [_pad(c, w) for c, w in zip(cells[:-1], widths, strict=True)]
        return "\n" + " ".join([*padded, cells[-1]])

    out = [
        line(
            (
                "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                "CONSUMER-ID", "HOST", "CLIENT-ID",
            )
        )
    ]
    for r in rows:
        out.append(
            line(
                (
                    r.group,
                    _text(r.topic),
                    _text(r.partition),
                    _text(r.current_offset),
                    _text(r.log_end_offset),
                    _text(r.lag),
                    _text(r.consumer_id),
                    _text(r.host),
                    _text(r.client_id),
                )
            )
        )
    return "".join(out) + "\n"


@dataclass(frozen=True)
class MemberRow:
    """One member in ``--describe --members``."""

    group: str
    consumer_id: str
    group_instance_id: str | None
    host: str
    client_id: str
    assignment: tuple[TP, ...]


def assignment_string(assignment: Iterable[TP]) -> str:
    """Kafka 3.x's ASSIGNMENT column: ``topic(p,p)`` per topic, sorted, joined by ``, ``;
    ``-`` when nothing is assigned."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assignment:
        by_topic.setdefault(topic, []).append(partition)
    if not by_topic:
        return MISSING
    return ", ".join(
        sorted(f"{t}({','.join(str(p) for p in sorted(ps))})" for t, ps in by_topic.items())
    )


def format_members(rows: Sequence[MemberRow], verbose: bool) -> str:
    """``GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS [ASSIGNMENT]``;
    GROUP-INSTANCE-ID appears when a member is static (has one)."""
    with_instance = any(r.group_instance_id for r in rows)
    widths = [
        max([15, *(len(r.group) for r in rows)]),
        max([15, *(len(r.consumer_id) for r in rows)]),
    ]
    if with_instance:
        widths.append(max([17, *(len(r.group_instance_id or "") for r in rows)]))
    widths += [
        max([15, *(len(r.host) for r in rows)]),
        max([15, *(len(r.client_id) for r in rows)]),
        15,
    ]

    def line(cells: Sequence[str], last: str) -> str:
        text = "".join(_pad(c, w) + " " for c, w in zip(cells, widths, strict=True))
        return text + (last if verbose else "") + "\n"

    header = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if with_instance else [])
    header += ["HOST", "CLIENT-ID", "#PARTITIONS"]
    out = ["\n" + line(header, "ASSIGNMENT")]
    for r in rows:
        cells = [r.group, r.consumer_id]
        if with_instance:
            cells.append(r.group_instance_id or "")
        cells += [r.host, r.client_id, str(len(r.assignment))]
        out.append(line(cells, assignment_string(r.assignment)))
    return "".join(out)


@dataclass(frozen=True)
class GroupState:
    """One group in ``--describe --state``."""

    group: str
    coordinator_host: str
    coordinator_port: int
    coordinator_id: int
    assignment_strategy: str
    state: str
    members: int


def format_state(state: GroupState) -> str:
    """``GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS``; the coordinator is
    ``host:port  (id)`` (two spaces, as Kafka prints it).

    Kafka 3.9's ``printStates`` format is ``"\n%-Ns %-25s %-20s %-15s %s"`` with N the
    coordinator's width (at least 25): the GROUP column takes the coordinator's width and
    COORDINATOR (ID) a fixed 25, and the strategy of a group without members is empty.
    """
    coordinator = f"{state.coordinator_host}:{state.coordinator_port}  ({state.coordinator_id})"
    first_w = max(25, len(coordinator))

    def line(cells: Sequence[str]) -> str:
        return (
            f"\n{_pad(cells[0], first_w)} {_pad(cells[1], 25)} "
            f"{_pad(cells[2], 20)} {_pad(cells[3], 15)} {cells[4]}"
        )

    row = [state.group, coordinator, state.assignment_strategy, state.state, str(state.members)]
    return line(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]) + (
        line(row) + "\n"
    )


def format_reset(plans: Mapping[str, Mapping[TP, int]]) -> str:
    """``GROUP TOPIC PARTITION NEW-OFFSET`` (Kafka's ``printOffsetsToReset``): no header when
    there is no group; rows in topic/partition order."""
    group_w = max([15, *(len(g) for g in plans)])
    topic_w = max([15, *(len(t) for offsets in plans.values() for t, _ in offsets)])

    def line(group: str, topic: str, partition: str, offset: str) -> str:
        return f"\n{_pad(group, group_w)} {_pad(topic, topic_w)} {_pad(partition, 10)} {offset}"

    out = [line("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")] if plans else []
    for group, offsets in plans.items():
        for (topic, partition), offset in sorted(offsets.items()):
            out.append(line(group, topic, str(partition), str(offset)))
    return "".join(out) + "\n"


def format_group_list(groups: Sequence[tuple[str, str]]) -> str:
    """``--list --state``: ``GROUP STATE``, the group column ``max(15, widest) + 10`` wide and
    the state ``%-20s`` (Kafka's ``printGroupInfo``)."""
    group_w = max([15, *(len(g) for g, _ in groups)]) + 10
    lines = [f"{_pad('GROUP', group_w)} {_pad('STATE', 20)}"]
    lines += [f"{_pad(g, group_w)} {_pad(s, 20)}" for g, s in groups]
    return "\n".join(lines) + "\n"


def format_delete_offsets(results: Mapping[TP, str | None]) -> str:
    """``TOPIC PARTITION STATUS`` after ``--delete-offsets``: ``Successful``, or
    ``Error: <message>``; a partition of -1 (a whole topic that failed) prints ``-``."""
    topic_w = max([15, *(len(t) for t, _ in results)])

    def line(topic: str, partition: str, status: str) -> str:
        return f"\n{_pad(topic, topic_w)} {_pad(partition, 10)} {_pad(status, 15)}"

    out = [line("TOPIC", "PARTITION", "STATUS")]
    for (topic, partition), error in sorted(results.items()):
        status = "Successful" if error is None else f"Error: {error}"
        out.append(line(topic, str(partition) if partition >= 0 else MISSING, status))
    return "".join(out) + "\n"
