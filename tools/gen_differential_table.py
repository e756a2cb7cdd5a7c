"""Write the differential-test table (issue 15, item 2) into README.md's Status section.

The table is derived from the test definitions, not from a run: for each API Franz serves,
every version either broker advertises is

* **same**: a scenario of ``tests/support/differential_scenarios.py`` runs it and no
  ``JUSTIFIED_DIFFERENCES`` entry applies (``test_differential`` fails otherwise);
* **differs**: a justified difference applies (footnote with its reason);
* **not served**: only one broker advertises it (Franz's ``SUPPORTED_APIS`` against
  Kafka 3.9.2's ``KAFKA_RANGES``);
* **not compared**: both serve it but no scenario runs it (none today: the pre-KIP-896
  versions are written with classes generated from Kafka 3.9's schemas,
  ``tests.support.old_versions``; a scenario may start at a later version, as
  ``produce-idempotent`` at v3, when another covers the earlier ones).

``tests/reference/test_differential.py::test_readme_table_is_current`` fails when the
committed table differs from what this script writes. Usage::

    python -m tools.gen_differential_table          # from the repo root: rewrite README.md
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from tests.support.differential import JUSTIFIED_DIFFERENCES, KAFKA_ONLY_APIS, KAFKA_RANGES
from tests.support.differential_scenarios import SCENARIOS

README: Final = Path(__file__).resolve().parents[1] / "README.md"
BEGIN: Final = "<!-- differential-table:begin (tools/gen_differential_table.py) -->"
END: Final = "<!-- differential-table:end -->"
COLUMNS: Final = ("same", "differs", "not served", "not compared")


def _ranges(versions: list[int]) -> str:
    parts: list[str] = []
    start = prev = None
    for v in [*sorted(versions), None]:
        if v is not None and prev is not None and v == prev + 1:
            prev = v
            continue
        if start is not None:
            parts.append(f"v{start}" if start == prev else f"v{start}-{prev}")
        start = prev = v
    return ", ".join(parts)


def statuses(api: ApiKey) -> dict[int, tuple[str, tuple[int, ...]]]:
    """version -> (status, footnote numbers) for one API."""
    franz_low, franz_high = SUPPORTED_APIS[api].min_advertised, SUPPORTED_APIS[api].max_version
    kafka_low, kafka_high = KAFKA_RANGES[api]
    covered = {v for sc in SCENARIOS if sc.api == api for v in sc.versions}
    out: dict[int, tuple[str, tuple[int, ...]]] = {}
    for v in range(min(franz_low, kafka_low), max(franz_high, kafka_high) + 1):
        if not (franz_low <= v <= franz_high and kafka_low <= v <= kafka_high):
            out[v] = ("not served", ())
        elif v not in covered:
            out[v] = ("not compared", ())
        else:
            notes = tuple(
                n
                for n, j in enumerate(JUSTIFIED_DIFFERENCES, 1)
                if j.api == api and v in j.versions
            )
            out[v] = ("differs" if notes else "same", notes)
    return out


def render_table() -> str:
    lines = [
        "| API | same | differs | not served | not compared |",
        "|---|---|---|---|---|",
    ]
    for api in sorted(SUPPORTED_APIS, key=int):
        per_version = statuses(api)
        cells = []
        for column in COLUMNS:
            versions = [v for v, (status, _) in per_version.items() if status == column]
            cell = _ranges(versions)
            notes = sorted({n for v in versions for n in per_version[v][1]})
            if notes:
                cell += " " + "".join(f"[^d{n}]" for n in notes)
            cells.append(cell)
        lines.append(f"| {api.name} ({int(api)}) | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "Not served by an embedded Franz (Kafka 3.9.2 serves them; LeaderAndIsr v0-7, "
        "StopReplica v0-4, UpdateMetadata v0-8 and ControlledShutdown v0-3 are served in "
        "cluster mode, and the first three's answers to a stale controller epoch at every "
        "version are compared with Kafka's, equal): "
        + ", ".join(f"{name} ({key})" for key, name in sorted(KAFKA_ONLY_APIS.items()))
        + "."
    )
    for n, j in enumerate(JUSTIFIED_DIFFERENCES, 1):
        lines.append("")
        lines.append(f"[^d{n}]: `{j.path}` ({j.api.name} {_ranges(list(j.versions))}): {j.reason}")
    return "\n".join(lines)


def replace_table(readme: str, table: str) -> str:
    """``readme`` with the text between the markers replaced by ``table``."""
    head, begin, rest = readme.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"README.md lacks the markers {BEGIN!r} ... {END!r}")
    return f"{head}{BEGIN}\n{table}\n{END}{tail}"


def main() -> int:
    README.write_text(replace_table(README.read_text(), render_table()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
