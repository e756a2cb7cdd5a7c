"""``franz reassign-partitions`` flags: Kafka 3.9's ``validateAndParseArgs`` checks (one action,
its required options, no option another action owns) with Kafka's messages."""

from __future__ import annotations

import argparse

import pytest

from franz.admin.options import ToolError
from franz.cli.tools.reassign_partitions import _check_options, add_arguments


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["--bootstrap-server", "h:1", *argv])


@pytest.mark.parametrize(
    ("argv", "action"),
    [
        (("--list",), "list"),
        (("--verify", "--reassignment-json-file", "p", "--preserve-throttles"), "verify"),
        (("--cancel", "--reassignment-json-file", "p", "--preserve-throttles"), "cancel"),
        (
            ("--execute", "--reassignment-json-file", "p", "--additional", "--throttle", "10",
             "--replica-alter-log-dirs-throttle", "5"),
            "execute",
        ),
        (("--generate", "--topics-to-move-json-file", "t", "--broker-list", "1"), "generate"),
    ],
)  # fmt: skip
def test_permitted_options(argv: tuple[str, ...], action: str) -> None:
    assert _check_options(parse(*argv)) == action


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--verify",), 'Missing required argument "[reassignment-json-file]"'),
        (("--generate", "--broker-list", "1"), 'Missing required argument "[topics-to-move'),
        (
            ("--verify", "--reassignment-json-file", "p", "--throttle", "1"),
            'Option "[throttle]" can\'t be used with action "[verify]"',
        ),
        (
            ("--list", "--reassignment-json-file", "p"),
            'Option "[reassignment-json-file]" can\'t be used with action "[list]"',
        ),
        (
            ("--cancel", "--reassignment-json-file", "p", "--additional"),
            'Option "[additional]" can\'t be used with action "[cancel]"',
        ),
    ],
)
def test_refused_options(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(ToolError) as info:
        _check_options(parse(*argv))
    assert message in str(info.value)


def test_one_action_only() -> None:
    with pytest.raises(SystemExit):
        parse("--list", "--verify")


def test_a_controller_without_the_reassignment_apis_gets_one_line_naming_the_api() -> None:
    """What ``--execute`` / ``--cancel`` / ``--list`` print when the controller does not list
    ListPartitionReassignments (a Kafka before 2.4; every Franz broker serves it now)."""
    from franz.admin.cluster_wire import NotServed
    from franz.cli.tools.reassign_partitions import _needs

    error = _needs(NotServed(46, "the controller (broker 0 at 127.0.0.1:9092)"), "moving replicas")
    assert str(error) == (
        "moving replicas needs ListPartitionReassignments (API 46), which the controller "
        "(broker 0 at 127.0.0.1:9092) does not serve (nothing was changed)"
    )

