"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-219): Kafka 3.9's ``ClientQuotaManager`` for
one quota type, sans-IO (values and times in, throttle times out).

Quota types (``QuotaType`` / the config key that bounds it, ``QuotaConfigs``):

    Produce  producer_byte_rate   bytes/s of Produce requests (their whole size)
    Fetch    consumer_byte_rate   bytes/s of Fetch responses to consumers
    Request  request_percentage   % of one thread's time spent on the client's requests

**Entities and precedence.** A quota is set on an entity, a user and/or a client id, each a
name or the default ``<default>``; the most specific one that matches a request's (user,
client id) applies, in Kafka's order (``ClientQuotaManager``'s ``DefaultQuotaCallback``)::

    1 /config/users/<user>/clients/<client-id>   5 /config/users/<default>/clients/<default>
    2 /config/users/<user>/clients/<default>     6 /config/users/<default>
    3 /config/users/<user>                       7 /config/clients/<client-id>
    4 /config/users/<default>/clients/<client-id> 8 /config/clients/<default>

**Metric tags** (``quotaMetricTags``): the entity's (user, client-id) pair that names the
rate sensor, so which requests share one measured rate: with only client-id quotas it is
("", client-id), with only user quotas (user, ""), with only (user, client-id) quotas
both; with quotas at several levels the tags of the level that matched. Which levels were
ever configured (``QuotaTypes`` bits) is remembered until the broker restarts, as in Kafka.

**Rate** (``Rate`` over ``SampledStat``): ``quota.window.num`` (11) samples of
``quota.window.size.seconds`` (1 s); a record goes to the current sample unless it started
a window ago, then to the next (round robin over ``num + 1`` samples, the extra one because
the oldest may still overlap the window; reset when reused); samples whose last event is
``num * size`` old are reset before measuring; the rate is the retained sum over the time
since the oldest sample started, counted as at least ``num - 1`` whole windows
(``Rate.windowSize``). A record that leaves the rate above the bound (``Quota.acceptable``:
``rate <= bound``) is a violation; the throttle time is ``(rate - bound) / bound *
window`` ms, rounded (``QuotaUtils.throttleTime``: the delay that brings the rate back
to the bound if nothing more is recorded), capped at one window for the request quota
(``QuotaUtils.boundedThrottleTime`` with ``ClientRequestQuotaManager.maxThrottleTimeMs``).

**Hot path.** ``enabled`` is false until some quota of this type was configured
(``quotasEnabled``); callers test it before anything else. Once enabled, a request's
(principal, client id) resolves through a dict to its sensor, or to None when no quota
applies (the unbounded static default): nothing is recorded then (Kafka records into
unbounded sensors for its metrics; Franz has no such metrics).

Differences: Kafka drops a sensor idle for an hour (``InactiveSensorExpirationTimeSeconds``);
Franz keeps the sensors of the tags that have a quota (one per client id under a
``clients/<default>`` quota) until the broker restarts. No ``byte-rate`` / ``throttle-time``
metrics are exported.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Final
from urllib.parse import quote, unquote

__all__ = [
    "CLIENT_ID",
    "DEFAULT_ENTITY",
    "USER",
    "ClientQuotaManager",
    "QuotaEntity",
    "QuotaRate",
    "desanitize",
    "java_double",
    "sanitize",
    "throttle_time_ms",
]

#: ``ConfigEntityName.Default`` / ``ZooKeeperInternals.DEFAULT_STRING``.
DEFAULT_ENTITY: Final = "<default>"
#: ``ClientQuotaEntity.USER`` / ``CLIENT_ID`` (the entity types of the quota APIs).
USER: Final = "user"
CLIENT_ID: Final = "client-id"

#: Bound on the (user, client id) resolution cache (entries are cheap to recompute).
_MAX_RESOLVED: Final = 100_000

_NO_QUOTAS: Final = 0
_CLIENT_ID_ENABLED: Final = 1
_USER_ENABLED: Final = 2
_USER_CLIENT_ID_ENABLED: Final = 4


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: ``URLEncoder`` (UTF-8; ``a-zA-Z0-9.-*_`` kept, space
    as ``+``) with ``*`` as ``%2A`` and ``+`` as ``%20``; how user names and client ids
    appear in znode paths (``/config/users/<sanitized>``)."""
    return quote(name, safe=".-_").replace("~", "%7E")


def desanitize(name: str) -> str:
    """Kafka's ``Sanitizer.desanitize`` (``URLDecoder``)."""
    return unquote(name)


@dataclass(frozen=True, slots=True)
class QuotaEntity:
    """A quota's entity (Kafka's ``KafkaQuotaEntity``): ``user`` and ``client_id`` each a
    plain name, ``DEFAULT_ENTITY``, or None when the entity has no such part."""

    user: str | None = None
    client_id: str | None = None

    @property
    def path(self) -> str:
        """The entity path under ``/config`` (Kafka's ``entity_path`` of a change
        notification): ``users/<u>``, ``clients/<c>``, ``users/<u>/clients/<c>``, names
        sanitized."""
        parts = []
        if self.user is not None:
            parts.append(f"users/{_path_name(self.user)}")
        if self.client_id is not None:
            parts.append(f"clients/{_path_name(self.client_id)}")
        return "/".join(parts)

    @classmethod
    def from_path(cls, path: str) -> QuotaEntity:
        """The inverse of ``path``; ValueError for a path that is not a quota entity."""
        parts = path.split("/")
        if len(parts) == 2 and parts[0] == "users":
            return cls(user=_plain_name(parts[1]))
        if len(parts) == 2 and parts[0] == "clients":
            return cls(client_id=_plain_name(parts[1]))
        if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
            return cls(user=_plain_name(parts[1]), client_id=_plain_name(parts[3]))
        raise ValueError(f"not a client quota entity path: {path!r}")


def _path_name(name: str) -> str:
    return name if name == DEFAULT_ENTITY else sanitize(name)


def _plain_name(name: str) -> str:
    return name if name == DEFAULT_ENTITY else desanitize(name)


class QuotaRate:
    """Kafka's ``Rate`` over a ``WindowedSum`` (module docstring), per second; times in ms,
    never going backwards."""

    __slots__ = ("_current", "_last_events", "_starts", "_values", "num_samples", "window_ms")

    def __init__(self, num_samples: int, window_ms: int) -> None:
        if num_samples < 1 or window_ms < 1:
            raise ValueError("a rate needs at least one sample of at least 1 ms")
        self.num_samples = num_samples
        self.window_ms = window_ms
        #: Parallel lists, one entry per sample: start, last event, summed value.
        self._starts: list[int] = []
        self._last_events: list[int] = []
        self._values: list[float] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        if not self._starts:
            self._new_sample(now_ms)
        i = self._current
        if now_ms - self._starts[i] >= self.window_ms:
            i = self._advance(now_ms)
        self._values[i] += value
        self._last_events[i] = now_ms

    def total(self) -> float:
        """The retained samples' sum (``WindowedSum.combine``; purge first: ``window_size``)."""
        return sum(self._values)

    def measure(self, now_ms: int) -> float:
        """Units per second at ``now_ms`` (``Rate.measure``)."""
        window_ms = self.window_size(now_ms)
        return self.total() / (window_ms / 1000.0)

    def window_size(self, now_ms: int) -> int:
        """``Rate.windowSize``: ms since the oldest sample started, at least ``num - 1``
        whole windows (purges obsolete samples first)."""
        expire_ms = self.num_samples * self.window_ms
        starts = self._starts
        for i, last in enumerate(self._last_events):
            if now_ms - last >= expire_ms:
                self._reset(i, now_ms)
        if not starts:
            self._new_sample(now_ms)
        elapsed = now_ms - min(starts)
        full_windows = elapsed // self.window_ms
        min_full_windows = self.num_samples - 1
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * self.window_ms
        return elapsed

    def _new_sample(self, now_ms: int) -> None:
        self._starts.append(now_ms)
        self._last_events.append(now_ms)
        self._values.append(0.0)

    def _reset(self, i: int, now_ms: int) -> None:
        self._starts[i] = now_ms
        self._last_events[i] = now_ms
        self._values[i] = 0.0

    def _advance(self, now_ms: int) -> int:
        self._current = i = (self._current + 1) % (self.num_samples + 1)
        if i >= len(self._starts):
            self._new_sample(now_ms)
        else:
            self._reset(i, now_ms)
        return i


def java_double(value: float) -> str:
    """Java's ``Double.toString``: plain between 1e-3 and 1e7, else ``d.dddE<n>``."""
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    text = "".join(str(d) for d in digits)
    assert isinstance(exponent, int)
    power = len(text) - 1 + exponent
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def throttle_time_ms(rate: float, bound: float, window_ms: int) -> int:
    """``ClientQuotaManager.throttleTime``: ``(rate - bound) / bound * window``, rounded
    half up as Java's ``Math.round``."""
    return math.floor((rate - bound) / bound * window_ms + 0.5)


@dataclass(slots=True)
class _Sensor:
    """One (user, client-id) tag pair's measured rate and its current bound."""

    rate: QuotaRate
    bound: float


class ClientQuotaManager:
    """One quota type's quotas and sensors (Kafka's ``ClientQuotaManager`` with its default
    callback). ``max_throttle_ms``: a cap on throttle times (the request quota's one window),
    None for none."""

    __slots__ = (
        "_overrides",
        "_resolved",
        "_sensors",
        "_types",
        "enabled",
        "max_throttle_ms",
        "num_samples",
        "window_ms",
    )

    def __init__(
        self, num_samples: int = 11, window_seconds: int = 1, max_throttle_ms: int | None = None
    ) -> None:
        self.num_samples = num_samples
        self.window_ms = window_seconds * 1000
        self.max_throttle_ms = max_throttle_ms
        #: entity -> bound (Kafka's ``overriddenQuotas``).
        self._overrides: dict[QuotaEntity, float] = {}
        self._types = _NO_QUOTAS
        #: (user, client id) -> its sensor, or None when no quota applies.
        self._resolved: dict[tuple[str, str], _Sensor | None] = {}
        #: metric tags -> sensor.
        self._sensors: dict[tuple[str, str], _Sensor] = {}
        #: Some quota of this type was configured (``quotasEnabled``): test before anything.
        self.enabled = False

    # -- configuration ----------------------------------------------------------------

    def update_quota(self, entity: QuotaEntity, bound: float | None) -> None:
        """Set (``bound``) or remove (None) the quota of ``entity`` (``updateQuota``): the
        level counts as configured from now on, even for a removal, as in Kafka."""
        if entity.user is not None:
            self._types |= (
                _USER_CLIENT_ID_ENABLED if entity.client_id is not None else _USER_ENABLED
            )
        elif entity.client_id is not None:
            self._types |= _CLIENT_ID_ENABLED
        if bound is None:
            self._overrides.pop(entity, None)
        else:
            self._overrides[entity] = bound
        self.enabled = self._types != _NO_QUOTAS
        self._resolved.clear()
        for tags, sensor in self._sensors.items():
            limit = self.quota_limit(*tags)
            if limit is not None:
                sensor.bound = limit

    def overrides(self) -> Mapping[QuotaEntity, float]:
        return self._overrides

    # -- resolution ---------------------------------------------------------------------

    def metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        """Kafka's ``quotaMetricTags(sanitizedUser, clientId)`` (module docstring)."""
        types = self._types
        if types in (_NO_QUOTAS, _CLIENT_ID_ENABLED):
            return ("", client_id)
        if types == _USER_ENABLED:
            return (user, "")
        if types == _USER_CLIENT_ID_ENABLED:
            return (user, client_id)
        has = self._overrides.__contains__
        if has(QuotaEntity(user, client_id)) or has(QuotaEntity(user, DEFAULT_ENTITY)):
            return (user, client_id)
        if has(QuotaEntity(user, None)):
            return (user, "")
        if has(QuotaEntity(DEFAULT_ENTITY, client_id)) or has(
            QuotaEntity(DEFAULT_ENTITY, DEFAULT_ENTITY)
        ):
            return (user, client_id)
        if has(QuotaEntity(DEFAULT_ENTITY, None)):
            return (user, "")
        return ("", client_id)

    def quota_limit(self, user: str, client_id: str) -> float | None:
        """Kafka's ``quotaLimit(metricTags)``: the bound of the tags' most specific entity,
        None when there is none (unbounded)."""
        get = self._overrides.get
        if user and client_id:
            for entity in (
                QuotaEntity(user, client_id),
                QuotaEntity(user, DEFAULT_ENTITY),
                QuotaEntity(DEFAULT_ENTITY, client_id),
                QuotaEntity(DEFAULT_ENTITY, DEFAULT_ENTITY),
            ):
                bound = get(entity)
                if bound is not None:
                    return bound
            return None
        if user:
            bound = get(QuotaEntity(user, None))
            return bound if bound is not None else get(QuotaEntity(DEFAULT_ENTITY, None))
        bound = get(QuotaEntity(None, client_id))
        return bound if bound is not None else get(QuotaEntity(None, DEFAULT_ENTITY))

    def quota(self, user: str, client_id: str) -> float | None:
        """The bound applying to requests of ``user`` (the principal's name) with
        ``client_id``, None when unbounded (Kafka's ``quota(user, clientId)``)."""
        return self.quota_limit(*self.metric_tags(user, client_id))

    def _sensor(self, user: str, client_id: str) -> _Sensor | None:
        key = (user, client_id)
        try:
            return self._resolved[key]
        except KeyError:
            pass
        tags = self.metric_tags(user, client_id)
        bound = self.quota_limit(*tags)
        sensor: _Sensor | None = None
        if bound is not None:
            sensor = self._sensors.get(tags)
            if sensor is None:
                sensor = self._sensors[tags] = _Sensor(
                    QuotaRate(self.num_samples, self.window_ms), bound
                )
        if len(self._resolved) >= _MAX_RESOLVED:
            self._resolved.clear()  # many client ids come and go: resolve again, lazily
        self._resolved[key] = sensor
        return sensor

    # -- recording ------------------------------------------------------------------------

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record ``value`` and return the throttle time in ms, 0 when within the quota
        (``maybeRecordAndGetThrottleTimeMs``)."""
        if not self.enabled:
            return 0
        sensor = self._sensor(user, client_id)
        if sensor is None:
            return 0
        rate = sensor.rate
        rate.record(value, now_ms)
        window_ms = rate.window_size(now_ms)
        measured = rate.total() / (window_ms / 1000.0)
        if measured <= sensor.bound:
            return 0
        throttle = throttle_time_ms(measured, sensor.bound, window_ms)
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        return max(throttle, 0)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded value (``unrecordQuotaSensor``: a throttled Fetch sends no
        data, so its bytes must not count)."""
        if not self.enabled:
            return
        sensor = self._sensor(user, client_id)
        if sensor is not None:
            sensor.rate.record(-value, now_ms)

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """``getMaxValueInQuotaWindow``: the bound times ``num - 1`` windows (a Fetch's
        ``max_bytes`` is capped by it), None when unbounded."""
        if not self.enabled:
            return None
        sensor = self._sensor(user, client_id)
        if sensor is None:
            return None
        return sensor.bound * (self.num_samples - 1) * self.window_ms / 1000.0
