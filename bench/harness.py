"""The lifecycle of a bench that starts broker processes, and the driver pieces benches share.

``broker_bench`` and ``group_bench`` run the same way (:func:`run_suite`): a temp dir, SIGTERM
turned into ``KeyboardInterrupt``, the scenarios in a fixed order (:func:`run_scenarios`),
each within a time budget (:func:`budgeted`) with the systems' order rotating every run
(:func:`rotate`); then every process stopped (:func:`stop_owned`, then ``stop_all`` by PID),
the temp dir removed, and the report (header, tables, caveats, "Took N s") printed and
written to ``<results dir>/<kind>-<YYYYmmdd-HHMMSS>.md``. Exit code 0, or 130 when
interrupted (the report then says its figures are partial).

Glossary: *suite*, the object that starts the systems and runs the scenarios (a bench's
``Bench`` class); *kind*, the bench's short name (``broker``, ``group``) in the temp dir's
prefix, the first line printed and the report's file name.
"""

from __future__ import annotations

import datetime
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, Protocol, TypeVar

from bench.broker_clients import run_timed, stop_all, unregister
from bench.report import machine_info

__all__ = [
    "Suite",
    "SuiteResults",
    "SuiteSettings",
    "budgeted",
    "compose_report",
    "git_commit",
    "parse_names",
    "parse_overrides",
    "rotate",
    "run_scenarios",
    "run_suite",
    "stop_owned",
]

T = TypeVar("T")
Warn = Callable[[str], None]


class Suite(Protocol):
    """What :func:`run_suite` drives: ``run()`` may raise ``KeyboardInterrupt``."""

    def run(self) -> None: ...

    def close(self) -> None: ...


class SuiteSettings(Protocol):
    """The parts of a bench's ``Settings`` that :func:`run_suite` reads."""

    @property
    def mode(self) -> str: ...

    @property
    def scenarios(self) -> Sequence[str]: ...

    @property
    def results_dir(self) -> Path: ...


class SuiteResults(Protocol):
    """A bench's ``Results``: warned on interruption, rendered after the header."""

    def warn(self, message: str) -> None: ...

    def markdown(self) -> str: ...


C = TypeVar("C", bound=SuiteSettings)
R = TypeVar("R", bound=SuiteResults)


# -- settings ---------------------------------------------------------------------------------


def parse_names(text: str, known: Sequence[str], what: str = "scenario(s)") -> tuple[str, ...]:
    """The comma-separated names of ``text``, each one of ``known``; SystemExit if not."""
    names = tuple(s.strip() for s in text.split(",") if s.strip())
    unknown = set(names) - set(known)
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(sorted(unknown))}")
    return names


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """``--override KEY=VALUE`` arguments as a dict (later wins); SystemExit on a bad one."""
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--override wants KEY=VALUE, got {item!r}")
        overrides[key.strip()] = value.strip()
    return overrides


# -- driving the scenarios ----------------------------------------------------------------------


def rotate(items: Sequence[T], i: int) -> list[T]:
    """``items`` started at index ``i`` (modulo): run ``i`` measures the next system first."""
    k = i % len(items) if items else 0
    return [*items[k:], *items[:k]]


def budgeted(items: Iterable[T], budget_s: float, scenario: str, warn: Warn) -> Iterator[T]:
    """``items`` until ``budget_s`` seconds after the first is asked for; then warns, stops."""
    deadline = time.monotonic() + budget_s
    for item in items:
        if time.monotonic() > deadline:
            warn(f"{scenario}: {budget_s:.0f} s budget spent; runs skipped")
            return
        yield item


def run_scenarios(suite: object, order: Sequence[str], selected: Sequence[str], warn: Warn) -> None:
    """Call ``suite.scenario_<name>()`` for each selected name in ``order``, printing the time.

    An exception ends that scenario only (warned), so the others' figures are kept.
    """
    for name in order:
        if name not in selected:
            continue
        print(f"\n## scenario: {name}", flush=True)
        began = time.perf_counter()
        try:
            getattr(suite, f"scenario_{name}")()
        except Exception as exc:  # keep the other scenarios' figures
            warn(f"{name}: stopped by an error: {exc!r}")
        print(f"  scenario {name} took {time.perf_counter() - began:.1f} s", flush=True)


def stop_owned(owned: list[Any], warn: Warn) -> None:
    """Stop every owner, last started first; kill one that fails to stop; empty ``owned``.

    ``BrokerProcess.stop()`` returns franz's exit code: a non-zero one is warned. Each
    owner's PID is taken off ``broker_clients``' registry, so ``stop_all`` skips it.
    """
    for owner in reversed(owned):
        pid = owner.proc.pid if getattr(owner, "proc", None) is not None else None
        try:
            code = owner.stop()
            if code:
                warn(f"franz exited with {code} on SIGTERM")
        except Exception as exc:
            print(f"stopping {owner}: {exc}; killing it", flush=True)
            owner.kill()
        if pid is not None:
            unregister(pid)
    owned.clear()


# -- the report ---------------------------------------------------------------------------------


def git_commit() -> str:
    """The short hash of HEAD, or ``?``."""
    run = run_timed(["git", "rev-parse", "--short", "HEAD"], timeout=10.0, stdout="capture")
    return run.stdout.strip() or "?"


def compose_report(
    header: str, body: str, caveats: Sequence[str], took_s: float, loadavg_end: str
) -> str:
    """The report's text: header, a blank line, tables, ``Caveats:``, the time it took."""
    text = header + "\n\n" + body
    text += "\n\nCaveats:\n" + "\n".join(f"- {c}" for c in caveats)
    return text + f"\n\nTook {took_s:.0f} s; load average at end {loadavg_end}.\n"


def run_suite(
    kind: str,
    cfg: C,
    results: R,
    make_suite: Callable[[C, Path, R], Suite],
    header: Callable[[C, dict[str, Any], str], str],
    caveats: Sequence[str],
) -> int:
    """Run a bench from start to written report; 0, or 130 when interrupted.

    ``make_suite(cfg, temp dir, results)`` builds the suite once SIGTERM is already turned
    into ``KeyboardInterrupt``; ``header(cfg, machine info, stamp)`` and
    ``results.markdown()`` are called after every process is stopped (by then
    ``machine["loadavg_end"]`` is set).
    """
    base = Path(tempfile.mkdtemp(prefix=f"franz-{kind}-bench-"))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    machine = machine_info(str(base))

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    interrupted = False
    try:
        suite = make_suite(cfg, base, results)
        started = time.perf_counter()
        print(f"franz {kind} bench ({cfg.mode}): {', '.join(cfg.scenarios)}; temp dir {base}")
        try:
            suite.run()
        except KeyboardInterrupt:
            interrupted = True
            results.warn("interrupted: the figures below are partial")
        finally:
            suite.close()
    finally:
        stop_all()
        shutil.rmtree(base, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
    machine["loadavg_end"] = Path("/proc/loadavg").read_text().strip()
    text = compose_report(
        header(cfg, machine, stamp),
        results.markdown(),
        caveats,
        time.perf_counter() - started,
        machine["loadavg_end"],
    )
    print("\n" + text)
    cfg.results_dir.mkdir(parents=True, exist_ok=True)
    out = cfg.results_dir / f"{kind}-{stamp}.md"
    out.write_text(text)
    print(f"wrote {out}")
    return 130 if interrupted else 0
