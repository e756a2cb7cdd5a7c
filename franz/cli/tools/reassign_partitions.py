"""Move partition replicas between brokers (Kafka's ``kafka-reassign-partitions.sh``).

    franz reassign-partitions --bootstrap-server HOST:PORT [--command-config FILE] [--timeout MS]
        (--generate --topics-to-move-json-file FILE --broker-list 0,1 [--disable-rack-aware]
         | --execute --reassignment-json-file FILE [--additional] [--throttle B/S]
                     [--replica-alter-log-dirs-throttle B/S]
         | --verify --reassignment-json-file FILE [--preserve-throttles]
         | --cancel --reassignment-json-file FILE [--preserve-throttles]
         | --list)

Kafka 3.9's ``ReassignPartitionsCommand``: the same flags, JSON, texts, orderings and exit
codes. A plan (``--reassignment-json-file``) is what ``--generate`` proposes::

    {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3],"log_dirs":["any","any"]}]}

* ``--generate`` prints the topics' current assignment and a proposed one over
  ``--broker-list`` (Kafka's rack-unaware ``assignReplicasToBrokers``).
* ``--execute`` refuses to start while any reassignment is ongoing unless ``--additional``
  ("Cannot execute because there is an existing partition assignment. ..."), checks the
  brokers ("Unknown broker id 5") and partitions ("Unable to find partition: t-9"), prints
  "Current partition replica assignment" (save it for a rollback), sets the throttles when
  asked, then starts the moves: "Successfully started partition reassignments for t-0,t-1".
  ``--throttle`` sets ``leader/follower.replication.throttled.rate`` on every broker of a
  move and ``leader/follower.replication.throttled.replicas`` ("partition:broker,...") on
  its topics ("The inter-broker throttle limit was set to N B/s", after Kafka's warning to
  run --verify). The brokers copy the data; the old replicas are deleted when the new ones
  have caught up.
* ``--verify`` prints each partition's state ("Reassignment of partition t-0 is still in
  progress." / "is completed." / "There is no active reassignment of partition t-0, but
  replica set is 1 rather than 2,3.") and, once no reassignment at all is ongoing, clears
  the throttles of the plan's topics and of all brokers (unless ``--preserve-throttles``):
  "Clearing broker-level throttles on brokers 1,2,3", "Clearing topic-level throttles on
  topic t". Brokers the plan names that the cluster does not have are named there as by
  Kafka but not cleared (a config change cannot reach them; Kafka's tool waits for them
  until its timeout).
* ``--cancel`` cancels the plan's ongoing reassignments ("Successfully cancelled partition
  reassignment for: t-0"; the replicas go back to the original set) and clears the
  throttles unless ``--preserve-throttles``. As Kafka 3.9, an ongoing reassignment that
  only adds replicas (nothing to remove) is not cancelled ("None of the specified
  partition reassignments are active.").
* ``--list``: "Current partition reassignments:" then "t-0: replicas: 2,3,1. adding: 2,3.
  removing: 1.", or "No partition reassignments found.".

Kafka's terse failures (an existing reassignment, a partition the controller refused:
"Error reassigning partition(s):" then "t-0: <error>") are printed on stdout with exit 1,
as Kafka; others are Franz's one-line error on stderr, exit 1.

``log_dirs`` other than "any" move a replica to that log directory of its broker (Kafka's
AlterReplicaLogDirs, retried until ``--timeout`` while the replica is still arriving;
``--replica-alter-log-dirs-throttle`` bounds the copy). A plan naming a broker that does
not serve AlterReplicaLogDirs (API 34: a Franz broker older than its log-dir moves) is
refused before anything changes. ``--verify`` reports those moves from DescribeLogDirs.

The reassignment APIs (AlterPartitionReassignments 45, ListPartitionReassignments 46,
KIP-455) are not in librdkafka: Franz sends them itself to the active controller
(``franz.admin.cluster_wire``, over TLS and SASL too: ``--command-config``'s
``security.protocol``, ``ssl.*`` and ``sasl.*``, ``franz.admin.wire_security``). A
controller that does not serve them is named in a one-line error before anything changes;
``--verify`` then reports every partition from its current replicas (with a warning on
stderr). ``--timeout`` bounds the wait for the cluster and, as Kafka's, for log-dir moves to
start. Not supported:
rack-aware ``--generate``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Final

from franz.admin.client import make_admin, tp_name
from franz.admin.cluster_wire import (
    ALTER_REPLICA_LOG_DIRS,
    LIST_PARTITION_REASSIGNMENTS,
    ClusterClient,
    NotServed,
    cluster_client,
)
from franz.admin.java_order import collection_capacity, hash_order, int_hash, string_hash
from franz.admin.java_order import topic_partition_hash as tp_hash
from franz.admin.log_dir_moves import TerseTimeout, log_dir_moves, start_log_dir_moves
from franz.admin.options import ToolError, add_connection_options
from franz.admin.partition_admin import read_cluster
from franz.admin.reassignment import (
    Assignment,
    Ongoing,
    PartitionState,
    Plan,
    assign_replicas_to_brokers,
    execute_checks,
    follower_throttles,
    format_reassignment_json,
    leader_throttles,
    log_dir_move_lines,
    parse_broker_list,
    parse_reassignment_json,
    parse_topics_json,
    partition_state_lines,
    proposed_move_map,
    reassigning_brokers,
    reassignments_text,
    sorted_names,
)
from franz.admin.throttles import (
    clear_broker_throttles,
    clear_topic_throttles,
    set_broker_rates,
    set_topic_throttles,
)

__all__ = ["add_arguments", "run"]

CLIENT_ID: Final = "reassign-partitions-tool"
CANNOT_EXECUTE: Final = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one. "
    "The --additional flag can also be used to change the throttle by resubmitting the "
    "current reassignment."
)
RUN_VERIFY: Final = (
    "Warning: You must run --verify periodically, until the reassignment completes, to "
    "ensure the throttle is removed."
)
ACTIONS: Final = ("generate", "execute", "verify", "cancel", "list")
#: Kafka's ``validateAndParseArgs``: the options each action takes besides the connection
#: ones (``--timeout`` is also Franz's wait for the cluster, so every action takes it).
REQUIRED: Final = {
    "verify": ("reassignment_json_file",),
    "generate": ("topics_to_move_json_file", "broker_list"),
    "execute": ("reassignment_json_file",),
    "cancel": ("reassignment_json_file",),
    "list": (),
}
PERMITTED: Final = {
    "verify": ("preserve_throttles",),
    "generate": ("disable_rack_aware",),
    "execute": ("additional", "throttle", "replica_alter_log_dirs_throttle"),
    "cancel": ("preserve_throttles",),
    "list": (),
}
OPTIONS: Final = (
    "reassignment_json_file", "topics_to_move_json_file", "broker_list", "disable_rack_aware",
    "preserve_throttles", "additional", "throttle", "replica_alter_log_dirs_throttle",
)  # fmt: skip


class Terse(ToolError):
    """A failure Kafka reports with its message alone, on stdout (``TerseException``)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--generate", action="store_true", help="generate a candidate partition reassignment"
    )
    action.add_argument(
        "--execute", action="store_true", help="start the reassignment of --reassignment-json-file"
    )
    action.add_argument(
        "--verify", action="store_true", help="report the status of --reassignment-json-file"
    )
    action.add_argument("--cancel", action="store_true", help="cancel an active reassignment")
    action.add_argument("--list", action="store_true", help="list all active reassignments")
    parser.add_argument(
        "--topics-to-move-json-file",
        metavar="FILE",
        help='with --generate: {"topics": [{"topic": "foo"}], "version": 1}',
    )
    parser.add_argument(
        "--broker-list",
        metavar="0,1,2",
        help="with --generate: the brokers to which the partitions may be assigned",
    )
    parser.add_argument(
        "--reassignment-json-file",
        metavar="FILE",
        help="with --execute/--verify/--cancel: the reassignment JSON, as --generate proposes it",
    )
    parser.add_argument(
        "--disable-rack-aware",
        action="store_true",
        help="with --generate: ignore racks (franz always does)",
    )
    parser.add_argument(
        "--preserve-throttles",
        action="store_true",
        help="with --verify/--cancel: do not clear the replication throttles",
    )
    parser.add_argument(
        "--additional",
        action="store_true",
        help="with --execute: start this reassignment in addition to the ongoing ones (also "
        "changes the throttle of a resubmitted one)",
    )
    parser.add_argument(
        "--throttle",
        type=int,
        metavar="B/S",
        help="with --execute: throttle moves between brokers to this many bytes/s",
    )
    parser.add_argument(
        "--replica-alter-log-dirs-throttle",
        type=int,
        metavar="B/S",
        help="with --execute: throttle moves between log dirs of a broker to this many bytes/s",
    )


def _check_options(args: argparse.Namespace) -> str:
    """The action, after Kafka's checks of required and permitted options."""
    action = next(a for a in ACTIONS if getattr(args, a))
    for name in REQUIRED[action]:
        if getattr(args, name) is None:
            raise ToolError(f'Missing required argument "[{name.replace("_", "-")}]"')
    for name in OPTIONS:
        given = getattr(args, name) not in (None, False)
        if given and name not in REQUIRED[action] and name not in PERMITTED[action]:
            raise ToolError(
                f'Option "[{name.replace("_", "-")}]" can\'t be used with action "[{action}]"'
            )
    return action


def _read_file(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror or exc}") from None


def _plural(count: int) -> str:
    return "" if count == 1 else "s"


def _needs(exc: NotServed, what: str) -> ToolError:
    return ToolError(
        f"{what} needs {exc.api_name} (API {exc.api_key}), which {exc.where} does not serve "
        "(nothing was changed)"
    )


# -- --generate -----------------------------------------------------------------------------------


def generate(admin: Any, args: argparse.Namespace) -> int:
    """librdkafka only (Metadata): works over any ``security.protocol``."""
    brokers = parse_broker_list(args.broker_list)
    topics = parse_topics_json(_read_file(args.topics_to_move_json_file))
    cluster = read_cluster(admin, args)
    for topic in hash_order(dict.fromkeys(topics), string_hash):
        if topic not in cluster.partitions:
            raise ToolError(f"Topic {topic} not found.")
    current = {
        (t, p): list(view.replicas) for t in topics for p, view in cluster.partitions[t].items()
    }
    alive = sorted(set(brokers) & cluster.brokers)
    proposed: Assignment = {}
    for topic in sorted(set(topics)):
        parts = cluster.partitions[topic]
        factor = len(parts[min(parts)].replicas)
        for p, replicas in assign_replicas_to_brokers(alive, len(parts), factor).items():
            proposed[(topic, p)] = replicas
    print(f"Current partition replica assignment\n{format_reassignment_json(current)}\n")
    print(f"Proposed partition reassignment configuration\n{format_reassignment_json(proposed)}")
    return 0


# -- --execute ------------------------------------------------------------------------------------


def _current_replicas(
    admin: Any, args: argparse.Namespace, keys: list[tuple[str, int]]
) -> Assignment:
    """Kafka's ``getReplicaAssignmentForPartitions`` (an unknown topic or partition fails)."""
    cluster = read_cluster(admin, args)
    for topic in hash_order(dict.fromkeys(t for t, _ in keys), string_hash):
        if topic not in cluster.partitions:
            raise ToolError(f"Topic {topic} not found.")
    current = {
        (t, p): list(cluster.partitions[t][p].replicas)
        for t, p in keys
        if p in cluster.partitions[t]
    }
    in_map_order = hash_order(keys, tp_hash)
    missing = [
        key
        for key in hash_order(
            in_map_order, tp_hash, initial_capacity=collection_capacity(len(keys))
        )
        if key not in current
    ]
    if missing:
        raise ToolError(f"Unable to find partition: {', '.join(tp_name(*k) for k in missing)}")
    return current


def _check_log_dir_moves(client: ClusterClient, plan: Plan) -> None:
    """Refuse, before anything changes, log-dir moves on a live broker that does not serve
    AlterReplicaLogDirs (Kafka's tool would start the reassignments, then fail)."""
    if not plan.log_dirs:
        return
    live = client.nodes().brokers
    for broker in sorted({b for _, _, b in plan.log_dirs}):
        if broker in live and not client.serves(broker, ALTER_REPLICA_LOG_DIRS):
            moves = ", ".join(
                f"{t}-{p} to {d}" for (t, p, b), d in sorted(plan.log_dirs.items()) if b == broker
            )
            raise ToolError(
                f'moving replicas between log directories (log_dirs other than "any": {moves} '
                f"on broker {broker}) needs AlterReplicaLogDirs (API 34), which broker "
                f'{broker} does not serve; use "any" (nothing was changed)'
            )


def execute(admin: Any, client: ClusterClient, args: argparse.Namespace) -> int:
    plan = parse_reassignment_json(_read_file(args.reassignment_json_file))
    proposed = execute_checks(plan)
    _check_log_dir_moves(client, plan)
    try:
        ongoing = client.list_reassignments()
    except NotServed as exc:
        raise _needs(exc, "moving replicas") from None
    if not args.additional and ongoing:
        raise Terse(CANNOT_EXECUTE)
    live = set(client.nodes().brokers)
    named = [b for key in hash_order(proposed, tp_hash) for b in proposed[key]]
    unknown = [b for b in hash_order(dict.fromkeys(named), int_hash) if b not in live]
    if unknown:
        raise ToolError(f"Unknown broker id {unknown[0]}")
    current = _current_replicas(admin, args, list(proposed))
    print("Current partition replica assignment\n")
    print(format_reassignment_json(current))
    print("\nSave this to use as the --reassignment-json-file option during rollback")
    throttle = -1 if args.throttle is None else args.throttle
    log_dir_throttle = (
        -1 if args.replica_alter_log_dirs_throttle is None else args.replica_alter_log_dirs_throttle
    )
    if throttle >= 0 or log_dir_throttle >= 0:
        print(RUN_VERIFY)
        if throttle >= 0:
            move_map = proposed_move_map(ongoing, proposed, current)
            set_topic_throttles(
                admin, args, leader_throttles(move_map), follower_throttles(move_map)
            )
            set_broker_rates(admin, args, reassigning_brokers(move_map), throttle, log_dirs=False)
            print(f"The inter-broker throttle limit was set to {throttle} B/s")
        if log_dir_throttle >= 0:
            brokers = sorted({b for _, _, b in plan.log_dirs})
            set_broker_rates(admin, args, brokers, log_dir_throttle, log_dirs=True)
            print(f"The replica-alter-dir throttle limit was set to {log_dir_throttle} B/s")
    sys.stdout.flush()
    errors = client.alter_reassignments(dict(proposed))
    if errors:
        raise Terse(
            "Error reassigning partition(s):\n"
            + "\n".join(f"{tp_name(*key)}: {errors[key].text}" for key in sorted(errors))
        )
    print(
        f"Successfully started partition reassignment{_plural(len(proposed))} for "
        f"{sorted_names(proposed)}"
    )
    if plan.log_dirs:
        start_log_dir_moves(client, plan.log_dirs, args.timeout_ms, print)
    return 0


# -- --verify and --cancel ------------------------------------------------------------------------


def _states(
    admin: Any, args: argparse.Namespace, plan: Plan, ongoing: dict[tuple[str, int], Ongoing]
) -> dict[tuple[str, int], PartitionState]:
    """Kafka's ``findPartitionReassignmentStates``: an ongoing reassignment's full replica
    set, else the current replicas (none for an unknown topic or partition)."""
    targets = plan.targets()
    cluster = None if all(key in ongoing for key in targets) else read_cluster(admin, args)
    states = {}
    for key, target in targets.items():
        if key in ongoing:
            states[key] = PartitionState(list(ongoing[key].replicas), target, done=False)
            continue
        assert cluster is not None
        view = cluster.partitions.get(key[0], {}).get(key[1])
        states[key] = PartitionState(list(view.replicas) if view else [], target, done=True)
    return states


def _clear_all_throttles(
    admin: Any, client: ClusterClient, args: argparse.Namespace, plan: Plan
) -> None:
    """Kafka's ``clearAllThrottles``: every broker (the cluster's, then the plan's) and every
    topic of the plan, named in ``HashSet`` order."""
    live = list(client.nodes().brokers)
    named = hash_order(dict.fromkeys([*live, *(b for _, rs in plan.parts for b in rs)]), int_hash)
    alive = set(live)
    brokers = ",".join(map(str, named))
    print(f"Clearing broker-level throttles on broker{_plural(len(named))} {brokers}")
    sys.stdout.flush()
    clear_broker_throttles(admin, args, [b for b in named if b in alive])
    topics = hash_order(dict.fromkeys(t for (t, _), _ in plan.parts), string_hash)
    print(f"Clearing topic-level throttles on topic{_plural(len(topics))} {','.join(topics)}")
    sys.stdout.flush()
    clear_topic_throttles(admin, args, topics)


def verify(admin: Any, client: ClusterClient, args: argparse.Namespace) -> int:
    plan = parse_reassignment_json(_read_file(args.reassignment_json_file))
    try:
        ongoing = client.list_reassignments()
    except NotServed as exc:
        if exc.api_key != LIST_PARTITION_REASSIGNMENTS:
            raise
        print(
            f"franz reassign-partitions: warning: {exc}, so no reassignment can be ongoing: "
            "every partition is reported from its current replicas",
            file=sys.stderr,
        )
        ongoing = {}
    print("\n".join(partition_state_lines(_states(admin, args, plan, ongoing))))
    moves = log_dir_moves(client, plan.log_dirs) if plan.log_dirs else {}
    print("\n".join(log_dir_move_lines(moves)))
    if not ongoing and all(m.done for m in moves.values()) and not args.preserve_throttles:
        _clear_all_throttles(admin, client, args, plan)
    return 0


def cancel(admin: Any, client: ClusterClient, args: argparse.Namespace) -> int:
    plan = parse_reassignment_json(_read_file(args.reassignment_json_file))
    keys = list(plan.targets())
    try:
        listed = client.list_reassignments(keys)
    except NotServed as exc:
        raise _needs(exc, "cancelling reassignments") from None
    # Kafka 3.9 cancels a reassignment that removes replicas or adds none.
    active = [k for k, r in listed.items() if not r.adding or r.removing]
    if active:
        try:
            errors = client.alter_reassignments(dict.fromkeys(active))
        except NotServed as exc:
            raise _needs(exc, "cancelling reassignments") from None
        if errors:
            raise Terse(
                f"Error cancelling partition reassignment{_plural(len(errors))} for:\n"
                + "\n".join(f"{tp_name(*key)}: {errors[key].text}" for key in sorted(errors))
            )
        print(
            f"Successfully cancelled partition reassignment{_plural(len(active))} for: "
            f"{sorted_names(active)}"
        )
    else:
        print("None of the specified partition reassignments are active.")
    moving = {
        replica: state.current_dir
        for replica, state in (
            log_dir_moves(client, plan.log_dirs) if plan.log_dirs else {}
        ).items()
        if state.kind == "active" and state.current_dir is not None
    }
    if moving:
        start_log_dir_moves(client, moving, args.timeout_ms, print)
    else:
        print("None of the specified partition moves are active.", end="")  # sic: no newline
    sys.stdout.flush()
    if not args.preserve_throttles:
        _clear_all_throttles(admin, client, args, plan)
    return 0


def list_reassignments(client: ClusterClient) -> int:
    try:
        ongoing = client.list_reassignments()
    except NotServed as exc:
        raise _needs(exc, "listing reassignments") from None
    print(reassignments_text(ongoing))
    return 0


def run(args: argparse.Namespace) -> int:
    action = _check_options(args)
    admin = make_admin(args, {"client.id": CLIENT_ID})
    if action == "generate":
        return generate(admin, args)
    client = cluster_client(args, CLIENT_ID)
    try:
        if action == "execute":
            return execute(admin, client, args)
        if action == "verify":
            return verify(admin, client, args)
        if action == "cancel":
            return cancel(admin, client, args)
        return list_reassignments(client)
    except (Terse, TerseTimeout) as exc:
        print(exc)
        return 1
