"""The consumer-group pages' cluster access (``/groups``, ``/groups/{id}``), through
``franz.admin.group_admin.GroupAdmin`` (the logic of ``franz consumer-groups``), which is
synchronous: every call goes through ``cluster.run`` on a worker thread. The ``GroupAdmin``
shares the console's ``AdminClient`` (one per console, ``group_admin``).

* ``list_groups``: ListGroups, one DescribeGroups for all of them, one OffsetFetch per group
  (concurrently: OffsetFetch names one group in librdkafka's API) and one batched ListOffsets
  (latest) for every committed partition: state, protocol type, member count, total lag.
* ``group_detail``: DescribeGroups, then ``GroupAdmin.offset_rows``: the rows
  ``franz consumer-groups --describe --group g`` prints (Kafka's TOPIC PARTITION
  CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID), in its order.
* ``reset_offsets``: Kafka's ``--reset-offsets --execute`` for one group: only when the group
  is inactive (Empty, or unknown), else Kafka's "Assignments can only be reset if the group
  '...' is inactive, but the current state is ...". Scenarios ``earliest``, ``latest``,
  ``timestamp`` (the first offset at or after it; the log end offset where there is none,
  as Kafka falls back) and ``offset`` (kept within [log start, log end], Kafka's
  ``checkOffsetsRange``), for every partition the group committed (``--all-topics``) or
  every partition of one topic (``--topic``); committed with AlterConsumerGroupOffsets.
* ``delete_group``: DeleteGroups; a group with members is NON_EMPTY_GROUP.

A refused action is a ``GroupActionFailed`` whose text the page shows (Kafka's error name
and message, or the tool's message); a cluster that does not answer stays a
``ClusterUnavailable`` (503).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from confluent_kafka import KafkaException

from franz.admin import group_offsets as plan
from franz.admin.group_admin import GroupAdmin, GroupDescription, group_error_text, state_name
from franz.admin.group_offsets import TP, ResetPlan
from franz.admin.group_tables import OffsetRow
from franz.admin.options import ToolError
from franz.console.cluster import ClusterUnavailable, ConsoleCluster
from franz.console.messages_format import parse_timestamp_ms
from franz.errors import ErrorCode

__all__ = [
    "RESET_TARGETS",
    "GroupActionFailed",
    "GroupSummary",
    "ResetRequest",
    "delete_group",
    "group_admin",
    "group_detail",
    "list_groups",
    "parse_reset_form",
    "reset_offsets",
]

ResetTarget = Literal["earliest", "latest", "timestamp", "offset"]
RESET_TARGETS: Final[tuple[ResetTarget, ...]] = ("earliest", "latest", "timestamp", "offset")


class GroupActionFailed(Exception):
    """A reset or delete the cluster (or Kafka's rules) refused; ``str()`` says why."""


@dataclass(frozen=True)
class GroupSummary:
    """One row of ``/groups``. ``protocol_type`` is ListGroups' (``consumer``, or empty for
    a group that only has committed offsets: Kafka's "simple" consumer group)."""

    group: str
    state: str
    protocol_type: str
    members: int
    partitions: int  # partitions with a committed offset
    lag: int | None  # sum of (log end offset - committed offset); None: nothing committed


_ADMINS: Final[weakref.WeakKeyDictionary[ConsoleCluster, GroupAdmin]] = weakref.WeakKeyDictionary()
_ADMINS_LOCK: Final = threading.Lock()


def group_admin(cluster: ConsoleCluster) -> GroupAdmin:
    """The console's ``GroupAdmin``, on the console's own ``AdminClient``."""
    with _ADMINS_LOCK:
        admin = _ADMINS.get(cluster)
        if admin is None:
            admin = _ADMINS[cluster] = GroupAdmin(
                cluster.config, cluster.bootstrap, int(cluster.timeout_s * 1000), cluster.admin
            )
        return admin


def _list(cluster: ConsoleCluster) -> list[tuple[str, str, bool]]:
    """ListGroups: ``[(group, state, is simple)]`` sorted by group (librdkafka's
    ``is_simple_consumer_group``: an empty protocol type)."""
    ga = group_admin(cluster)
    listed = ga.admin.list_consumer_groups(request_timeout=ga.timeout_s).result(ga.timeout_s + 5)
    for error in listed.errors or []:
        raise ToolError(f"listing groups: {group_error_text(error)}")
    return sorted(
        (g.group_id, state_name(g.state), bool(g.is_simple_consumer_group)) for g in listed.valid
    )


async def list_groups(cluster: ConsoleCluster) -> list[GroupSummary]:
    """Every consumer group (module docstring), sorted by id."""
    ga = group_admin(cluster)
    listed = await cluster.run(_list, cluster)
    names = [g for g, _, _ in listed]
    described = await cluster.run(ga.describe, names)
    committed = await asyncio.gather(*(cluster.run(ga.committed, g) for g in names))
    every = sorted({tp for offsets in committed for tp in offsets})
    ends = await cluster.run(ga.list_offsets, every, "latest")
    out = []
    for (group, state, simple), offsets in zip(listed, committed, strict=True):
        d = described.get(group)
        lags = [ends[tp] - o for tp, o in offsets.items() if tp in ends]
        out.append(
            GroupSummary(
                group=group,
                state=d.state if d is not None else state,
                protocol_type="" if simple else "consumer",
                members=len(d.members) if d is not None else 0,
                partitions=len(offsets),
                lag=sum(lags) if lags else None,
            )
        )
    return out


def group_detail(
    cluster: ConsoleCluster, group: str
) -> tuple[GroupDescription | None, list[OffsetRow]]:
    """The group's description (None: it does not exist) and its ``--describe`` rows;
    blocking (run it through ``cluster.run``)."""
    ga = group_admin(cluster)
    description = ga.describe([group]).get(group)
    if description is None:
        return None, []
    return description, ga.offset_rows(description)


@dataclass(frozen=True)
class ResetRequest:
    """A reset from the form: ``topic`` None is every partition the group committed
    (``--all-topics``); ``value`` is the timestamp (ms) or the offset."""

    target: ResetTarget
    topic: str | None
    value: int | None


def parse_reset_form(form: Mapping[str, str]) -> ResetRequest:
    """The reset form: ``target`` (earliest, latest, timestamp, offset), ``topic`` (empty:
    all the group's topics), ``timestamp`` (ms or ISO-8601) or ``offset``. ``ValueError``
    says what is wrong."""
    target = form.get("target", "").strip()
    if target not in RESET_TARGETS:
        raise ValueError(f"reset to one of {', '.join(RESET_TARGETS)}, not {target!r}")
    topic = form.get("topic", "").strip() or None
    value: int | None = None
    if target == "timestamp":
        value = parse_timestamp_ms(form.get("timestamp", ""))
    elif target == "offset":
        raw = form.get("offset", "").strip()
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"offset must be a whole number, not {raw!r}") from None
        if value < 0:
            raise ValueError(f"offset must be 0 or more, not {value}")
    return ResetRequest(target, topic, value)


def _plan(ga: GroupAdmin, group: str, request: ResetRequest) -> ResetPlan:
    committed = ga.committed(group)
    if request.topic is None:
        partitions = sorted(committed)
        if not partitions:
            raise GroupActionFailed(f"group '{group}' has no committed offsets to reset")
    else:
        known = ga.topic_partitions([request.topic]).get(request.topic)
        if known is None:
            raise GroupActionFailed(f"Topic '{request.topic}' does not exist")
        partitions = [(request.topic, p) for p in known]
    if request.target in ("earliest", "latest"):
        found = ga.list_offsets(partitions, request.target)
        return ResetPlan({tp: found[tp] for tp in partitions if tp in found})
    if request.target == "offset":
        return plan.plan_to_offset(partitions, request.value or 0, ga.log_offsets(partitions))
    found = ga.list_offsets(partitions, request.value or 0)
    missing: list[TP] = [tp for tp in partitions if found.get(tp, -1) < 0]
    if missing:  # Kafka: "Partition p from topic t is empty. Falling back to latest ..."
        found.update(ga.list_offsets(missing, "latest"))
    return ResetPlan({tp: found[tp] for tp in partitions if found.get(tp, -1) >= 0})


def reset_offsets(cluster: ConsoleCluster, group: str, request: ResetRequest) -> ResetPlan:
    """Plan and commit the group's new offsets (module docstring); blocking."""
    ga = group_admin(cluster)
    try:
        description = ga.describe([group]).get(group)
        state = "Dead" if description is None else description.state
        if state not in ("Empty", "Dead"):
            raise GroupActionFailed(
                f"Assignments can only be reset if the group '{group}' is inactive, but the "
                f"current state is {state}."
            )
        reset = _plan(ga, group, request)
        if reset.offsets:
            ga.alter_offsets(group, reset.offsets)
    except ToolError as exc:
        raise GroupActionFailed(str(exc)) from None
    return reset


async def delete_group(cluster: ConsoleCluster, group: str) -> None:
    """DeleteGroups for ``group``; ``GroupActionFailed`` with Kafka's error name and message
    (NON_EMPTY_GROUP for a group with members, GROUP_ID_NOT_FOUND for none)."""
    futures = cluster.admin.delete_consumer_groups([group], request_timeout=cluster.timeout_s)
    try:
        await asyncio.wait_for(asyncio.wrap_future(futures[group]), cluster.timeout_s + 5)
    except KafkaException as exc:
        error = exc.args[0]
        try:
            code = ErrorCode(error.code())
        except ValueError:
            raise GroupActionFailed(f"{error.name()}: {error.str()}") from None
        if code.message:
            raise GroupActionFailed(f"{code.name}: {code.message}") from None
        raise GroupActionFailed(f"{code.name}: {error.str()}") from None
    except TimeoutError:
        raise ClusterUnavailable("the cluster did not answer in time") from None
