"""Fixtures for the Spark tests: one real local SparkSession per test session, real brokers.

A SparkSession costs ~8 s to start, plus ~8 s for the first Python data source, and
0.6-1.2 GiB of RAM, so every Spark test shares one (``spark``). Everything listens on
127.0.0.1 only (``SPARK_LOCAL_IP`` and the driver's host/bind address), and the Python workers
run this interpreter (``PYSPARK_PYTHON``), which has ``franz[spark]`` installed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.support.broker import BrokerProcess

#: Settings for a test session: small, quiet, loopback only.
SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.python.worker.faulthandler.enabled": "true",
    "spark.sql.execution.pyspark.udf.faulthandler.enabled": "true",
}


def spark_environment() -> dict[str, str]:
    """The environment a driver process needs (tests that start their own driver use it)."""
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


def build_session(app_name: str = "franz-tests", master: str = "local[2]") -> SparkSession:
    """A session with :data:`SPARK_CONF` (``local[2]``: no task retries; ``local[2,F]``
    tries a failed task up to F times)."""
    env = spark_environment()
    os.environ.update({k: v for k, v in env.items() if k.startswith(("PYSPARK", "SPARK"))})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in SPARK_CONF.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The test session's SparkSession (``franz`` is found by auto-registration)."""
    session = build_session()
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker with the embedded single-node defaults, stopped (SIGTERM) after the test."""
    proc = BrokerProcess(tmp_path / "broker").start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"
