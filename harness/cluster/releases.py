"""What differs between the Kafka releases the harness runs, in one table (3.5.0 to 4.4.0).

Both backends (netns: harness.cluster.kafka, docker: harness.cluster.docker) and the artifacts'
POM (harness.cluster.artifacts) ask this module instead of comparing version numbers
themselves. Each row of DIFFERENCES says what changed, in which release, why it matters here and
where Kafka says so (a KIP, a JIRA, or what the release's own jars answer, checked with
``kafka-storage version-mapping`` / ``format --help`` on the jars Maven Central serves).

What does NOT differ, on purpose: every release runs the same KRaft shape, combined
broker+controller nodes with a static quorum (``controller.quorum.voters``, KIP-595). Dynamic
quorums (``controller.quorum.bootstrap.servers``, KIP-853) exist from 3.9.0 only, so the static
form is the one that runs on all of them; the storage tool formats a static quorum with
``format -t ID -c CONFIG`` on every release (``--standalone``/``--initial-controllers`` are
for dynamic quorums). ``metadata.version`` is left to the release's default (the newest
production level the storage tool picks): a run tests the release as an operator formats it.

    release(version) -> Release        the differences for one release; UnsupportedRelease
                                       (one line, naming OLDEST) for what the harness cannot run
    Release(version)                   the same without the OLDEST check (a kafka-clients version)
      .supports_consumer_group_protocol() .supports_streams_protocol() .supports_share_groups()
      .supports_share_dlq() .supports_transaction_version_2() .has_kip890_verification()
      .supports_elr() .supports_format_features()
                                       what the release supports, asked by name: every caller
                                       asks these, none compares version numbers itself
    feature_problems(version, features) -> list[str]   cluster.features the release cannot format
    feature_mismatches(asked, finalized) -> list[str]  levels asked at format time, not finalized
    first_release(name) -> str         the release a DIFFERENCES row came with ("4.0.0")
    check_release(version) -> str      version, or UnsupportedRelease
    broker_override_problems(version, keys) -> list[str]   overrides the release does not know
"""
from __future__ import annotations

from dataclasses import dataclass

from checkers.version_numbers import version_tuple

#: the oldest release the harness runs: the oldest tried here (docs/scenarios.md "Kafka
#: releases"); KRaft itself is production-ready from 3.3 (KIP-833), 3.3 and 3.4 are untried
OLDEST = "3.5.0"
#: the newest release tried (docs/scenarios.md "Kafka releases"); a newer one is run with its
#: newest rows (nothing is known to differ yet) rather than refused
NEWEST_TRIED = "4.4.0"


class UnsupportedRelease(ValueError):
    """A Kafka version the harness cannot run; the message is one line and names OLDEST."""


def parse(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of ``version`` ("3.5.2", "4.0", "4.0.0-rc1" -> (4, 0, 0)); a
    pre-release counts as its release. UnsupportedRelease when it is not a version. The numbers
    are read by checkers.version_numbers, the one version parser."""
    v = version_tuple(version, whole=True)
    if v is None:
        raise UnsupportedRelease(f"Kafka version {version!r} is not a version like {OLDEST}: the harness "
                                 f"runs Kafka {OLDEST} to {NEWEST_TRIED}")
    return v


def check_release(version: str) -> str:
    """``version`` when the harness can run it (a version, OLDEST or newer); else
    UnsupportedRelease in one line naming OLDEST."""
    if parse(version) < parse(OLDEST):
        raise UnsupportedRelease(f"Kafka {version} is older than {OLDEST}, the oldest release the harness runs "
                                 f"(KRaft with transactions, {OLDEST} to {NEWEST_TRIED}): pick {OLDEST} or newer")
    return version


@dataclass(frozen=True)
class Difference:
    """One thing that changed between releases: ``before`` on releases older than ``since``,
    ``after`` from ``since`` on; ``reason`` why the harness cares, ``source`` where Kafka says so."""

    name: str
    since: str
    before: object
    after: object
    reason: str
    source: str

    def value(self, version: str) -> object:
        return self.after if parse(version) >= parse(self.since) else self.before


#: every per-release difference the harness acts on or records; read through Release
DIFFERENCES: tuple[Difference, ...] = (
    Difference("logging", "4.0.0", "log4j", "log4j2",
               "3.x logs through slf4j 1.7 + reload4j, configured by log4j.properties "
               "(-Dlog4j.configuration); 4.x through log4j2 (-Dlog4j2.configurationFile). The POM "
               "adds the binding, the nodes get the matching file and flag.",
               "KIP-653 (log4j2, 4.0.0); KAFKA-13660 (reload4j, 3.x)"),
    Difference("dump_log_main", "4.3.0", "kafka.tools.DumpLogSegments", "org.apache.kafka.tools.DumpLogSegments",
               "DumpLogSegments (dump-log, the segment checks) is in the broker jar up to 4.2.x and "
               "moved to the kafka-tools jar, rewritten in Java, in 4.3.0 (checked: 4.2.2's "
               "kafka_2.13 jar has it, 4.3.1's not).",
               "KAFKA-14579 (apache/kafka PR 21223)"),
    Difference("tools_jar", "4.0.0", False, True,
               "The harness fetches kafka-tools next to the broker jars on 4.x only, for the tools "
               "it runs from there (TransactionsCommand's find-hanging, ProducerPerformance): a "
               "choice of the harness (3.x untried), not a change in Kafka.",
               "harness choice; kafka-tools module since 3.0 (KIP-664's TransactionsCommand)"),
    Difference("format_feature_flag", "3.8.0", False, True,
               "`kafka-storage format --feature NAME=LEVEL` sets a feature level at format time; "
               "older storage tools reject the flag (checked with format --help on 3.7.0 / 3.8.1).",
               "KIP-1022"),
    Difference("transaction.version", "4.0.0", 0, 2,
               "The transaction protocol a freshly formatted cluster finalises: 2 (KIP-890 part 2: "
               "the epoch bumped every transaction, the server-side defense) from 4.0.0; Java "
               "clients 4.x use it there, librdkafka does not speak it (checked with "
               "`kafka-storage version-mapping` on 4.0.0 / 4.4.0).",
               "KIP-890 part 2"),
    Difference("group.version", "4.0.0", 0, 1,
               "The consumer group protocol of KIP-848 is finalised by default from 4.0.0 (the "
               "classic protocol stays what the harness's consumers ask for).",
               "KIP-848; `kafka-storage version-mapping`"),
    Difference("eligible.leader.replicas.version", "4.1.0", 0, 1,
               "Eligible leader replicas (ELR) are on by default from 4.1.0: a leader may be "
               "elected from the last known ELR after every replica was down (broker event "
               "unclean-leader-election, harness.cluster.broker_events).",
               "KIP-966; `kafka-storage version-mapping` on 4.0.0 (0) / 4.1.2 (1)"),
    Difference("share.version", "4.2.0", 0, 1,
               "Share groups (KIP-932, queues for Kafka) are finalised by default from 4.2.0, where "
               "they are GA: 4.0 and 4.1 offer them as early access/preview, off until an operator "
               "sets share.version=1 (format --feature, or kafka-features upgrade). 4.4.0 formats "
               "share.version=2, which adds the share groups' dead-letter queue (group config "
               "errors.deadletterqueue.topic.name): read it from share_dlq, not from here "
               "(checked with `kafka-storage version-mapping` on 4.1.2 (0), 4.2.2 / 4.3.1 (1), "
               "4.4.0 (2)).",
               "KIP-932; `kafka-storage version-mapping`"),
    Difference("share_dlq", "4.4.0", False, True,
               "share.version=2 is the default from 4.4.0: a share group may name a dead-letter "
               "queue topic (group config errors.deadletterqueue.topic.name) where records it "
               "archives (rejected, or past share.delivery.count.limit) are written (checked: "
               "4.4.0's GroupConfig has the key, 4.3.1's not; `kafka-storage feature-dependencies "
               "--feature share.version=2` refused on 4.3.1).",
               "KIP-1191; `kafka-storage version-mapping`"),
    Difference("transaction.partition.verification.enable", "3.6.0", None, "true",
               "Leaders verify a transactional produce against the coordinator before appending "
               "(the fix for hanging transactions, KAFKA-14402). The key does not exist on 3.5.x: "
               "a scenario that sets it there is refused rather than silently ignored.",
               "KIP-890 part 1"),
    Difference("consumer_group_protocol", "4.0.0", False, True,
               "KIP-848's consumer group protocol (group.protocol=consumer) is generally available "
               "from 4.0.0 (early access in 3.7, preview in 3.8/3.9): a scenario asking for it on "
               "an older release is refused (harness.workloads.group). Its members' session timeout "
               "and heartbeat interval are broker settings (group.consumer.*; defaults 45 s and "
               "5 s, minimums 45 s and 5 s): the brokers get CONSUMER_GROUP_BROKER so that a killed "
               "member leaves after 10 s, as a classic member with session.timeout.ms 10000 does.",
               "KIP-848; Kafka's broker configs group.consumer.session.timeout.ms, "
               "group.consumer.min.session.timeout.ms, group.consumer.heartbeat.interval.ms, "
               "group.consumer.min.heartbeat.interval.ms"),
    Difference("streams_protocol", "4.2.0", False, True,
               "KIP-1071's streams rebalance protocol (group.protocol=streams, a streams group the "
               "broker assigns) is production-ready for its core feature set from 4.2.0 (early "
               "access in 4.1.0); the harness's Kafka Streams example leaves it to the application.",
               "KIP-1071; Kafka 4.2 upgrade notes"),
    Difference("dynamic_quorum", "3.9.0", False, True,
               "controller.quorum.bootstrap.servers and dynamic voters exist from 3.9.0; the "
               "harness uses a static quorum everywhere (module docstring).",
               "KIP-853"),
)

_BY_NAME = {d.name: d for d in DIFFERENCES}

#: broker settings of KIP-848 consumer groups on releases with the protocol (Difference
#: consumer_group_protocol): a member's session 10 s (as the harness's classic members'
#: session.timeout.ms), heartbeats every 1 s (as their heartbeat.interval.ms); the minimums
#: lowered so the brokers accept those values (the classic group.min.session.timeout.ms is 6 s)
CONSUMER_GROUP_BROKER: dict[str, str] = {
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}

#: broker keys (server.properties) a release lacks: key -> (first release with it, first
#: release without it or None, source). A scenario's cluster.broker naming one outside its
#: range is an error (a broker logs an unknown key as a warning and runs on without it).
BROKER_KEYS: dict[str, tuple[str, str | None, str]] = {
    "transaction.partition.verification.enable": ("3.6.0", None, "KIP-890 part 1"),
    "log.message.format.version": ("0.10.0", "4.0.0", "KIP-724 (removed in 4.0.0)"),
    "controller.quorum.bootstrap.servers": ("3.9.0", None, "KIP-853"),
}

LOG4J2 = """status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
"""

LOG4J1 = """log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.state.change.logger=WARN
"""


@dataclass(frozen=True)
class Release:
    """The differences of one Kafka release, by name (see DIFFERENCES for the why)."""

    version: str

    def value(self, name: str) -> object:
        return _BY_NAME[name].value(self.version)

    @property
    def log4j2(self) -> bool:
        """True when the release logs through log4j2 (4.0.0 on, KIP-653)."""
        return self.value("logging") == "log4j2"

    @property
    def log4j_file(self) -> str:
        """The logging config's file name: ``log4j2.properties`` or ``log4j.properties``."""
        return "log4j2.properties" if self.log4j2 else "log4j.properties"

    @property
    def log4j_text(self) -> str:
        """The logging config: INFO to stdout, ``state.change.logger`` at WARN."""
        return LOG4J2 if self.log4j2 else LOG4J1

    def log4j_flag(self, config_path: str) -> str:
        """The JVM flag that points the release's logging at ``config_path``."""
        return (f"-Dlog4j2.configurationFile={config_path}" if self.log4j2
                else f"-Dlog4j.configuration=file:{config_path}")

    @property
    def pom_logging(self) -> list[tuple[str, str, str]]:
        """(groupId, artifactId, version) of the slf4j binding the POM adds next to kafka_2.13:
        Kafka still calls slf4j 1.7 on 4.x (slf4j-api 1.7.36 on every release here)."""
        if self.log4j2:
            return [("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3")]
        return [("org.slf4j", "slf4j-reload4j", "1.7.36")]

    @property
    def dump_log_main(self) -> str:
        """DumpLogSegments' main class (KAFKA-14579: moved to kafka-tools in 4.3.0)."""
        return str(self.value("dump_log_main"))

    @property
    def tools_jar(self) -> bool:
        """True when kafka-tools is fetched next to the broker jars (4.x)."""
        return bool(self.value("tools_jar"))

    @property
    def dump_log_in_tools(self) -> bool:
        """True when DumpLogSegments needs the kafka-tools jar on the classpath (4.3.0 on)."""
        return self.dump_log_main.startswith("org.apache.kafka.tools.")

    def format_args(self, cluster_id: str, config: str, features: dict[str, int] | None = None) -> list[str]:
        """``kafka-storage`` arguments (after the main class or the script) that format a
        static-quorum log dir: ``format -t ID -c CONFIG [--feature NAME=LEVEL ...]``.
        ``features`` needs 3.8.0 or newer (KIP-1022); UnsupportedRelease otherwise."""
        args = ["format", "-t", cluster_id, "-c", config]
        if features:
            if not self.supports_format_features():
                raise UnsupportedRelease(f"Kafka {self.version} cannot set feature levels at format time "
                                         f"({', '.join(features)}): --feature needs Kafka 3.8.0 or newer (KIP-1022)")
            for name, level in features.items():
                args += ["--feature", f"{name}={int(level)}"]
        return args

    # -- what the release supports, asked by name (kafkatest's KafkaVersion does the same);
    # -- each reads its DIFFERENCES row, which names the release that brought it and the source

    def supports_consumer_group_protocol(self) -> bool:
        """group.protocol=consumer (KIP-848) is generally available: 4.0.0 on (early access in
        3.7, preview in 3.8/3.9)."""
        return bool(self.value("consumer_group_protocol"))

    def supports_streams_protocol(self) -> bool:
        """group.protocol=streams (KIP-1071, streams groups) is production-ready: 4.2.0 on
        (early access in 4.1.0)."""
        return bool(self.value("streams_protocol"))

    def supports_share_groups(self) -> bool:
        """Share groups (KIP-932) are on in a freshly formatted cluster (share.version >= 1):
        4.2.0 on, where they are GA (4.0/4.1: early access/preview, off by default)."""
        return int(self.value("share.version")) >= 1

    def supports_share_dlq(self) -> bool:
        """A share group may name a dead-letter queue topic (KIP-1191, share.version 2): 4.4.0 on."""
        return bool(self.value("share_dlq"))

    def supports_format_features(self) -> bool:
        """``kafka-storage format --feature NAME=LEVEL`` (KIP-1022) sets feature levels when the
        log dirs are formatted (a scenario's ``cluster.features``): 3.8.0 on."""
        return bool(self.value("format_feature_flag"))

    def supports_transaction_version_2(self) -> bool:
        """A freshly formatted cluster finalises transaction.version 2 (KIP-890 part 2: the epoch
        bumped every transaction): 4.0.0 on."""
        return int(self.value("transaction.version")) >= 2

    def has_kip890_verification(self) -> bool:
        """Leaders verify a transactional produce against the coordinator
        (transaction.partition.verification.enable, KIP-890 part 1, the fix of KAFKA-14402):
        3.6.0 on."""
        return self.value("transaction.partition.verification.enable") is not None

    def supports_elr(self) -> bool:
        """Eligible leader replicas (KIP-966) are on by default
        (eligible.leader.replicas.version 1): 4.1.0 on."""
        return int(self.value("eligible.leader.replicas.version")) >= 1

    @property
    def consumer_group_protocol(self) -> bool:
        """True when group.protocol=consumer (KIP-848) is generally available (4.0.0 on);
        supports_consumer_group_protocol()."""
        return self.supports_consumer_group_protocol()

    @property
    def broker_defaults(self) -> dict[str, str]:
        """server.properties settings of this release on top of harness.cluster.kafka's
        BROKER_DEFAULTS (a scenario's cluster.broker overrides both): CONSUMER_GROUP_BROKER
        where the consumer group protocol exists, else none."""
        return dict(CONSUMER_GROUP_BROKER) if self.consumer_group_protocol else {}

    @property
    def default_features(self) -> dict[str, int]:
        """Feature levels a fresh format finalises besides metadata.version (0: not offered)."""
        return {n: int(self.value(n)) for n in ("transaction.version", "group.version",
                                                 "eligible.leader.replicas.version")}


def first_release(name: str) -> str:
    """The release the DIFFERENCES row ``name`` came with ("consumer_group_protocol" -> "4.0.0"):
    for messages that say what a feature needs."""
    return _BY_NAME[name].since


def release(version: str) -> Release:
    """The Release of ``version``; UnsupportedRelease (one line) when the harness cannot run it."""
    return Release(check_release(version))


#: features a scenario may not set: metadata.version is left to the release's default (module
#: docstring), kraft.version belongs to dynamic quorums (KIP-853), which the harness does not use
UNSETTABLE_FEATURES = {"metadata.version": "the harness formats every release with its default metadata.version",
                       "kraft.version": "kraft.version belongs to dynamic quorums (KIP-853); the harness runs a static one"}


def feature_problems(version: str, features) -> list[str]:
    """One line per problem with ``features`` (a scenario's cluster.features, name -> level) on
    Kafka ``version``: a release whose storage tool cannot set levels at format time (before
    3.8.0, KIP-1022), a feature the harness does not let a scenario set; [] when fine. Whether
    the release knows the feature at that level is the storage tool's to answer when it formats."""
    if not features:
        return []
    out = []
    if not Release(version).supports_format_features():
        out.append(f"cluster.features ({', '.join(f'{k}={v}' for k, v in features.items())}) cannot be set on Kafka "
                   f"{version}: kafka-storage format --feature needs {first_release('format_feature_flag')} or newer "
                   "(KIP-1022); pick a newer kafka_version or remove cluster.features")
    out += [f"cluster.features {k} cannot be set: {why}" for k, why in UNSETTABLE_FEATURES.items() if k in features]
    return out


def feature_mismatches(asked, finalized) -> list[str]:
    """One line per feature of ``asked`` (cluster.features) whose level the brokers did not
    finalize, read after the load from ``finalized`` (the Java drain's KIP-584 describeFeatures,
    meta.json ``broker_features``; a feature not listed is at level 0); [] when they agree or
    when nothing was read (``finalized`` None or empty: a librdkafka run cannot read features)."""
    if not asked or not finalized:
        return []
    return [f"cluster.features asked {k}={v} at format time, the brokers finalized {k}={finalized.get(k, 0)}: "
            "the run did not test the level it names" for k, v in asked.items() if finalized.get(k, 0) != v]


def broker_override_problems(version: str, keys) -> list[str]:
    """One line per key of ``keys`` (server.properties names) that Kafka ``version`` does not
    have (BROKER_KEYS), naming the releases that do; [] when all are known or unlisted."""
    v = parse(version)
    out = []
    for key in keys:
        if key not in BROKER_KEYS:
            continue
        since, until, source = BROKER_KEYS[key]
        if v < parse(since):
            out.append(f"cluster.broker {key} does not exist on Kafka {version}: it needs {since} or newer ({source})")
        elif until is not None and v >= parse(until):
            out.append(f"cluster.broker {key} does not exist on Kafka {version}: it was removed in {until} ({source})")
    return out
