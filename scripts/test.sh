#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the linters and the whole test suite.
#
# pytest runs on PYTEST_WORKERS pytest-xdist workers (default 3 on CI's 2 cores: most of the
# suite's wall time is waiting on brokers, JVMs and sockets, not CPU; with 4 the whole suite
# took 17 min against 25 serially, but the CPU starvation made kafka-python's group timing
# tests flaky). --dist loadfile keeps
# a file's tests on one worker, so a module's broker starts once; session fixtures (the
# ZooKeeper, the reference Kafka) start once per worker that needs them, except tests/spark,
# which runs on one worker, first (tests/support/xdist_scheduling.py: one SparkSession;
# Spark's Kafka-connector tests in tests/reference lead that unit).
# --no-loadscope-reorder hands out the other files in collection order: tests/cluster,
# integration and reference (the slow ones) first, tests/unit's many small files last to
# even out the end. Extra arguments go to pytest and win (`bash scripts/test.sh -n 0`: serial).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== ruff" && .venv/bin/ruff check franz tests bench tools pipelines pyspark_franz.py
echo "== mypy" && .venv/bin/mypy
echo "== import-linter" && .venv/bin/lint-imports
echo "== pytest" && exec .venv/bin/python -m pytest \
    -n "${PYTEST_WORKERS:-3}" --dist loadfile --no-loadscope-reorder "$@"
