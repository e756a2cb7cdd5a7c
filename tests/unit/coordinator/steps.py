"""Helpers shared by the state machine's unit tests."""

from __future__ import annotations

from franz.coordinator.group.states import GroupSnapshot, Output, step


def at(group: GroupSnapshot, now: int, *events: object) -> tuple[GroupSnapshot, list[Output]]:
    """Apply ``events`` in order at ``now``; the final snapshot and every output."""
    out: list[Output] = []
    for event in events:
        group, o = step(group, event, now)  # type: ignore[arg-type]
        out.extend(o)
    return group, out
