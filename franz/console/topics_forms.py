"""Pure helpers of the console's topic pages: reading form input and shaping rows.

No I/O here (``tests/unit/console/test_topics_forms.py``). Form input arrives as strings;
a bad value is a ``FormError`` whose text the page shows in its error banner, before any
request reaches the cluster.

Kafka's facts kept here:

* Internal topics are Kafka's ``Topic.INTERNAL_TOPICS`` (``__consumer_offsets``,
  ``__transaction_state``): the topics Metadata marks ``is_internal``. The list hides
  them unless ``?internal=1``, as AKHQ and kafka-ui do by default.
* Deleting records "up to the high watermark" is offset ``-1`` in DeleteRecords
  (``DeleteRecordsRequest.HIGH_WATERMARK``), what ``kafka-delete-records.sh`` sends for
  ``"offset": -1`` and librdkafka for ``OFFSET_END``.
* A group's lag on a partition is high watermark minus committed offset, as Kafka's
  ``ConsumerGroupCommand.getLag`` computes it: not clamped at 0, unknown (``-``) when
  either is; a topic's is the sum over the partitions the group committed.
* A topic's replication factor is the replica count of its first partition (Kafka's
  ``TopicCommand`` describes it so).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

from franz.admin.client import INTERNAL_TOPICS

__all__ = [
    "DEFAULT_PER_PAGE",
    "HIGH_WATERMARK",
    "INTERNAL_TOPICS",
    "PER_PAGE_CHOICES",
    "FormError",
    "Paging",
    "filter_topics",
    "parse_config_lines",
    "parse_int",
    "parse_paging",
    "parse_record_deletion",
    "total_lag",
]

#: DeleteRecords' offset meaning "the partition's high watermark".
HIGH_WATERMARK: Final = -1


class FormError(ValueError):
    """A form field the console refuses before asking the cluster (the banner's text)."""


def parse_int(text: str | None, field: str, *, minimum: int | None = None) -> int:
    """``text`` as an int, at least ``minimum``; ``FormError`` naming ``field`` otherwise."""
    value = (text or "").strip()
    try:
        number = int(value)
    except ValueError:
        raise FormError(f"{field} must be a whole number, not {value!r}") from None
    if minimum is not None and number < minimum:
        raise FormError(f"{field} must be at least {minimum}, not {number}")
    return number


def parse_config_lines(text: str | None) -> dict[str, str]:
    """``key=value`` lines (blank lines and ``#`` comments skipped; the value may contain
    ``=``; spaces around key and value trimmed) as a dict; a line without ``=`` or with an
    empty key, or a key given twice, is a ``FormError``."""
    configs: dict[str, str] = {}
    for number, raw in enumerate((text or "").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key:
            raise FormError(f"config line {number} is not key=value: {line!r}")
        if key in configs:
            raise FormError(f"config {key} is given twice")
        configs[key] = value.strip()
    return configs


def parse_record_deletion(
    partition: str | None, offset: str | None, partitions: Sequence[int]
) -> dict[int, int]:
    """The delete-records form as ``{partition: offset}``: ``partition`` empty or ``all``
    means every partition of ``partitions``; ``offset`` empty or ``all`` means up to the
    high watermark (``HIGH_WATERMARK``), else records before that offset (>= 0)."""
    chosen = (partition or "").strip().lower()
    if chosen in ("", "all"):
        targets = list(partitions)
    else:
        number = parse_int(chosen, "partition", minimum=0)
        if number not in partitions:
            raise FormError(f"the topic has no partition {number}")
        targets = [number]
    before = (offset or "").strip().lower()
    value = HIGH_WATERMARK if before in ("", "all") else parse_int(before, "offset", minimum=0)
    return {p: value for p in targets}


class _Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=_Named)


def filter_topics(rows: Iterable[N], query: str | None, internal: bool) -> list[N]:
    """Rows whose name contains ``query`` (case-insensitive), internal topics only when
    ``internal``, sorted by name."""
    needle = (query or "").strip().lower()
    return sorted(
        (
            r
            for r in rows
            if (internal or r.name not in INTERNAL_TOPICS) and needle in r.name.lower()
        ),
        key=lambda r: r.name,
    )


#: Rows per page of the topic list (``?per_page=``; ``all`` shows every match).
PER_PAGE_CHOICES: Final = (25, 100, 500)
DEFAULT_PER_PAGE: Final = 100


@dataclass(frozen=True)
class Paging:
    """Which slice of the matching topics a list page shows: ``page`` (1-based) of
    ``per_page`` rows (None: all)."""

    page: int
    per_page: int | None

    def window(self, matched: int) -> tuple[int, int]:
        """(start, stop) of this page among ``matched`` sorted names (clamped: a page past
        the end shows the last one)."""
        if self.per_page is None:
            return 0, matched
        last = max(1, -(-matched // self.per_page))
        start = (min(self.page, last) - 1) * self.per_page
        return start, min(matched, start + self.per_page)

    def pages(self, matched: int) -> int:
        return 1 if self.per_page is None else max(1, -(-matched // self.per_page))


def parse_paging(page: str | None, per_page: str | None) -> Paging:
    """``?page=&per_page=`` of the topic list; anything unreadable falls back to the first
    page of ``DEFAULT_PER_PAGE`` (a list page never fails on its query string)."""
    size: int | None = DEFAULT_PER_PAGE
    if (per_page or "").strip().lower() == "all":
        size = None
    elif (per_page or "").strip().isdigit() and int(per_page or 0) > 0:
        size = min(int(per_page or 0), 10_000)
    text = (page or "").strip()
    number = int(text) if text.isdigit() and int(text) > 0 else 1
    return Paging(number, size)


def total_lag(committed: Mapping[int, int], high: Mapping[int, int | None]) -> int | None:
    """Sum over ``committed`` (partition -> committed offset) of high watermark minus
    committed offset; None when a partition's high watermark is unknown."""
    lags = [high.get(p) for p in committed]
    if any(hw is None for hw in lags):
        return None
    return sum(int(high[p] or 0) - offset for p, offset in committed.items())
