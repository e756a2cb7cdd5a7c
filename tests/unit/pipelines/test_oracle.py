"""``pipelines.oracle``: validation and the watermark rules the Spark jobs must follow."""

from __future__ import annotations

import json

from pipelines.common import WINDOW_MS
from pipelines.events import GeneratorSpec, format_ts, generate_events
from pipelines.oracle import classify, expected_results

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MIN = 60_000


def event(ts_ms: int, page: str = "/", event_type: str = "page_view", **extra) -> bytes:
    fields = {
        "event_id": "e",
        "event_type": event_type,
        "ts": format_ts(ts_ms),
        "user_id": "u1",
        "session_id": "s1",
        "page": page,
        **extra,
    }
    return json.dumps(fields).encode()


def test_classify_reasons_in_order():
    assert classify(event(T0))[0] is None
    assert classify(b'{"event_id": "e"')[0] == "invalid_json"
    assert classify(b"\xff\xfe{}")[0] == "invalid_json"
    assert classify(b"[1, 2]")[0] == "invalid_json"
    assert classify(b"GET / HTTP/1.1")[0] == "invalid_json"
    assert classify(b"{}")[0] == "missing_field"
    fields = json.loads(event(T0))
    fields["page"] = None
    assert classify(json.dumps(fields).encode())[0] == "missing_field"
    assert classify(event(T0, event_type="click"))[0] == "missing_field"  # no element
    assert classify(event(T0, event_type="click", element="banner"))[0] is None
    assert classify(event(T0, event_type="search", query="x"))[0] is None
    assert classify(event(T0, event_type="scroll"))[0] == "unknown_event_type"
    fields = json.loads(event(T0))
    fields["ts"] = "2026-01-01 00:00:00"
    assert classify(json.dumps(fields).encode())[0] == "bad_timestamp"
    fields["event_type"] = "PageView"  # the type is judged before the timestamp
    assert classify(json.dumps(fields).encode())[0] == "unknown_event_type"


def test_watermark_as_spark_4_3_applies_it():
    """The case measured with Spark 4.3 (file source, availableNow, a restart per run)."""
    runs = [
        [event(T0 + m * MIN + 30_000, "A") for m in range(10)],  # max 00:09:30 -> wm 00:07:30
        [
            event(T0 + 6 * MIN + 59_000, "S"),  # window ends 00:07:00 <= 00:07:30: dropped
            event(T0 + 7 * MIN + 10_000, "K"),  # window ends 00:08:00: counted
            event(T0 + 7 * MIN + 29_000, "A"),
            *[event(T0 + m * MIN + 30_000, "A") for m in range(10, 15)],  # wm 00:12:30
        ],
        [event(T0 + 16 * MIN, "A")],  # wm 00:14:00
        [event(T0 + 13 * MIN + 30_000, "E")],  # window ends 00:14:00 == wm: dropped
    ]
    expected = expected_results(runs)
    assert expected.watermarks == [
        T0 + 7 * MIN + 30_000,
        T0 + 12 * MIN + 30_000,
        T0 + 14 * MIN,
        T0 + 14 * MIN,
    ]
    assert [(run, json.loads(v)["page"]) for run, v in expected.dropped] == [(2, "S"), (4, "E")]
    a = {(T0 + m * MIN, "A", "page_view"): 1 for m in range(14) if m != 7}
    assert expected.windows == {
        **a,
        (T0 + 7 * MIN, "A", "page_view"): 2,
        (T0 + 7 * MIN, "K", "page_view"): 1,
    }
    assert expected.pending == {
        (T0 + 14 * MIN, "A", "page_view"): 1,
        (T0 + 16 * MIN, "A", "page_view"): 1,
    }


def test_nothing_is_final_before_the_first_run_ends():
    expected = expected_results([[event(T0), event(T0 + 5 * MIN)]])
    assert expected.windows == {(T0, "/", "page_view"): 1}  # ends 00:01 <= wm 00:03
    assert expected.pending == {(T0 + 5 * MIN, "/", "page_view"): 1}
    assert expected_results([]).watermark is None


def test_malformed_records_never_move_the_watermark():
    bad_type = json.loads(event(T0 + 60 * MIN))
    bad_type["event_type"] = "scroll"
    expected = expected_results([[event(T0 + 5 * MIN), json.dumps(bad_type).encode()]])
    assert expected.watermark == T0 + 3 * MIN
    assert expected.reasons == {"unknown_event_type": 1}


def test_generated_stream_drops_exactly_the_too_late_events():
    spec = GeneratorSpec(events=5_000, seed=3, events_per_minute=250, rounds=3)
    events = list(generate_events(spec))
    runs = [[e.value for e in events if e.round == r] for r in (1, 2, 3)]
    expected = expected_results(runs)
    too_late = [e for e in events if e.kind == "too_late"]
    assert len(too_late) > 10
    assert sorted(v for _, v in expected.dropped) == sorted(e.value for e in too_late)
    assert {run for run, _ in expected.dropped} == {2, 3}
    assert expected.valid == sum(1 for e in events if e.kind != "malformed")
    assert sorted(expected.dead_letters) == sorted(
        (e.value, e.reason) for e in events if e.kind == "malformed"
    )
    # Everything valid is counted exactly once: final windows, open windows, or dropped.
    counted = sum(expected.windows.values()) + sum(expected.pending.values())
    assert counted + len(expected.dropped) == expected.valid
    assert all(start + WINDOW_MS <= expected.watermark for start, _, _ in expected.windows)
    assert all(start + WINDOW_MS > expected.watermark for start, _, _ in expected.pending)
    max_ts = max(e.ts_ms for e in events if e.ts_ms is not None)
    assert expected.watermark == max_ts - spec.watermark_delay_ms


def test_independent_of_the_order_within_a_run():
    spec = GeneratorSpec(events=2_000, seed=5, events_per_minute=200)
    events = list(generate_events(spec))
    runs = [[e.value for e in events if e.round == r] for r in (1, 2)]
    reversed_runs = [list(reversed(run)) for run in runs]
    assert expected_results(runs).windows == expected_results(reversed_runs).windows
