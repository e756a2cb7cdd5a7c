"""The event generator: realistic user-activity events for ``user-activity``, some of them late
and some malformed, deterministic given the seed.

Usage::

    python -m pipelines.events --bootstrap-server 127.0.0.1:9092 [--topic user-activity]
        [--events 20000] [--rounds 2] [--round N] [--rate -1] [--seed 42] [--start ISO|now]
        [--events-per-minute 1000] [--late-fraction 0.05] [--too-late-fraction 0.01]
        [--malformed-fraction 0.02] [--users 2000]

The event (a JSON object, UTF-8, keyed by ``user_id`` so one user's events stay ordered in one
partition)::

    {"event_id": "<uuid4>", "event_type": "page_view" | "click" | "search",
     "ts": "2026-01-01T00:00:05.123Z",          # event time, ISO-8601 UTC with milliseconds
     "user_id": "u<6 digits>", "session_id": "s-<12 hex>", "page": "/products/1012",
     "element": "add-to-cart",                  # clicks only (required for them)
     "query": "rain jacket",                    # searches only (required for them)
     "referrer": "https://www.google.com/",     # optional
     "user_agent": "Mozilla/5.0 ..."}           # optional

**Time.** Event time is simulated, not the wall clock: event ``i`` of the stream happens at
``start + i * 60 s / events_per_minute`` (the stream's *progress*). ``--rate`` only throttles
how fast the records are produced. An **on-time** event is 0-2 s behind the progress (client
and network delay); a **late** one 30-90 s behind: both are within the streaming job's 2-minute
watermark and always counted.

**Rounds.** The events are produced in ``--rounds`` rounds, the streaming job running between
them (as a periodic ``availableNow`` job does). From round 2 on, some events are **too late**:
stragglers from devices that were offline, whose one-minute window ended before the watermark
the job reached after the previous rounds (``max event time so far - 2 min``), by at least a
second. Spark's aggregation drops such an event whatever the micro-batches of the later run
are, because the watermark never goes back: that makes the drop deterministic and countable.
In round 1 there is nothing to be late for, so that share is produced on time.

**Malformed** events carry exactly one defect, so their dead-letter reason is unambiguous:
``invalid_json`` (truncated, plain text, a JSON array), ``missing_field`` (a required field
absent or null; ``element`` for a click, ``query`` for a search), ``unknown_event_type``,
``bad_timestamp`` (not ``yyyy-MM-dd'T'HH:mm:ss.SSSZ``, or no such date).

``generate_events(spec)`` is the pure core (no I/O): it yields :class:`Event` records with the
exact bytes to produce and the generator's own label, so tests can recompute everything.
"""

from __future__ import annotations

import argparse
import bisect
import datetime as dt
import itertools
import json
import random
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from pipelines.common import EVENTS_TOPIC, WATERMARK_DELAY_MS, WINDOW_MS

__all__ = [
    "EVENT_TYPES",
    "KINDS",
    "MALFORMED_REASONS",
    "REQUIRED_FIELDS",
    "TYPE_FIELDS",
    "Event",
    "GeneratorSpec",
    "ProduceResult",
    "format_ts",
    "generate_events",
    "main",
    "produce",
    "round_sizes",
]

EVENT_TYPES: Final = ("page_view", "click", "search")
#: Every event has these (non-null); ``TYPE_FIELDS`` adds one per type.
REQUIRED_FIELDS: Final = ("event_id", "event_type", "ts", "user_id", "session_id", "page")
TYPE_FIELDS: Final = {"click": "element", "search": "query"}
MALFORMED_REASONS: Final = ("invalid_json", "missing_field", "unknown_event_type", "bad_timestamp")
#: The generator's labels: ``too_late`` events are valid but beyond the watermark.
KINDS: Final = ("on_time", "late", "too_late", "malformed")

#: The default simulated start, fixed so that a seed alone fixes every byte.
DEFAULT_START_MS: Final = 1_767_225_600_000  # 2026-01-01T00:00:00.000Z
SESSION_GAP_MS: Final = 30 * 60_000
ON_TIME_DELAY_MS: Final = (0, 2_000)
LATE_DELAY_MS: Final = (30_000, 90_000)
#: How far back, before the previous watermark, a too-late straggler may be.
TOO_LATE_SPREAD_MS: Final = 10 * 60_000

_PRODUCT_IDS: Final = tuple(range(1001, 1041))
_BLOG_SLUGS: Final = (
    "how-we-ship-in-a-day",
    "choosing-running-shoes",
    "spring-collection-2026",
    "care-guide-merino",
    "behind-the-scenes-warehouse",
    "gift-ideas-under-50",
    "sustainable-packaging",
    "size-guide",
)
#: (page or page family, weight): the site map and how popular each part is.
_PAGES: Final = (
    ("/", 18),
    ("/products", 10),
    ("/products/<id>", 35),
    ("/cart", 7),
    ("/checkout", 3),
    ("/search", 10),
    ("/blog", 4),
    ("/blog/<slug>", 8),
    ("/about", 2),
    ("/account", 3),
)
#: page_view, click, search (cumulative weights 70 / 20 / 10).
_TYPE_CUMULATIVE: Final = [70.0, 90.0, 100.0]
_ELEMENTS: Final = {
    "product": ("add-to-cart", "buy-now", "image-gallery", "reviews-tab", "size-picker"),
    "cart": ("checkout-button", "remove-item", "continue-shopping", "apply-coupon"),
    "other": ("nav-home", "nav-cart", "search-box", "banner", "footer-link", "read-more"),
}
_QUERIES: Final = (
    "running shoes",
    "rain jacket",
    "merino socks",
    "gift card",
    "wireless headphones",
    "café table",
    "größe 42",
    "tent 2 person",
    "yoga mat",
    "usb-c cable",
    "北欧 chair",
    "return policy",
)
_REFERRERS: Final = (
    "https://www.google.com/",
    "https://duckduckgo.com/",
    "https://news.ycombinator.com/",
    "https://t.co/",
    "https://www.bing.com/",
)
_USER_AGENTS: Final = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/18.1 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Mobile Safari/537.36",
)
_UNKNOWN_TYPES: Final = ("purchase", "scroll", "PageView", "page-view", "add_to_cart")


@dataclass(frozen=True)
class GeneratorSpec:
    """Everything that determines the generated stream (same spec, same bytes)."""

    events: int = 20_000
    seed: int = 42
    rounds: int = 2
    start_ms: int = DEFAULT_START_MS
    events_per_minute: int = 1_000
    late_fraction: float = 0.05
    too_late_fraction: float = 0.01
    malformed_fraction: float = 0.02
    users: int = 2_000
    watermark_delay_ms: int = WATERMARK_DELAY_MS

    def __post_init__(self) -> None:
        if self.events < 0 or self.rounds < 1 or self.users < 1 or self.events_per_minute < 1:
            raise ValueError("events >= 0, rounds >= 1, users >= 1, events_per_minute >= 1")
        fractions = (self.late_fraction, self.too_late_fraction, self.malformed_fraction)
        if any(f < 0 for f in fractions) or sum(fractions) > 1:
            raise ValueError("the late, too-late and malformed fractions must sum to at most 1")


@dataclass(frozen=True, slots=True)
class Event:
    """One generated record: the bytes to produce and what the generator meant by them.

    ``kind`` is one of :data:`KINDS`; ``reason`` the dead-letter reason of a malformed event;
    ``ts_ms`` the event time of a valid one (None for malformed events)."""

    index: int
    round: int
    key: bytes
    value: bytes
    kind: str
    reason: str | None = None
    ts_ms: int | None = None


def format_ts(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds: ``2026-01-01T00:00:05.123Z``."""
    moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


def round_sizes(spec: GeneratorSpec) -> list[int]:
    """How many events each round has (as equal as possible, the first rounds one more)."""
    base, extra = divmod(spec.events, spec.rounds)
    return [base + (1 if r < extra else 0) for r in range(spec.rounds)]


def _zipf_cumulative(n: int, exponent: float) -> list[float]:
    return list(itertools.accumulate(1.0 / (rank + 1) ** exponent for rank in range(n)))


@dataclass
class _World:
    """The simulated site: users (Zipf-popular), their sessions, products (Zipf-popular)."""

    rng: random.Random
    users: list[str]
    user_agents: list[str]
    user_weights: list[float]
    product_weights: list[float] = field(default_factory=lambda: _zipf_cumulative(40, 1.0))
    page_weights: list[float] = field(
        default_factory=lambda: list(itertools.accumulate(w for _, w in _PAGES))
    )
    sessions: dict[int, tuple[str, int]] = field(default_factory=dict)

    @classmethod
    def create(cls, rng: random.Random, users: int) -> _World:
        ids = [f"u{n}" for n in rng.sample(range(100_000, 1_000_000), users)]
        agents = [rng.choice(_USER_AGENTS) for _ in range(users)]
        return cls(rng, ids, agents, _zipf_cumulative(users, 0.8))

    def pick(self, cumulative: list[float]) -> int:
        return bisect.bisect_left(cumulative, self.rng.random() * cumulative[-1])

    def session(self, user: int, clock_ms: int) -> str:
        current = self.sessions.get(user)
        if current is None or clock_ms - current[1] > SESSION_GAP_MS or self.rng.random() < 0.02:
            current = (f"s-{self.rng.getrandbits(48):012x}", clock_ms)
        self.sessions[user] = (current[0], clock_ms)
        return current[0]

    def page(self) -> str:
        family = _PAGES[self.pick(self.page_weights)][0]
        if family == "/products/<id>":
            return f"/products/{_PRODUCT_IDS[self.pick(self.product_weights)]}"
        if family == "/blog/<slug>":
            return f"/blog/{self.rng.choice(_BLOG_SLUGS)}"
        return family

    def event(self, ts_ms: int, clock_ms: int) -> tuple[str, dict[str, Any]]:
        """A valid event (user id, fields in the order they are serialised)."""
        rng = self.rng
        user = self.pick(self.user_weights)
        event_type = EVENT_TYPES[self.pick(_TYPE_CUMULATIVE)]
        page = self.page()
        if event_type == "search" and rng.random() < 0.6:
            page = "/search"
        fields: dict[str, Any] = {
            "event_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "event_type": event_type,
            "ts": format_ts(ts_ms),
            "user_id": self.users[user],
            "session_id": self.session(user, clock_ms),
            "page": page,
        }
        if event_type == "click":
            family = (
                "product"
                if page.startswith("/products/")
                else "cart"
                if page == "/cart"
                else "other"
            )
            fields["element"] = rng.choice(_ELEMENTS[family])
        elif event_type == "search":
            fields["query"] = rng.choice(_QUERIES)
        if event_type == "page_view" and rng.random() < 0.5:
            fields["referrer"] = rng.choice(_REFERRERS)
        if rng.random() < 0.9:
            fields["user_agent"] = self.user_agents[user]
        return self.users[user], fields


def _encode(fields: dict[str, Any]) -> bytes:
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode()


def _malform(rng: random.Random, fields: dict[str, Any], ts_ms: int) -> tuple[str, bytes]:
    """One defect, chosen at random, applied to a valid event: (reason, value bytes)."""
    reason = rng.choice(MALFORMED_REASONS)
    if reason == "invalid_json":
        whole = _encode(fields)
        variant = rng.randrange(3)
        if variant == 0:  # cut short: a strict prefix of an object never closes it
            return reason, whole[: rng.randrange(1, len(whole) - 1)]
        if variant == 1:  # a log line sent to the wrong topic
            return reason, f"GET {fields['page']} HTTP/1.1 200 {fields['ts']}".encode()
        return reason, b"[" + whole + b"]"  # valid JSON, but not an object
    if reason == "missing_field":
        required = [*REQUIRED_FIELDS]
        if fields["event_type"] in TYPE_FIELDS:
            required.append(TYPE_FIELDS[fields["event_type"]])
        name = rng.choice(required)
        if rng.random() < 0.25:
            fields[name] = None
        else:
            del fields[name]
        return reason, _encode(fields)
    if reason == "unknown_event_type":
        fields["event_type"] = rng.choice(_UNKNOWN_TYPES)
        return reason, _encode(fields)
    text = format_ts(ts_ms)
    bad: Any = rng.choice(
        (
            "yesterday",
            text[:5] + "13" + text[7:],  # month 13
            text[:5] + "02-30" + text[10:],  # no such day
            text[:10] + " " + text[11:19],  # SQL style, no 'T', no millis, no zone
            str(ts_ms),  # epoch millis as a string
            ts_ms,  # epoch millis as a number
        )
    )
    fields["ts"] = bad
    return reason, _encode(fields)


def generate_events(spec: GeneratorSpec) -> Iterator[Event]:
    """The stream, in production order: pure, deterministic given ``spec``.

    Valid events' ``ts_ms`` drive the watermark the generator tracks per round (only valid
    events reach Spark's ``withWatermark``: malformed ones go to the dead-letter topic first).
    """
    rng = random.Random(spec.seed)
    world = _World.create(rng, spec.users)
    step = 60_000 / spec.events_per_minute
    malformed_below = spec.malformed_fraction
    too_late_below = malformed_below + spec.too_late_fraction
    late_below = too_late_below + spec.late_fraction
    max_valid_ts: int | None = None
    watermark: int | None = None  # after the previous rounds, as the streaming job has it
    index = 0
    for round_no, size in enumerate(round_sizes(spec)):
        if max_valid_ts is not None:
            candidate = max_valid_ts - spec.watermark_delay_ms
            watermark = candidate if watermark is None else max(watermark, candidate)
        for _ in range(size):
            clock = spec.start_ms + int(index * step)
            draw = rng.random()
            if draw < malformed_below:
                kind = "malformed"
                ts = clock - rng.randint(*ON_TIME_DELAY_MS)
            elif draw < too_late_below and watermark is not None:
                kind = "too_late"
                # The window [floor(ts), floor(ts) + 1 min) ends at most ts + 1 min, which is
                # at least a second before the watermark: Spark drops it (end <= watermark).
                latest = watermark - WINDOW_MS - 1_000
                ts = rng.randint(latest - TOO_LATE_SPREAD_MS, latest)
            elif draw < late_below and draw >= too_late_below:
                kind = "late"
                ts = clock - rng.randint(*LATE_DELAY_MS)
            else:
                kind = "on_time"
                ts = clock - rng.randint(*ON_TIME_DELAY_MS)
            user_id, fields = world.event(ts, clock)
            if kind == "malformed":
                reason, value = _malform(rng, fields, ts)
                yield Event(index, round_no + 1, user_id.encode(), value, kind, reason, None)
            else:
                max_valid_ts = ts if max_valid_ts is None else max(max_valid_ts, ts)
                yield Event(index, round_no + 1, user_id.encode(), _encode(fields), kind, None, ts)
            index += 1


# -- producing ---------------------------------------------------------------------------------


@dataclass
class ProduceResult:
    """What ``produce`` sent: per-kind and per-reason counts, and delivery failures."""

    sent: int = 0
    failed: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        kinds = ", ".join(f"{kind} {self.kinds.get(kind, 0)}" for kind in KINDS)
        reasons = ", ".join(f"{r} {self.reasons.get(r, 0)}" for r in MALFORMED_REASONS)
        return f"{self.sent} events produced ({kinds}; malformed: {reasons}), {self.failed} failed"


def produce(
    events: Iterable[Event],
    bootstrap: str,
    topic: str = EVENTS_TOPIC,
    *,
    rate: float = -1,
    config: dict[str, Any] | None = None,
    report: Callable[[str], object] | None = None,
    timeout: float = 60.0,
) -> ProduceResult:
    """Produce ``events`` in order with an idempotent producer (so retries neither reorder nor
    duplicate a partition's records) and Kafka's default partitioner (murmur2 of the key).

    ``rate`` > 0 throttles to that many records/s (Kafka's ``ThroughputThrottler``).
    ``report`` receives producer-perf-test's window lines every 5 s and its total line."""
    from confluent_kafka import Producer

    from franz.admin.perf import ProducerStats, ThroughputThrottler

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "partitioner": "murmur2_random",
            "log_level": 2,
            **(config or {}),
        }
    )
    events = list(events)
    start_ms = int(time.time() * 1000)
    stats = ProducerStats(len(events), start_ms)
    throttler = ThroughputThrottler(rate if rate != 0 else -1, start_ms)
    result = ProduceResult()

    def delivered(sent_ms: int, size: int, err: Any, _msg: Any) -> None:
        if err is not None:
            result.failed += 1
            if len(result.errors) < 10:
                result.errors.append(str(err))
            return
        stats.record(max(0, int(time.time() * 1000) - sent_ms), size)

    for number, event in enumerate(events):
        now_ms = int(time.time() * 1000)
        while True:
            try:
                producer.produce(
                    topic,
                    event.value,
                    event.key,
                    on_delivery=partial(delivered, now_ms, len(event.value)),
                )
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
        result.sent += 1
        result.kinds[event.kind] += 1
        if event.reason is not None:
            result.reasons[event.reason] += 1
        if throttler.should_throttle(number + 1, now_ms):
            throttler.throttle()
        if report is not None and stats.window_due(now_ms):
            report(stats.window_line(now_ms))
    remaining = producer.flush(timeout)
    if remaining:
        result.failed += remaining
        result.errors.append(f"{remaining} record(s) not delivered within {timeout} s")
    if report is not None:
        report(stats.total_line(int(time.time() * 1000)))
    return result


def _parse_start(text: str) -> int:
    if text == "now":
        return int(time.time() * 1000) // WINDOW_MS * WINDOW_MS
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.events",
        description="Produce realistic user-activity events (some late, some malformed) to a "
        "topic, deterministically given the seed.",
    )
    parser.add_argument("--bootstrap-server", required=True, help="HOST:PORT of a broker")
    parser.add_argument("--topic", default=EVENTS_TOPIC)
    parser.add_argument("--events", type=int, default=GeneratorSpec.events, help="in all rounds")
    parser.add_argument("--rounds", type=int, default=GeneratorSpec.rounds)
    parser.add_argument(
        "--round",
        type=int,
        default=None,
        help="produce only this round (1-based) of the stream; default: every round",
    )
    parser.add_argument("--rate", type=float, default=-1, help="records/s; -1: no throttling")
    parser.add_argument("--seed", type=int, default=GeneratorSpec.seed)
    parser.add_argument("--start", default=format_ts(DEFAULT_START_MS), help="ISO-8601 or 'now'")
    parser.add_argument("--events-per-minute", type=int, default=GeneratorSpec.events_per_minute)
    parser.add_argument("--late-fraction", type=float, default=GeneratorSpec.late_fraction)
    parser.add_argument("--too-late-fraction", type=float, default=GeneratorSpec.too_late_fraction)
    parser.add_argument(
        "--malformed-fraction", type=float, default=GeneratorSpec.malformed_fraction
    )
    parser.add_argument("--users", type=int, default=GeneratorSpec.users)
    return parser


def spec_from_args(args: argparse.Namespace) -> GeneratorSpec:
    return GeneratorSpec(
        events=args.events,
        seed=args.seed,
        rounds=args.rounds,
        start_ms=_parse_start(args.start),
        events_per_minute=args.events_per_minute,
        late_fraction=args.late_fraction,
        too_late_fraction=args.too_late_fraction,
        malformed_fraction=args.malformed_fraction,
        users=args.users,
    )


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        spec = spec_from_args(args)
    except ValueError as exc:
        parser.error(str(exc))
    if args.round is not None and not 1 <= args.round <= spec.rounds:
        parser.error(f"--round must be between 1 and {spec.rounds}")
    events = [e for e in generate_events(spec) if args.round is None or e.round == args.round]
    result = produce(events, args.bootstrap_server, args.topic, rate=args.rate, report=print)
    print(result.summary())
    for error in result.errors:
        print(f"ERROR {error}", file=sys.stderr)
    return 1 if result.failed else 0


if __name__ == "__main__":
    sys.exit(main())
