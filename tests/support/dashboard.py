"""The Grafana dashboard shipped in ``deploy/grafana/franz-kafka.json``: its PromQL
expressions (panel targets and template variable queries) and the metric names they
select, for the tests that check every name is one Franz exports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["DASHBOARD", "PROMQL_FUNCTIONS", "expressions", "load", "metric_names"]

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "franz-kafka.json"

#: The PromQL functions and aggregations the dashboard may use (and Grafana's
#: ``label_values`` of template variables).
PROMQL_FUNCTIONS = frozenset(
    {
        "sum", "max", "min", "avg", "count", "topk", "bottomk", "rate", "irate", "increase",
        "delta", "deriv", "histogram_quantile", "clamp_min", "clamp_max", "abs", "label_values",
        "max_over_time", "min_over_time", "avg_over_time", "sum_over_time", "time",
    }
)  # fmt: skip
_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool"}
)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_TOKEN = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?")


def load() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text()))


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def expressions(dashboard: dict[str, Any]) -> list[str]:
    """Every PromQL expression: the panels' targets, then the query variables'."""
    exprs = [
        target["expr"]
        for panel in _panels(dashboard["panels"])
        for target in panel.get("targets", [])
    ]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            exprs.append(query["query"] if isinstance(query, dict) else query)
    return exprs


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects; ValueError on a function not in
    ``PROMQL_FUNCTIONS`` (so that a misspelt one is not taken for a metric)."""
    text = _RANGE.sub(" ", _MATCHERS.sub(" ", _STRING.sub('""', expr)))
    text = _GROUPING.sub(" ", text)
    # label_values(metric, label): the second argument is a label name.
    text = re.sub(r"label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*\w+\s*\)", r"(\1)", text)
    names = set()
    for match in _TOKEN.finditer(text):
        token = match.group(0).rstrip("( \t")
        if match.group(1):
            if token not in PROMQL_FUNCTIONS:
                raise ValueError(f"unknown function {token!r} in {expr!r}")
        elif token not in _KEYWORDS:
            names.add(token)
    return names
