#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the linters and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== ruff" && .venv/bin/ruff check franz tests bench tools pipelines pyspark_franz.py
echo "== mypy" && .venv/bin/mypy
echo "== import-linter" && .venv/bin/lint-imports
echo "== pytest" && exec .venv/bin/python -m pytest "$@"
