#!/usr/bin/env bash
# Fetch the reference class path for tests/reference/: Apache Kafka's broker, tools, Java
# client and Kafka Streams (the artifacts named in tests/reference/pom.xml, plus their runtime
# dependencies) from Maven Central with `mvn dependency:copy-dependencies`, into a cache dir
# outside the repo:
#
#   ${FRANZ_REFERENCE_CACHE:-$HOME/.cache/franz-reference}/kafka-<version>-<pom hash>/libs/*.jar
#
# With a pom as argument it fetches that pom's artifacts instead, into the dir its
# <reference.dir> property names (tests/reference/spark-kafka-pom.xml: Spark's Kafka connector,
# into spark-sql-kafka-<version>-<pom hash>/libs).
#
# The dir is named after the first 12 hex digits of the pom's SHA-256, so checkouts with
# different poms on one machine each keep their own class path instead of re-fetching over
# each other's (bench/kafka_peer.py computes the same name).
#
# A `.complete` marker beside libs/ is written last, so a warm run (or an interrupted one) is
# detected without asking Maven: warm runs return at once. Prints the libs dir on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
POM="${1:-tests/reference/pom.xml}"
VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM")"
NAME="$(sed -n 's:.*<reference.dir>\(.*\)</reference.dir>.*:\1:p' "$POM")"
CACHE="${FRANZ_REFERENCE_CACHE:-$HOME/.cache/franz-reference}"
HASH="$(sha256sum "$POM" | cut -c1-12)"
DEST="$CACHE/${NAME:-kafka-$VERSION}-$HASH"
if [ -f "$DEST/.complete" ] && cmp -s "$POM" "$DEST/pom.xml"; then
    echo "$DEST/libs"
    exit 0
fi
command -v mvn >/dev/null 2>&1 || {
    echo "fetch-kafka-reference: mvn not found; install it (apt-get install maven)" >&2
    exit 1
}
rm -rf "$DEST"
mkdir -p "$DEST"
echo "fetch-kafka-reference: copying the artifacts of $POM and their dependencies into $DEST/libs" >&2
if ! mvn -q -B -f "$POM" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$DEST/libs" >"$DEST/mvn.log" 2>&1; then
    cat "$DEST/mvn.log" >&2
    echo "fetch-kafka-reference: mvn could not fetch the artifacts of $POM (network? Maven Central?)" >&2
    exit 1
fi
cp "$POM" "$DEST/pom.xml"
touch "$DEST/.complete"
echo "$DEST/libs"
