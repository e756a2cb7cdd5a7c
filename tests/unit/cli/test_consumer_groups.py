"""``franz consumer-groups``' pure parts: flag parsing, reset planning
(``franz.admin.group_offsets``) and Kafka's table layouts (``franz.admin.group_tables``)."""

from __future__ import annotations

import argparse
import datetime

import pytest

from franz.admin.group_offsets import (
    LogOffsets,
    clamp_offsets,
    export_csv,
    parse_datetime_ms,
    parse_duration_ms,
    parse_reset_csv,
    parse_topic_arg,
    plan_shift_by,
    plan_to_current,
    plan_to_offset,
)
from franz.admin.group_tables import (
    GroupState,
    MemberRow,
    OffsetRow,
    assignment_string,
    format_delete_offsets,
    format_group_list,
    format_members,
    format_offsets,
    format_reset,
    format_state,
)
from franz.admin.options import ToolError
from franz.cli.tools import consumer_groups

# -- --topic -----------------------------------------------------------------------------------


def test_topic_arg_without_partitions_means_every_partition() -> None:
    assert parse_topic_arg("orders") == ("orders", None)


def test_topic_arg_lists_partitions() -> None:
    assert parse_topic_arg("t:0,2") == ("t", [0, 2])
    assert parse_topic_arg("t:7") == ("t", [7])


@pytest.mark.parametrize("arg", ["t:", ":0", "t:0:1", "t:a", "t:0,,1", "t:-1"])
def test_topic_arg_rejects_malformed(arg: str) -> None:
    with pytest.raises(ToolError):
        parse_topic_arg(arg)


# -- --by-duration / --to-datetime -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("PT1H", 3_600_000),
        ("P1DT2H", 93_600_000),
        ("PT1H30M", 5_400_000),
        ("pt15m", 900_000),
        ("PT0.5S", 500),
        ("PT1.25S", 1250),
        ("P2D", 172_800_000),
        ("-PT1M", -60_000),
        ("PT-30S", -30_000),
    ],
)
def test_duration_as_java_parses_it(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "P", "PT", "1H", "PT1X", "P1H", "PT1H2"])
def test_duration_rejects_malformed(text: str) -> None:
    with pytest.raises(ToolError, match="PnDTnHnMnS"):
        parse_duration_ms(text)


def _utc_ms(*fields: int) -> int:
    moment = datetime.datetime(*fields, tzinfo=datetime.UTC)  # type: ignore[misc]
    return int(moment.timestamp() * 1000)


def test_datetime_without_zone_is_utc() -> None:
    assert parse_datetime_ms("2024-01-31T13:45:10.250") == _utc_ms(2024, 1, 31, 13, 45, 10) + 250


@pytest.mark.parametrize("zone", ["+02:00", "+0200", "+02"])
def test_datetime_zone_spellings(zone: str) -> None:
    assert parse_datetime_ms(f"2024-01-31T13:45:10.000{zone}") == _utc_ms(2024, 1, 31, 11, 45, 10)


def test_datetime_z_and_negative_zone() -> None:
    assert parse_datetime_ms("1970-01-01T00:00:01.500Z") == 1500
    assert parse_datetime_ms("1970-01-01T00:00:00.000-01:30") == 5_400_000


@pytest.mark.parametrize(
    "text",
    ["2024-01-31", "2024-01-31 13:45:10.000", "2024-01-31T13:45:10", "2024-13-01T00:00:00.000"],
)
def test_datetime_rejects_malformed(text: str) -> None:
    with pytest.raises(ToolError, match="--to-datetime"):
        parse_datetime_ms(text)


# -- CSV ---------------------------------------------------------------------------------------


def test_csv_one_group_three_fields() -> None:
    plan = parse_reset_csv("t,0,5\nt,2,7\n\nu,1,0\n", ["g"])
    assert plan == {"g": {("t", 0): 5, ("t", 2): 7, ("u", 1): 0}}


def test_csv_with_group_column() -> None:
    plan = parse_reset_csv("g1,t,0,5\ng2,t,0,9\n", ["g1", "g2"])
    assert plan == {"g1": {("t", 0): 5}, "g2": {("t", 0): 9}}


def test_csv_with_group_column_for_one_group() -> None:
    assert parse_reset_csv("g,t,1,3\n", ["g"]) == {"g": {("t", 1): 3}}


@pytest.mark.parametrize("text", ["", "t,0\n", "t,x,1\n", "t,0,1\nt,0\n"])
def test_csv_rejects_malformed(text: str) -> None:
    with pytest.raises(ToolError, match="--from-file"):
        parse_reset_csv(text, ["g"])


def test_export_round_trips_through_the_parser() -> None:
    plans = {"g": {("t", 2): 7, ("t", 0): 5}}
    text = export_csv(plans, single_group=True)
    assert text == "t,0,5\nt,2,7\n"
    assert parse_reset_csv(text, ["g"]) == plans
    several = {"a": {("t", 0): 1}, "b": {("t", 0): 2}}
    text = export_csv(several, single_group=False)
    assert text == "a,t,0,1\nb,t,0,2\n"
    assert parse_reset_csv(text, ["a", "b"]) == several


# -- planning ----------------------------------------------------------------------------------

LOGS = LogOffsets(start={("t", 0): 10, ("t", 1): 0}, end={("t", 0): 50, ("t", 1): 20})


def test_clamp_keeps_offsets_in_range_and_warns() -> None:
    plan = clamp_offsets({("t", 0): 5, ("t", 1): 25}, LOGS)
    assert plan.offsets == {("t", 0): 10, ("t", 1): 20}
    assert plan.warnings == [
        "New offset (5) is lower than earliest offset for topic partition t-0. "
        "Value will be set to 10",
        "New offset (25) is higher than latest offset for topic partition t-1. "
        "Value will be set to 20",
    ]
    assert clamp_offsets({("t", 0): 30}, LOGS).warnings == []


def test_to_offset_is_clamped_per_partition() -> None:
    plan = plan_to_offset([("t", 0), ("t", 1)], 15, LOGS)
    assert plan.offsets == {("t", 0): 15, ("t", 1): 15}
    assert plan_to_offset([("t", 1)], 99, LOGS).offsets == {("t", 1): 20}


def test_shift_by_moves_from_the_committed_offset() -> None:
    committed = {("t", 0): 30, ("t", 1): 3}
    plan = plan_shift_by([("t", 0), ("t", 1)], -5, committed, LOGS)
    assert plan.offsets == {("t", 0): 25, ("t", 1): 0}
    assert len(plan.warnings) == 1


def test_shift_by_needs_a_committed_offset() -> None:
    with pytest.raises(ToolError, match="Cannot shift offset for partition t-1"):
        plan_shift_by([("t", 1)], 1, {("t", 0): 3}, LOGS)


def test_to_current_falls_back_to_the_log_end() -> None:
    plan = plan_to_current([("t", 0), ("t", 1)], {("t", 0): 12}, LOGS)
    assert plan.offsets == {("t", 0): 12, ("t", 1): 20}


# -- tables ------------------------------------------------------------------------------------


def _row(group: str = "g", topic: str = "t", partition: int = 0, **kw: object) -> OffsetRow:
    fields: dict[str, object] = {
        "current_offset": 4,
        "log_end_offset": 10,
        "lag": 6,
        "consumer_id": "c-1",
        "host": "/127.0.0.1",
        "client_id": "cl",
    }
    fields.update(kw)
    return OffsetRow(group, topic, partition, **fields)  # type: ignore[arg-type]


def test_offsets_table_pads_as_kafka() -> None:
    text = format_offsets([_row(), _row(partition=1, current_offset=None, lag=None,
                                        consumer_id=None, host=None, client_id=None)])
    assert text == (
        "\n"
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG"
        "             CONSUMER-ID     HOST            CLIENT-ID\n"
        "g               t               0          4               10              6"
        "               c-1             /127.0.0.1      cl\n"
        "g               t               1          -               10              -"
        "               -               -               -\n"
    )


def test_offsets_table_widens_name_columns_to_the_data() -> None:
    long_topic = "a-rather-long-topic-name"
    consumer = "consumer-" + "x" * 30
    lines = format_offsets([_row(topic=long_topic, consumer_id=consumer)]).splitlines()
    header, row = lines[1], lines[2]
    assert header.index("PARTITION") == row.index(" 0 ") + 1 == 16 + len(long_topic) + 1
    assert header.index("HOST") == row.index("/127.0.0.1") == header.index("CONSUMER-ID") + len(
        consumer
    ) + 1


def test_members_table_and_verbose_assignment() -> None:
    rows = [MemberRow("g", "c-1", None, "/10.0.0.1", "cl", (("t", 0), ("t", 2), ("a", 1)))]
    assert format_members(rows, verbose=False) == (
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n"
        "g               c-1             /10.0.0.1       cl              3               \n"
    )
    verbose = format_members(rows, verbose=True).splitlines()
    assert verbose[1].endswith("#PARTITIONS     ASSIGNMENT")
    assert verbose[2].endswith("3               a(1), t(0,2)")


def test_members_table_shows_group_instance_ids_of_static_members() -> None:
    rows = [
        MemberRow("g", "c-1", "static-1", "/h", "cl", ()),
        MemberRow("g", "c-2", None, "/h", "cl", ()),
    ]
    lines = format_members(rows, verbose=True).splitlines()
    assert lines[1].split() == [
        "GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
        "ASSIGNMENT",
    ]
    assert lines[2].split() == ["g", "c-1", "static-1", "/h", "cl", "0", "-"]
    assert lines[1].index("HOST") == lines[3].index("/h") == 16 + 16 + 18


def test_assignment_string() -> None:
    assert assignment_string([]) == "-"
    assert assignment_string([("b", 3), ("a", 1), ("b", 0)]) == "a(1), b(0,3)"


def test_state_table() -> None:
    text = format_state(GroupState("g", "127.0.0.1", 9092, 0, "range", "Stable", 2))
    # Kafka 3.9's printStates: GROUP as wide as the coordinator column (>= 25), STATE 15.
    assert text == (
        "\nGROUP                     COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE"
        "           #MEMBERS"
        "\ng                         127.0.0.1:9092  (0)       range                Stable"
        "          2\n"
    )
    empty = format_state(GroupState("g1", "127.0.0.1", 45563, 0, "", "Empty", 0))
    assert empty.splitlines()[2] == (
        "g1                        127.0.0.1:45563  (0)                           Empty           0"
    )


def test_reset_table_sorted_and_empty() -> None:
    text = format_reset({"g": {("t", 1): 7, ("t", 0): 5}})
    assert text == (
        "\nGROUP           TOPIC           PARTITION  NEW-OFFSET"
        "\ng               t               0          5"
        "\ng               t               1          7\n"
    )
    assert format_reset({}) == "\n"


def test_group_list_with_states() -> None:
    text = format_group_list([("g", "Stable"), ("a-much-longer-group-name", "Empty")])
    lines = text.splitlines()
    width = len("a-much-longer-group-name") + 10
    assert lines[0] == "GROUP".ljust(width) + " " + "STATE".ljust(20)
    assert lines[1] == "g".ljust(width) + " " + "Stable".ljust(20)
    assert format_group_list([]) == "GROUP".ljust(25) + " " + "STATE".ljust(20) + "\n"


def test_delete_offsets_table() -> None:
    text = format_delete_offsets({("t", 1): None, ("gone", -1): "No such topic."})
    assert text.splitlines()[1:] == [
        "TOPIC           PARTITION  STATUS         ",
        "gone            -          Error: No such topic.",
        "t               1          Successful     ",
    ]


# -- flag combinations -------------------------------------------------------------------------


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="franz consumer-groups")
    consumer_groups.add_arguments(parser)
    args = parser.parse_args(["--bootstrap-server", "h:1", *argv])
    consumer_groups._check_args(args)
    return args


@pytest.mark.parametrize(
    "argv",
    [
        ["--describe"],
        ["--describe", "--group", "g", "--all-groups"],
        ["--describe", "--group", "g", "--members", "--state"],
        ["--reset-offsets", "--group", "g", "--topic", "t"],
        ["--reset-offsets", "--group", "g", "--to-earliest"],
        ["--reset-offsets", "--group", "g", "--to-earliest", "--topic", "t", "--all-topics"],
        ["--reset-offsets", "--group", "g", "--to-earliest", "--all-topics", "--dry-run",
         "--execute"],
        ["--reset-offsets", "--group", "g", "--to-earliest", "--to-latest", "--all-topics"],
        ["--delete-offsets", "--group", "g"],
        ["--delete-offsets", "--group", "a", "--group", "b", "--topic", "t"],
        ["--list", "--execute"],
        ["--describe", "--group", "g", "--topic", "t"],
        ["--list", "--describe"],
        [],
    ],
)
def test_bad_flag_combinations_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        _parse(*argv)
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_good_flag_combinations() -> None:
    args = _parse("--reset-offsets", "--group", "g", "--topic", "t:0,1", "--topic", "u",
                  "--shift-by", "-2", "--execute")
    assert args.topic == ["t:0,1", "u"] and args.shift_by == -2 and args.execute
    assert _parse("--list", "--state").state == ""
    assert _parse("--list", "--state", "Stable,Empty").state == "Stable,Empty"
    assert _parse("--describe", "--all-groups", "--state").state == ""
    assert _parse("--reset-offsets", "--group", "g", "--from-file", "x.csv").from_file == "x.csv"
    assert _parse("--list").timeout_ms == consumer_groups.DEFAULT_TIMEOUT_MS
