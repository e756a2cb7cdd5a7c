"""Property: cleaning any keyed history leaves exactly the latest value per key.

For random sequences of ``(key, value | None)`` appended as single-record batches across
many rolled segments: after a round, below the first uncleanable offset each key's last
record remains (tombstones included, since their horizon is new), offsets are a strictly
increasing subset of the originals, and every record at or above the first uncleanable
offset is unchanged. Once ``delete.retention.ms`` has passed, another round removes the
tombstones and nothing else.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from franz.clock import ManualClock
from franz.storage.cleaner import LogCleaner
from tests.unit.storage.conftest import CLOCK_START_MS
from tests.unit.storage.test_cleaner import (
    DELETE_RETENTION_MS,
    KV,
    append_each,
    clean_round,
    fast_config,
    open_log,
    oracle,
    rows,
)

_keys = st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"f", b"g"])
_values = st.one_of(st.none(), st.binary(min_size=0, max_size=40))
_history = st.lists(st.tuples(_keys, _values), min_size=1, max_size=120)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=_history)
def test_cleaning_keeps_exactly_the_latest_value_per_key(history: list[KV]) -> None:
    clock = ManualClock(CLOCK_START_MS)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        cleaner = LogCleaner([directory], clock, fast_config())
        cleaner.startup()
        lg = open_log(directory, clock)
        try:
            original = append_each(lg, clock, history)
            uncleanable = lg.active_segment.base_offset
            cleaned = clean_round(cleaner, lg)
            assert cleaned == (uncleanable > 0)
            after = rows(lg)
            assert after == oracle(original, uncleanable, drop_tombstones=False)
            offsets = [r[0] for r in after]
            assert offsets == sorted(set(offsets))
            assert set(offsets) <= {r[0] for r in original}
            assert [r for r in after if r[0] >= uncleanable] == [
                r for r in original if r[0] >= uncleanable
            ]
            assert lg.log_end_offset == original[-1][0] + 1

            clock.advance(DELETE_RETENTION_MS)
            has_tombstones = any(v is None for o, _, v in after if o < uncleanable)
            assert clean_round(cleaner, lg) == has_tombstones
            assert rows(lg) == oracle(original, uncleanable, drop_tombstones=True)
        finally:
            cleaner.shutdown()
            lg.close()
