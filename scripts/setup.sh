#!/usr/bin/env bash
# Set up everything Franz needs on a fresh Debian 12 machine: system packages (apt) and a
# virtualenv in .venv with Franz and its test dependencies. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages: kcat (librdkafka's CLI client, a real peer in the tests), Java for PySpark,
# the benchmark suite's references (Redis Streams, NATS JetStream), Debian's ZooKeeper 3.8
# (libzookeeper-java: the jars only, no service and no desktop JRE; tests/support/zookeeper.py
# runs it), Maven, which fetches Apache Kafka for the reference tests (tests/reference/), and
# Chromium with its driver, which the web console's tests drive headless (tests/console/).
APT_PACKAGES=(kcat redis-server redis-tools nats-server libzookeeper-java chromium chromium-driver)
command -v java >/dev/null 2>&1 || APT_PACKAGES+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || APT_PACKAGES+=(maven)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "setup: installing ${missing[*]} with apt" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
.venv/bin/python -m pip install -q --disable-pip-version-check --config-settings editable_mode=compat -e '.[dev,spark,bench]' 2>&1 | grep -v '^WARNING: Location' || true
.venv/bin/python -c 'import franz, crc32c, cramjam, pyspark, pyarrow' # fail loudly if the install did not work

# Apache Kafka's jars for tests/reference/ (about 47 MB into ~/.cache/franz-reference; a warm
# run returns at once).
bash scripts/fetch-kafka-reference.sh >/dev/null
# Spark's own Kafka connector for tests/reference/test_spark_kafka.py and
# `pipelines.demo --format kafka` (about 10 MB: the connector, kafka-clients, commons-pool2).
bash scripts/fetch-kafka-reference.sh tests/reference/spark-kafka-pom.xml >/dev/null
