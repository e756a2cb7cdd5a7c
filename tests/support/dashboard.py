"""The Grafana dashboard shipped in ``deploy/grafana/franz-kafka.json``: its PromQL
expressions (panel targets and template variable queries) and the metric names they
select, for the tests that check every name is one Franz exports; and each selector's label
matchers (``selectors``), for the tests that check each selects samples Franz exports
(``unmatched_selectors``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "DASHBOARD",
    "PROMQL_FUNCTIONS",
    "Matcher",
    "expressions",
    "load",
    "metric_names",
    "selectors",
    "unmatched_selectors",
]

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


#: (label, operator, value) of a selector's label matcher: ``=``, ``!=``, ``=~``, ``!~``.
Matcher = tuple[str, str, str]
_SELECTOR = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\})?')
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')
#: What the dashboard's template variables select with their "All" option (``allValue``).
ALL_VALUES = {"$instance": ".*", "$topic": ".*", "$consumergroup": ".*"}


def selectors(expr: str) -> list[tuple[str, tuple[Matcher, ...]]]:
    """Each metric selector of ``expr``: its metric name and label matchers, in order."""
    names = metric_names(expr)
    found = []
    for match in _SELECTOR.finditer(expr):
        name, braces = match.group(1), match.group(2) or "{}"
        if name not in names:
            continue
        body = braces[1:-1]
        matchers = []
        position = 0
        while body[position:].strip():
            m = _MATCHER.match(body, position)
            if m is None:
                raise ValueError(f"cannot parse the matchers {braces!r} in {expr!r}")
            value = m.group(3).replace('\\"', '"').replace("\\\\", "\\")
            matchers.append((m.group(1), m.group(2), value))
            position = m.end()
        found.append((name, tuple(matchers)))
    return found


def _matches(labels: Mapping[str, str], matchers: Iterable[Matcher]) -> bool:
    """PromQL's matching of one sample; ``instance`` is Prometheus' target label (not in a
    scrape) and the template variables select everything (their "All")."""
    for label, op, value in matchers:
        if label == "instance":
            continue
        for variable, everything in ALL_VALUES.items():
            value = value.replace(variable, everything)
        actual = labels.get(label, "")  # an absent label matches as ""
        if op == "=":
            ok = actual == value
        elif op == "!=":
            ok = actual != value
        elif op == "=~":
            ok = re.fullmatch(value, actual) is not None
        else:
            ok = re.fullmatch(value, actual) is None
        if not ok:
            return False
    return True


def unmatched_selectors(
    exprs: Iterable[str], samples: Mapping[str, Iterable[Mapping[str, str]]]
) -> list[str]:
    """The selectors of ``exprs`` that select no sample of ``samples`` (sample name -> the
    label sets it has), written ``name{label op "value", ...}``."""
    missing = []
    for expr in exprs:
        for name, matchers in selectors(expr):
            if not any(_matches(labels, matchers) for labels in samples.get(name, ())):
                text = ",".join(f'{label}{op}"{value}"' for label, op, value in matchers)
                missing.append(f"{name}{{{text}}}")
    return missing
