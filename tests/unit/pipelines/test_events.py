"""``pipelines.events``: the generator's determinism, event schema and late/malformed mix."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from pipelines.common import WATERMARK_DELAY_MS, WINDOW_MS
from pipelines.events import (
    EVENT_TYPES,
    KINDS,
    MALFORMED_REASONS,
    REQUIRED_FIELDS,
    TYPE_FIELDS,
    GeneratorSpec,
    build_parser,
    format_ts,
    generate_events,
    round_sizes,
    spec_from_args,
)
from pipelines.oracle import classify, parse_ts

SPEC = GeneratorSpec(events=6_000, seed=11, events_per_minute=300)


@pytest.fixture(scope="module")
def events():
    return list(generate_events(SPEC))


def test_same_spec_same_bytes():
    first = [(e.key, e.value, e.kind, e.reason) for e in generate_events(SPEC)]
    again = [(e.key, e.value, e.kind, e.reason) for e in generate_events(SPEC)]
    assert first == again


def test_another_seed_another_stream():
    other = GeneratorSpec(events=SPEC.events, seed=SPEC.seed + 1, events_per_minute=300)
    values = [e.value for e in generate_events(SPEC)]
    others = [e.value for e in generate_events(other)]
    assert len(values) == len(others)
    assert sum(a == b for a, b in zip(values, others, strict=True)) == 0


def test_rounds_split_the_stream_in_order(events):
    assert round_sizes(SPEC) == [3_000, 3_000]
    assert round_sizes(GeneratorSpec(events=7, rounds=3)) == [3, 2, 2]
    assert [e.index for e in events] == list(range(SPEC.events))
    assert [e.round for e in events] == [1] * 3_000 + [2] * 3_000


def test_valid_events_follow_the_schema(events):
    valid = [e for e in events if e.kind != "malformed"]
    assert len(valid) > 0.9 * SPEC.events
    for event in valid:
        fields = json.loads(event.value)
        assert all(isinstance(fields[name], str) and fields[name] for name in REQUIRED_FIELDS)
        assert fields["event_type"] in EVENT_TYPES
        extra = TYPE_FIELDS.get(fields["event_type"])
        if extra is not None:
            assert isinstance(fields[extra], str) and fields[extra]
        assert set(fields) <= {*REQUIRED_FIELDS, "element", "query", "referrer", "user_agent"}
        assert fields["page"].startswith("/")
        assert parse_ts(fields["ts"]) == event.ts_ms
        assert format_ts(event.ts_ms) == fields["ts"]
        assert event.key == fields["user_id"].encode()  # keyed by user: per-user order
    types = Counter(json.loads(e.value)["event_type"] for e in valid)
    assert types["page_view"] > types["click"] > types["search"] > 0


def test_users_are_skewed(events):
    per_user = Counter(e.key for e in events)
    top_share = per_user.most_common(1)[0][1] / len(events)
    assert top_share > 5 / SPEC.users  # far above a uniform population's share
    assert len(per_user) > 200


def test_timestamp_format():
    assert format_ts(1_767_225_605_123) == "2026-01-01T00:00:05.123Z"
    assert format_ts(1_767_225_600_000) == "2026-01-01T00:00:00.000Z"
    assert parse_ts("2026-01-01T00:00:05.123Z") == 1_767_225_605_123
    for bad in ("2026-13-01T00:00:00.000Z", "2026-02-30T00:00:00.000Z", "yesterday", 5, None):
        assert parse_ts(bad) is None


def test_the_mix_of_kinds(events):
    kinds = Counter(e.kind for e in events)
    assert set(kinds) == set(KINDS)
    n = SPEC.events
    assert abs(kinds["malformed"] - n * SPEC.malformed_fraction) < 0.01 * n
    assert abs(kinds["late"] - n * SPEC.late_fraction) < 0.015 * n
    # Too-late events exist only from round 2 on (round 1 has nothing to be late for).
    assert {e.round for e in events if e.kind == "too_late"} == {2}
    assert abs(kinds["too_late"] - n / 2 * SPEC.too_late_fraction) < 0.01 * n
    reasons = Counter(e.reason for e in events if e.kind == "malformed")
    assert set(reasons) == set(MALFORMED_REASONS)
    assert all(e.reason is None for e in events if e.kind != "malformed")


def test_each_malformed_event_has_exactly_its_reason(events):
    for event in events:
        reason, _, ts = classify(event.value)
        assert reason == event.reason, event
        assert (ts is None) == (event.kind == "malformed")


def test_lateness_relative_to_the_stream_progress(events):
    step = 60_000 / SPEC.events_per_minute
    for event in events:
        if event.ts_ms is None:
            continue
        behind = SPEC.start_ms + int(event.index * step) - event.ts_ms
        if event.kind == "on_time":
            assert 0 <= behind <= 2_000
        elif event.kind == "late":
            assert 30_000 <= behind <= 90_000
            assert behind < WATERMARK_DELAY_MS - 30_000  # always within the watermark


def test_too_late_events_end_before_the_previous_rounds_watermark(events):
    round_one_max = max(e.ts_ms for e in events if e.round == 1 and e.ts_ms is not None)
    watermark = round_one_max - WATERMARK_DELAY_MS
    too_late = [e for e in events if e.kind == "too_late"]
    assert too_late
    for event in too_late:
        window_end = event.ts_ms - event.ts_ms % WINDOW_MS + WINDOW_MS
        assert window_end <= watermark - 1_000


def test_one_round_has_no_too_late_events():
    events = list(generate_events(GeneratorSpec(events=2_000, rounds=1, too_late_fraction=0.2)))
    assert not [e for e in events if e.kind == "too_late"]


def test_bad_specs_are_refused():
    with pytest.raises(ValueError):
        GeneratorSpec(late_fraction=0.6, malformed_fraction=0.5)
    with pytest.raises(ValueError):
        GeneratorSpec(rounds=0)


def test_cli_options_make_the_spec():
    args = build_parser().parse_args(
        [
            "--bootstrap-server",
            "h:1",
            "--events",
            "10",
            "--seed",
            "3",
            "--start",
            "2026-11-22T08:00:00Z",
            "--rounds",
            "1",
            "--malformed-fraction",
            "0.5",
        ]
    )
    spec = spec_from_args(args)
    assert (spec.events, spec.seed, spec.rounds, spec.malformed_fraction) == (10, 3, 1, 0.5)
    assert format_ts(spec.start_ms) == "2026-11-22T08:00:00.000Z"
