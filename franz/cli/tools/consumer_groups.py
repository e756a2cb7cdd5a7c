"""List, describe, delete consumer groups and reset their offsets (Kafka's
``kafka-consumer-groups.sh``).

    franz consumer-groups --bootstrap-server HOST:PORT --list [--state [STATES]]
    franz consumer-groups --bootstrap-server HOST:PORT --describe (--group G... | --all-groups)
                          [--offsets | --members [--verbose] | --state]
    franz consumer-groups --bootstrap-server HOST:PORT --delete (--group G... | --all-groups)
    franz consumer-groups --bootstrap-server HOST:PORT --delete-offsets --group G
                          --topic T[:P,P]...
    franz consumer-groups --bootstrap-server HOST:PORT --reset-offsets
                          (--group G... | --all-groups) (--topic T[:P,P]... | --all-topics)
                          (--to-earliest | --to-latest | --to-current | --to-offset N |
                           --shift-by N | --to-datetime YYYY-MM-DDTHH:mm:SS.sss |
                           --by-duration PnDTnHnMnS | --from-file CSV)
                          [--dry-run | --execute] [--export]

--describe shows, per partition, the group's committed offset (CURRENT-OFFSET), the log end
offset and the LAG between them, with the member that owns the partition ("-" for committed
partitions nobody is assigned); --members lists the members, --state the coordinator, the
assignment strategy, the state and the member count.

--reset-offsets changes committed offsets of groups that have no active members (state Empty,
or unknown). It plans the new offsets and prints them (GROUP TOPIC PARTITION NEW-OFFSET);
without --execute nothing changes (--dry-run is the default). Offsets asked for with
--to-offset, --shift-by or --from-file are brought within [log start, log end]. --export
prints the plan as CSV (topic,partition,offset; group,topic,partition,offset for several
groups), the format --from-file reads.

--delete removes groups with no active members; --delete-offsets removes a group's committed
offsets of some topics or partitions (not of topics its members are subscribed to).

Works against any Kafka-compatible cluster (confluent-kafka's AdminClient; OffsetDelete on
the wire). Exit 0 on success, 1 with a one-line error (unknown group, unreachable broker,
group not inactive, ...), 2 for bad flag combinations.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from franz.admin import group_offsets as plan
from franz.admin.group_admin import GroupAdmin, GroupDescription
from franz.admin.group_offsets import TP, LogOffsets, ResetPlan
from franz.admin.group_tables import (
    GroupState,
    MemberRow,
    format_delete_offsets,
    format_group_list,
    format_members,
    format_offsets,
    format_reset,
    format_state,
)
from franz.admin.options import ToolError, add_connection_options, client_config
from franz.admin.wire import delete_offsets
from franz.admin.wire_security import WireSecurity
from franz.errors import ErrorCode

__all__ = ["add_arguments", "run"]

#: Kafka's consumer-groups default ``--timeout`` (ms).
DEFAULT_TIMEOUT_MS = 5000

#: States a ``--list --state`` filter may name (Kafka 3.9's consumer group states).
_VALID_STATES = (
    "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning",
    "Reconciling",
)

_DRY_RUN_WARNING = (
    # Kafka joins the two sentences without a space.
    "WARN: No action will be performed as the --execute option is missing.In a future major "
    "release, the default behavior of this command will be to prompt the user before executing "
    "the reset rather than doing a dry run. You should add the --dry-run option explicitly if "
    "you are scripting this command and want to keep the current default behavior without "
    "prompting."
)

def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser, timeout_ms=DEFAULT_TIMEOUT_MS)
    actions = parser.add_mutually_exclusive_group(required=True)
    actions.add_argument("--list", action="store_true", help="list every consumer group")
    actions.add_argument(
        "--describe", action="store_true", help="describe groups: offsets and lag per partition"
    )
    actions.add_argument(
        "--delete", action="store_true", help="delete groups that have no active members"
    )
    actions.add_argument(
        "--delete-offsets",
        action="store_true",
        help="delete a group's committed offsets of --topic topics/partitions",
    )
    actions.add_argument(
        "--reset-offsets", action="store_true", help="reset committed offsets (see scenarios)"
    )
    parser.add_argument("--group", action="append", metavar="GROUP", help="a group (repeatable)")
    parser.add_argument("--all-groups", action="store_true", help="every consumer group")
    parser.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[:P,P]",
        help="a topic, or some of its partitions (repeatable)",
    )
    parser.add_argument(
        "--all-topics", action="store_true", help="every topic the group has committed offsets of"
    )
    parser.add_argument("--offsets", action="store_true", help="--describe: offsets (default)")
    parser.add_argument("--members", action="store_true", help="--describe: the members")
    parser.add_argument(
        "--state",
        nargs="?",
        const="",
        metavar="STATES",
        help="--describe: the group's state; --list: show states, or keep only the "
        "comma-separated STATES (e.g. Stable,Empty)",
    )
    parser.add_argument("--verbose", action="store_true", help="--describe --members: ASSIGNMENT")
    scenarios = parser.add_mutually_exclusive_group()
    scenarios.add_argument("--to-earliest", action="store_true", help="the log start offset")
    scenarios.add_argument("--to-latest", action="store_true", help="the log end offset")
    scenarios.add_argument("--to-current", action="store_true", help="the committed offset")
    scenarios.add_argument("--to-offset", type=int, metavar="N", help="offset N")
    scenarios.add_argument("--shift-by", type=int, metavar="N", help="committed offset + N")
    scenarios.add_argument(
        "--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss", help="the first offset at or after"
    )
    scenarios.add_argument(
        "--by-duration", metavar="PnDTnHnMnS", help="the first offset at or after now - duration"
    )
    scenarios.add_argument("--from-file", metavar="CSV", help="offsets from a CSV reset plan")
    parser.add_argument("--dry-run", action="store_true", help="only show the plan (default)")
    parser.add_argument("--execute", action="store_true", help="commit the planned offsets")
    parser.add_argument("--export", action="store_true", help="print the plan as CSV")
    parser.set_defaults(parser=parser)


def _check_args(args: argparse.Namespace) -> None:
    """Kafka's ``ConsumerGroupCommandOptions.checkArgs``: bad combinations exit 2."""
    parser: argparse.ArgumentParser = args.parser
    scenario = _scenario(args)
    if args.all_groups and args.group:
        parser.error("--group and --all-groups cannot be used together")
    if (args.describe or args.delete or args.reset_offsets) and not (args.group or args.all_groups):
        parser.error("one of --group or --all-groups is required")
    if args.delete_offsets and (not args.group or len(args.group) != 1 or args.all_groups):
        parser.error("--delete-offsets takes exactly one --group")
    if args.delete_offsets and not args.topic:
        parser.error("--delete-offsets needs --topic")
    if args.list and (args.group or args.all_groups):
        parser.error("--list takes no --group or --all-groups")
    if args.describe and sum(map(bool, (args.offsets, args.members, args.state is not None))) > 1:
        parser.error("--describe takes at most one of --offsets, --members and --state")
    if (args.offsets or args.members) and not args.describe:
        parser.error("--offsets and --members only go with --describe")
    if args.state is not None and not (args.describe or args.list):
        parser.error("--state only goes with --describe or --list")
    if args.verbose and not args.describe:
        parser.error("--verbose only goes with --describe")
    reset_only = (args.all_topics, args.dry_run, args.execute, args.export, scenario)
    if any(reset_only) and not args.reset_offsets:
        parser.error(
            "--all-topics, --dry-run, --execute, --export and the reset scenarios only go "
            "with --reset-offsets"
        )
    if args.topic and not (args.reset_offsets or args.delete_offsets):
        parser.error("--topic only goes with --reset-offsets or --delete-offsets")
    if args.reset_offsets:
        if args.dry_run and args.execute:
            parser.error("--reset-offsets only accepts one of --execute and --dry-run")
        if scenario is None:
            parser.error(
                "--reset-offsets needs one of --to-earliest, --to-latest, --to-current, "
                "--to-offset, --shift-by, --to-datetime, --by-duration, --from-file"
            )
        if args.topic and args.all_topics:
            parser.error("--topic and --all-topics cannot be used together")
        if not (args.topic or args.all_topics or args.from_file):
            parser.error("One of the reset scopes should be defined: --all-topics, --topic.")


def _scenario(args: argparse.Namespace) -> str | None:
    for name in ("to_earliest", "to_latest", "to_current"):
        if getattr(args, name):
            return name
    for name in ("to_offset", "shift_by", "to_datetime", "by_duration", "from_file"):
        if getattr(args, name) is not None:
            return name
    return None


def run(args: argparse.Namespace) -> int:
    _check_args(args)
    tool = _GroupTool(args)
    if args.list:
        return tool.list_groups()
    if args.describe:
        return tool.describe()
    if args.delete:
        return tool.delete()
    if args.delete_offsets:
        return tool.delete_offsets()
    return tool.reset_offsets()


class _GroupTool:
    """One run of the tool: an AdminClient and the answers of the cluster."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cluster = GroupAdmin(client_config(args), args.bootstrap_server, args.timeout_ms)

    def _groups(self) -> list[str]:
        if self.args.all_groups:
            return [g for g, _ in self.cluster.list_groups()]
        return list(dict.fromkeys(self.args.group))

    # -- --list

    def list_groups(self) -> int:
        listings = self.cluster.list_groups()
        if self.args.state is None:
            for group, _ in listings:
                print(group)
            return 0
        wanted = self._state_filter(self.args.state)
        shown = [(g, s) for g, s in listings if not wanted or s.lower() in wanted]
        sys.stdout.write(format_group_list(shown))
        return 0

    def _state_filter(self, text: str) -> set[str]:
        states = {s.strip().lower() for s in text.split(",") if s.strip()}
        valid = {s.lower() for s in _VALID_STATES}
        if not states <= valid:
            self.args.parser.error(
                f"Invalid state list '{text}'. Valid states are: {', '.join(_VALID_STATES)}"
            )
        return states

    # -- --describe

    def describe(self) -> int:
        descriptions = self.cluster.describe(self._groups())
        missing = []
        for group in sorted(descriptions):
            description = descriptions[group]
            if description is None:
                missing.append(group)
                continue
            _note_state(description)
            if self.args.members:
                self._print_members(description)
            elif self.args.state is not None:
                self._print_state(description)
            else:
                self._print_offsets(description)
            sys.stdout.flush()
        if missing:
            raise ToolError(" ".join(f"Consumer group '{g}' does not exist." for g in missing))
        return 0

    def _print_offsets(self, description: GroupDescription) -> None:
        rows = self.cluster.offset_rows(description)
        if rows:
            sys.stdout.write(format_offsets(rows))

    def _print_members(self, description: GroupDescription) -> None:
        rows = [
            MemberRow(
                description.group, m.member_id, m.group_instance_id, m.host, m.client_id,
                m.assignment,
            )
            for m in description.members
        ]
        # Kafka prints the header also for a group without members.
        sys.stdout.write(format_members(rows, self.args.verbose))

    def _print_state(self, d: GroupDescription) -> None:
        sys.stdout.write(
            format_state(
                GroupState(
                    d.group,
                    d.coordinator_host,
                    d.coordinator_port,
                    d.coordinator_id,
                    d.assignor,
                    d.state,
                    len(d.members),
                )
            )
        )

    # -- --delete

    def delete(self) -> int:
        groups = self._groups()
        if not groups:
            print("No consumer groups to delete.")
            return 0
        outcome = self.cluster.delete_groups(groups)
        deleted = [g for g in groups if outcome[g] is None]
        failed = [(g, outcome[g]) for g in groups if outcome[g] is not None]
        if not failed:
            quoted = ", ".join(f"'{g}'" for g in deleted)
            print(f"Deletion of requested consumer groups ({quoted}) was successful.")
            return 0
        print("Error: Deletion of some consumer groups failed:", file=sys.stderr)
        for group, reason in failed:
            print(f"* Group '{group}' could not be deleted due to: {reason}", file=sys.stderr)
        if deleted:
            quoted = ", ".join(f"'{g}'" for g in deleted)
            print(f"\nThese consumer groups were deleted successfully: {quoted}")
        return 1

    # -- --delete-offsets

    def delete_offsets(self) -> int:
        [group] = self.args.group
        results: dict[TP, str | None] = {}
        partitions: list[TP] = []
        whole_topics = []
        for arg in self.args.topic:
            topic, numbers = plan.parse_topic_arg(arg)
            if numbers is None:
                whole_topics.append(topic)
            else:
                partitions += [(topic, p) for p in numbers]
        for topic, numbers in self.cluster.topic_partitions(whole_topics).items():
            if numbers is None:
                results[(topic, -1)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message
            else:
                partitions += [(topic, p) for p in numbers]
        partitions = sorted(set(partitions))
        answer = delete_offsets(
            self.args.bootstrap_server,
            group,
            partitions,
            timeout_ms=self.args.timeout_ms,
            security=WireSecurity.from_config(client_config(self.args)),
        )
        for tp in partitions:
            code = answer.error
            if code == ErrorCode.NONE:
                code = answer.partitions.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)
            results[tp] = None if code == ErrorCode.NONE else code.message
        if answer.error != ErrorCode.NONE:
            print(f"\nError: {answer.error.message}", file=sys.stderr)
        elif any(results.values()):
            print(
                "\nError: Encountered some partition-level error, see the follow-up details.",
                file=sys.stderr,
            )
        else:
            # Kafka's words (sic), with the --topic arguments as given.
            topics = ", ".join(self.args.topic)
            print(f"Request succeed for deleting offsets with topic {topics} group {group}")
        sys.stdout.write(format_delete_offsets(results))
        return 0 if not any(results.values()) else 1

    # -- --reset-offsets

    def reset_offsets(self) -> int:
        args = self.args
        if not (args.dry_run or args.execute):
            print(_DRY_RUN_WARNING, file=sys.stderr)
        groups = self._groups()
        from_file: dict[str, dict[TP, int]] | None = None
        if args.from_file:
            path = Path(args.from_file)
            if not path.is_file():
                raise ToolError(f"--from-file {path}: no such file")
            from_file = plan.parse_reset_csv(path.read_text(), groups)
        descriptions = self.cluster.describe(groups)
        plans: dict[str, dict[TP, int]] = {}
        errors: list[str] = []
        for group in groups:
            description = descriptions.get(group)
            state = "Dead" if description is None else description.state
            if state not in ("Empty", "Dead"):
                errors.append(
                    f"Assignments can only be reset if the group '{group}' is inactive, but the "
                    f"current state is {state}."
                )
                continue
            if from_file is not None and group not in from_file:
                errors.append(f"No reset plan for group {group} found.")
                continue
            reset = self._plan(group, None if from_file is None else from_file[group])
            for warning in reset.warnings:
                print(f"WARN: {warning}", file=sys.stderr)
            if args.execute and reset.offsets:
                self.cluster.alter_offsets(group, reset.offsets)
            plans[group] = reset.offsets
        if args.export:
            sys.stdout.write(plan.export_csv(plans, single_group=len(groups) == 1) + "\n")
        elif plans:
            sys.stdout.write(format_reset(plans))
        if errors:
            raise ToolError(" ".join(errors))
        return 0

    def _partitions_to_reset(self, committed: Mapping[TP, int]) -> list[TP]:
        if self.args.all_topics:
            return sorted(committed)
        partitions: list[TP] = []
        whole: list[str] = []
        for arg in self.args.topic:
            topic, numbers = plan.parse_topic_arg(arg)
            if numbers is None:
                whole.append(topic)
            else:
                partitions += [(topic, p) for p in numbers]
        known = self.cluster.topic_partitions([t for t, _ in partitions] + whole)
        for topic, numbers in known.items():
            if numbers is None:
                raise ToolError(f"Topic '{topic}' does not exist: check the --topic name")
            if topic in whole:
                partitions += [(topic, p) for p in numbers]
        absent = [tp for tp in partitions if tp[1] not in (known.get(tp[0]) or [])]
        if absent:
            names = ",".join(f"{t}-{p}" for t, p in absent)
            raise ToolError(f'The partitions "{names}" do not exist')
        return sorted(set(partitions))

    def _plan(self, group: str, file_plan: Mapping[TP, int] | None) -> ResetPlan:
        args = self.args
        cluster = self.cluster
        committed = cluster.committed(group)
        if file_plan is not None:
            return plan.clamp_offsets(file_plan, cluster.log_offsets(sorted(file_plan)))
        partitions = self._partitions_to_reset(committed)
        if args.to_earliest:
            return self._from_log(partitions, "earliest")
        if args.to_latest:
            return self._from_log(partitions, "latest")
        if args.to_current:
            uncommitted = [tp for tp in partitions if tp not in committed]
            ends = cluster.list_offsets(uncommitted, "latest")
            return plan.plan_to_current(partitions, committed, LogOffsets(end=ends))
        if args.to_offset is not None:
            logs = cluster.log_offsets(partitions)
            return plan.plan_to_offset(partitions, args.to_offset, logs)
        if args.shift_by is not None:
            logs = cluster.log_offsets(partitions)
            return plan.plan_shift_by(partitions, args.shift_by, committed, logs)
        if args.to_datetime is not None:
            return self._at_time(partitions, plan.parse_datetime_ms(args.to_datetime))
        duration_ms = plan.parse_duration_ms(args.by_duration)
        return self._at_time(partitions, int(time.time() * 1000) - duration_ms)

    def _from_log(
        self, partitions: Sequence[TP], which: Literal["earliest", "latest"]
    ) -> ResetPlan:
        found = self.cluster.list_offsets(partitions, which)
        for topic, partition in partitions:
            if (topic, partition) not in found:
                edge = "starting" if which == "earliest" else "ending"
                raise ToolError(
                    f"Error getting {edge} offset of topic partition: {topic}-{partition}"
                )
        return ResetPlan({tp: found[tp] for tp in partitions})

    def _at_time(self, partitions: Sequence[TP], timestamp_ms: int) -> ResetPlan:
        """The first offset with a timestamp at or after ``timestamp_ms``; the log end offset
        where there is none (Kafka warns that the partition "is empty")."""
        found = self.cluster.list_offsets(partitions, timestamp_ms)
        missing = [tp for tp in partitions if found.get(tp, -1) < 0]
        for topic, partition in missing:
            print(
                f"\nWarn: Partition {partition} from topic {topic} is empty. Falling back to "
                "latest known offset.",
                file=sys.stderr,
            )
        if missing:
            found.update(self._from_log(missing, "latest").offsets)
        return ResetPlan({tp: found[tp] for tp in partitions})


def _note_state(description: GroupDescription) -> None:
    """Kafka's notes on stderr for a group that is empty or rebalancing."""
    group = description.group
    if description.state == "Empty":
        print(f"\nConsumer group '{group}' has no active members.", file=sys.stderr)
    elif description.state in ("PreparingRebalance", "CompletingRebalance"):
        print(f"\nWarning: Consumer group '{group}' is rebalancing.", file=sys.stderr)
