"""The cluster bench's pure parts: when metadata counts as converged, its settings."""

from __future__ import annotations

from bench.cluster_bench import ClusterView, converged, parse_args, settings_from_args

LEADERS = {("t", 0): 2, ("t", 1): 3}


def view(brokers: tuple[int, ...] = (2, 3), controller: int = 2, **leaders: int) -> ClusterView:
    merged = {**LEADERS, **{("t", int(k[1:])): v for k, v in leaders.items()}}
    return ClusterView(brokers, controller, merged)


def test_survivors_agreeing_on_brokers_controller_and_live_leaders_are_converged() -> None:
    assert converged([view(), view()], [2, 3], 2, {"t": 2})


def test_a_dead_broker_listed_a_leader_on_it_or_a_missing_answer_is_not_converged() -> None:
    assert not converged([view(), view(brokers=(1, 2, 3))], [2, 3], 2, {"t": 2})
    assert not converged([view(), view(p1=1)], [2, 3], 2, {"t": 2})
    assert not converged([view(p1=1), view(p1=1)], [2, 3], 2, {"t": 2})
    assert not converged([view(), None], [2, 3], 2, {"t": 2})
    assert not converged([], [2, 3], 2, {})


def test_brokers_naming_another_or_a_dead_controller_are_not_converged() -> None:
    assert not converged([view(), view(controller=3)], [2, 3], 2, {"t": 2})
    assert not converged([view(controller=1), view(controller=1)], [2, 3], None, {"t": 2})
    assert converged([view(controller=3), view(controller=3)], [2, 3], None, {"t": 2})


def test_a_partition_not_yet_known_is_not_converged() -> None:
    assert not converged([view(), view()], [2, 3], 2, {"t": 3})
    assert not converged([view(), view()], [2, 3], 2, {"u": 1})


def test_quick_and_full_settings() -> None:
    full = settings_from_args(parse_args([]))
    assert (full.runs, full.session_ms, full.topics, full.partitions) == (5, (18000, 6000), 100, 6)
    quick = settings_from_args(parse_args(["--quick", "--scenarios", "create"]))
    assert (quick.mode, quick.scenarios, quick.session_ms, quick.topics) == (
        "quick",
        ("create",),
        (6000,),
        20,
    )
