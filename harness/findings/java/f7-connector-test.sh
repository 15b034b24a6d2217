#!/usr/bin/env bash
# Finding F7's connector test (docs/findings/F7.md "Connector test"): compile
# harness/findings/java/F7KafkaWriterCloseTest.java against flink-connector-kafka 5.0.0-2.2 (with
# Flink 2.2.1 and the connector's kafka-clients 4.2.0, fetched from Maven Central by Maven into
# ~/.m2) and run it twice: on the 5.0.0 jar as shipped, and with KafkaWriter recompiled from the
# 5.0.0 sources jar with the one-line fix (PATCH below) put ahead of the jar.
#
# Expected: as shipped, the two f7-* close checks FAIL (close() rethrows the second failure) and
# the rest pass; patched, every check passes (the control that #247 asserts, a failure recorded
# before close() and never thrown, still propagates). Exit 0 when both runs came out so, 1 when
# not, 2 when something could not be fetched or compiled.
#
# Needs: mvn, javac/java 17. No broker, no root; about 20 s with a warm ~/.m2.
# Usage: harness/findings/java/f7-connector-test.sh [WORKDIR]   (default: a fresh temp dir)
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TEST_SRC="$HERE/F7KafkaWriterCloseTest.java"
MAIN=org.apache.flink.connector.kafka.sink.F7KafkaWriterCloseTest
CONNECTOR=5.0.0-2.2
FLINK=2.2.1
WORK="${1:-$(mktemp -d -t f7-connector-test.XXXXXX)}"
mkdir -p "$WORK"
cd "$WORK" || exit 2

# The fix (F7.md "Suggested fix"): once checkAsyncException() has thrown a failure, the writer
# has failed (the task fails; a restore builds a new writer), so treat later send failures as
# after close(): onCompletion's `if (closed)` branch logs them at DEBUG and drops them. The
# metric-sync timer also stops on `closed`; close() sets it anyway.
ANCHOR='            asyncProducerException = null;'
PATCH='            asyncProducerException = null;\n            closed = true; \/\/ F7: the writer has thrown; a later failure must not be rethrown by close()'

cat > pom.xml <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>f7-connector-test</artifactId><version>0</version>
  <dependencies>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-connector-kafka</artifactId><version>$CONNECTOR</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-connector-base</artifactId><version>$FLINK</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-streaming-java</artifactId><version>$FLINK</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-runtime</artifactId><version>$FLINK</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>2.0.17</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>2.0.17</version></dependency>
  </dependencies>
</project>
EOF

echo "== fetching jars (mvn dependency:copy-dependencies, flink-connector-kafka $CONNECTOR, Flink $FLINK) into $WORK/lib"
if ! mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime > mvn-deps.log 2>&1; then
    echo "ERROR: Maven could not fetch the jars (see $WORK/mvn-deps.log)"; exit 2
fi
if ! mvn -q -B dependency:get -Dtransitive=false \
        -Dartifact="org.apache.flink:flink-connector-kafka:$CONNECTOR:jar:sources" > mvn-sources.log 2>&1; then
    echo "ERROR: Maven could not fetch the connector's sources jar (see $WORK/mvn-sources.log)"; exit 2
fi
SOURCES_JAR="$HOME/.m2/repository/org/apache/flink/flink-connector-kafka/$CONNECTOR/flink-connector-kafka-$CONNECTOR-sources.jar"
JAR="lib/flink-connector-kafka-$CONNECTOR.jar"
[ -f "$SOURCES_JAR" ] && [ -f "$JAR" ] || { echo "ERROR: $JAR or $SOURCES_JAR missing"; exit 2; }
echo "   $(sha256sum "$JAR")"
echo "   $(sha256sum "$SOURCES_JAR")"
CP="$(ls lib/*.jar | tr '\n' ':')"

echo "== compiling the test"
rm -rf test-classes && mkdir test-classes
javac -d test-classes -cp "$CP" "$TEST_SRC" || { echo "ERROR: the test does not compile"; exit 2; }

echo "== patching KafkaWriter.java from the sources jar"
rm -rf patched-src patched-classes && mkdir -p patched-src patched-classes
unzip -q -o "$SOURCES_JAR" 'org/apache/flink/connector/kafka/sink/KafkaWriter.java' -d patched-src
KW=patched-src/org/apache/flink/connector/kafka/sink/KafkaWriter.java
n="$(grep -cxF "$ANCHOR" "$KW")"
[ "$n" = 1 ] || { echo "ERROR: the patch's anchor line occurs $n times in KafkaWriter.java, not once"; exit 2; }
cp "$KW" KafkaWriter.java.orig
sed -i "s/^$ANCHOR\$/$PATCH/" "$KW"
diff -u KafkaWriter.java.orig "$KW" | sed 's/^/   /'
javac -nowarn -d patched-classes -cp "$CP" "$KW" 2> javac-patched.log \
    || { cat javac-patched.log; echo "ERROR: the patched KafkaWriter does not compile"; exit 2; }
echo "   compiled: $(cd patched-classes && find . -name '*.class' | sort | tr '\n' ' ')"

LOGS=(-Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.log.org.apache.kafka=error
      -Dorg.slf4j.simpleLogger.showThreadName=false)
run() {  # $1: label, $2: extra classpath in front
    echo "== run: $1"
    timeout 300 java "${LOGS[@]}" -cp "$2test-classes:$CP" "$MAIN" > "out-$1.txt" 2>&1
    local rc=$?
    grep -E '^(PASS|FAIL|BROKEN)|passed, .* failed$|WARN .*KafkaWriter - Kafka request failed' "out-$1.txt" | sed 's/^/   /'
    echo "   exit $rc (full output: $WORK/out-$1.txt)"
    return $rc
}

run as-shipped ""
rc_shipped=$?
run patched "patched-classes:"
rc_patched=$?

shipped_f7_fails="$(grep -c '^FAIL f7-' out-as-shipped.txt)"
shipped_other_fails="$(grep '^FAIL ' out-as-shipped.txt | grep -vc '^FAIL f7-')"
if [ "$rc_shipped" = 1 ] && [ "$shipped_f7_fails" = 2 ] && [ "$shipped_other_fails" = 0 ] && [ "$rc_patched" = 0 ]; then
    echo "RESULT as expected: 5.0.0 as shipped fails the two F7 checks (close() rethrows the second failure); with the one-line fix every check passes"
    exit 0
fi
echo "RESULT not as expected: as-shipped exit $rc_shipped with $shipped_f7_fails F7 and $shipped_other_fails other FAILs; patched exit $rc_patched"
exit 1
