"""The suite's PNG plots (matplotlib, Agg backend: no display needed).

Every function takes plain numbers, so it can be tested with synthetic data: a *series* is
``{system: [(x, median, min, max), ...]}`` (what ``Results.series`` returns), drawn as one
line per system through the medians with the min-max range as error bars. Each function
writes one PNG and returns its path, or None when there is nothing to draw.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

__all__ = ["bar_plot", "line_plot", "main", "relative", "write_plots"]

Series = Mapping[str, Sequence[tuple[float, ...]]]


def _draw(ax: Axes, series: Series, ylabel: str, *, logx: bool, logy: bool) -> None:
    for system, points in series.items():
        xs = [p[0] for p in points]
        med = [p[1] for p in points]
        low = [p[1] - p[2] for p in points]
        high = [p[3] - p[1] for p in points]
        ax.errorbar(xs, med, yerr=[low, high], marker="o", capsize=3, label=system)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def line_plot(
    path: Path,
    title: str,
    xlabel: str,
    panels: Sequence[tuple[str, Series]],
    *,
    logx: bool = False,
    logy: bool | Sequence[bool] = False,
) -> Path | None:
    """One figure, one panel per ``(ylabel, series)``, side by side, sharing the x axis.

    ``logy``: one flag for every panel, or one per panel.
    """
    flags = [logy] * len(panels) if isinstance(logy, bool) else list(logy)
    kept = [(p, f) for p, f in zip(panels, flags, strict=True) if any(p[1].values())]
    if not kept:
        return None
    fig, axes = plt.subplots(1, len(kept), figsize=(6 * len(kept), 4.5), squeeze=False)
    for ax, ((ylabel, series), flag) in zip(axes[0], kept, strict=True):
        _draw(ax, series, ylabel, logx=logx, logy=flag)
        ax.set_xlabel(xlabel)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def bar_plot(
    path: Path,
    title: str,
    ylabel: str,
    groups: Mapping[str, Mapping[str, float]],
    *,
    logy: bool = False,
) -> Path | None:
    """Grouped bars: ``{group: {bar label: value}}`` (e.g. system -> p50/p99/p99.9)."""
    groups = {g: bars for g, bars in groups.items() if bars}
    if not groups:
        return None
    labels = list(dict.fromkeys(label for bars in groups.values() for label in bars))
    width = 0.8 / max(1, len(labels))
    # at most 24 in wide (kafka.png has a group per case: ~20)
    fig, ax = plt.subplots(figsize=(min(24.0, max(6.0, 1.6 * len(groups) + 2)), 4.5))
    for i, label in enumerate(labels):
        xs = [g + i * width for g in range(len(groups))]
        ax.bar(xs, [bars.get(label, math.nan) for bars in groups.values()], width, label=label)
    ax.set_xticks([g + width * (len(labels) - 1) / 2 for g in range(len(groups))])
    ax.set_xticklabels(list(groups), fontsize=7, rotation=15, ha="right")
    if logy:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_plots(results: object, out_dir: Path) -> list[Path]:
    """Every plot the results have data for, into ``out_dir``; the paths written.

    ``results`` is a ``bench.suite_results.Results`` (typed loosely to keep this module free
    of the suite's imports).
    """
    from bench.suite_results import Results

    assert isinstance(results, Results)
    out_dir.mkdir(parents=True, exist_ok=True)
    stored = results.series("stored", "records_s")
    made: list[Path | None] = [
        line_plot(
            out_dir / "sizes.png",
            "Produce throughput versus message size",
            "value size (bytes)",
            [
                ("records/s", results.series("sizes", "records_s")),
                ("MB/s (payload)", results.series("sizes", "mb_s")),
            ],
            logx=True,
            logy=True,
        ),
        line_plot(
            out_dir / "stored.png",
            "Produce throughput (100 B records) versus data already stored",
            "GiB stored before the level's runs",
            [
                ("records/s (log scale)", stored),
                ("% of the same system's rate with nothing stored", relative(stored)),
            ],
            logy=[True, False],
        ),
        line_plot(
            out_dir / "partitions.png",
            "Partitions scaling: produce throughput and server memory",
            "partitions",
            [
                ("records/s", results.series("partitions", "records_s")),
                ("server VmRSS after the runs (MiB)", results.series("partitions", "rss_mib")),
            ],
            logx=True,
        ),
        bar_plot(
            out_dir / "latency.png",
            "End-to-end latency percentiles (median over runs)",
            "ms (log scale)",
            {
                system: {
                    name: value
                    for name, field in (("p50", "p50"), ("p99", "p99"), ("p99.9", "p999"))
                    if (value := _median(runs, field)) is not None
                }
                for system, (_, runs) in results.latency.items()
            },
            logy=True,
        ),
        bar_plot(
            out_dir / "throughput.png",
            "Produce and consume, 100 B records (median records/s)",
            "records/s (log scale)",
            {
                f"{scenario}: {case}": {
                    row.system: s["median"]
                    for row in results.scenario_rows(scenario)
                    if row.case == case and (s := row.stats("records_s")) is not None
                }
                for scenario in ("produce", "consume")
                for case in dict.fromkeys(r.case for r in results.scenario_rows(scenario))
            },
            logy=True,
        ),
        bar_plot(
            out_dir / "kafka.png",
            "Franz / Apache Kafka: records/s, broker CPU-s/GB and RSS (100 % = equal)",
            "franz / Kafka, % (log scale)",
            results.kafka_ratios(),
            logy=True,
        ),
    ]
    return [p for p in made if p is not None]


def relative(series: Series) -> dict[str, list[tuple[float, ...]]]:
    """Each system's points as % of its first point's median (flat = 100 %)."""
    out: dict[str, list[tuple[float, ...]]] = {}
    for system, points in series.items():
        if points and points[0][1] > 0:
            base = points[0][1] / 100
            out[system] = [(p[0], *(v / base for v in p[1:])) for p in points]
    return out


def _median(runs: Sequence[object], field: str) -> float | None:
    values = [getattr(r, field) for r in runs if not math.isnan(getattr(r, field))]
    return statistics.median(values) if values else None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.plots RESULTS_JSON [OUT_DIR]``: redraw a past suite run's plots."""
    import json
    import sys

    from bench.suite_results import results_from_json

    args = list(sys.argv[1:] if argv is None else argv)
    if not 1 <= len(args) <= 2:
        print(main.__doc__)
        return 2
    source = Path(args[0])
    out_dir = Path(args[1]) if len(args) == 2 else source.parent
    for path in write_plots(results_from_json(json.loads(source.read_text())), out_dir):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
