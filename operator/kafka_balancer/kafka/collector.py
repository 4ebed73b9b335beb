"""The zero-install load collector: partition and broker samples from Kafka's Admin API alone.

One pass reads brokers and racks, partition metadata (replicas, leader, ISR), every broker's log
dirs (one DescribeLogDirs per broker: the dir of each replica, each dir online or not, and each
partition's log size on its leader), start and end offsets (ListOffsets) and every consumer group's
committed offsets (ListGroups + OffsetFetch), and the ACLs that deny the principal a topic or group
(DescribeAcls). Two consecutive passes give one sample per partition:

- average record size: size delta ÷ end-offset delta when both grew, else size ÷ (end − start);
- bytes in: end-offset delta × average record size (messages in: the offset delta);
- bytes out: Σ over consumer groups of the committed-offset delta × average record size.

Broker cpu and network columns come from an optional :class:`BrokerUsageSource` (Prometheus): the
Admin API has no resource usage, so without one they stay null. A pass whose source fails keeps its
partition samples and leaves the broker columns null (the scoring rules ignore nulls). Every broker
request a pass causes is counted, by API, so the cost is visible.

A pass never goes on with part of the cluster: Kafka's authorizer leaves out, without an error, every
topic the principal may not describe (from Metadata, and from DescribeLogDirs too), so nothing the
pass reads reveals such a topic. So a pass first asks for a topic no one made, under a fresh random
name: "unknown topic" means the principal may describe any name, "not authorized" that some topics
may be hidden and which cannot be told. Then it reads the ACLs that deny it a topic or a group by
name (DescribeAcls, which needs the DESCRIBE on the cluster the pass needs anyway); and a group whose
offsets it may not read answers with an error. Each stops the pass with :class:`KafkaAccessDenied`,
naming what it can.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa
from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec
from kafka import KafkaAdminClient

from kafka_balancer.errors import KafkaAccessDenied, KafkaOperationError, MetricsSourceError
from kafka_balancer.kafka.admin import (
    LogDirState,
    check_connection,
    confluent_config,
    described_log_dirs,
    kafka_python_config,
    log_dir_states,
    principal_of,
)
from kafka_balancer.kafka.client_log import served
from kafka_balancer.kafka.sample_store import SampleStore
from kafka_balancer.kafka.snapshot_builder import BrokerInfo
from kafka_balancer.kafka.visibility import (
    DENY_ACLS,
    NOT_EVERY_TOPIC,
    Denial,
    denials_of,
    probe_topic,
    unseen,
)
from kafka_balancer.samples.broker_usage import BrokerUsage, BrokerUsageSource
from kafka_balancer.samples.schema import BROKER_SAMPLES, PARTITION_SAMPLES

TIMEOUT_S = 30.0
Tp = tuple[str, int]
K = TypeVar("K")
# What a pass that stops on part of the cluster says after why.
PART_OF_THE_CLUSTER = (
    "; nothing is planned on part of the cluster (grant DESCRIBE on every topic and group, see "
    "docs/security.md)"
)


@dataclass(frozen=True)
class PartitionInfo:
    replicas: tuple[int, ...]
    leader: int
    isr: frozenset[int]


@dataclass(frozen=True)
class Observation:
    """What one pass read; ``ts_ms`` is when the end offsets were read."""

    ts_ms: int
    brokers: tuple[BrokerInfo, ...]
    partitions: Mapping[Tp, PartitionInfo]
    sizes: Mapping[Tp, int]
    start_offsets: Mapping[Tp, int]
    end_offsets: Mapping[Tp, int]
    committed: Mapping[tuple[str, Tp], int]
    requests: Counter[str] = field(default_factory=Counter)
    # Each live broker's log dirs (JBOD) and the replicas in each; an offline dir lists none.
    log_dirs: Mapping[int, tuple[LogDirState, ...]] = field(default_factory=dict)
    # The partitions being reassigned when the pass read them, each with its target replicas.
    reassigning: Mapping[Tp, tuple[int, ...]] = field(default_factory=dict)


def _fail(what: str, err: BaseException) -> KafkaOperationError:
    return KafkaOperationError(f"{what} failed: {type(err).__name__}: {err}")


class AdminReader:
    """The Admin API reads of a pass; ``requests`` counts broker requests by API name.

    Counts follow each call's fan-out: DescribeLogDirs and ListGroups go to every broker, ListOffsets
    to each leader broker, OffsetFetch once per group (the clients' own metadata refreshes and
    coordinator lookups are not included).
    """

    def __init__(self, bootstrap: str, props: Mapping[str, str] | None = None) -> None:
        props = props or {}
        self._principal = principal_of(props)
        self._ck = AdminClient(confluent_config(bootstrap, props))
        self._kp_config = kafka_python_config(bootstrap, props)
        self._kp: KafkaAdminClient | None = None
        self.requests: Counter[str] = Counter()

    def close(self) -> None:
        if self._kp is not None:
            self._kp.close()
            self._kp = None

    def brokers(self) -> tuple[BrokerInfo, ...]:
        # librdkafka answers describe_cluster with a Metadata request (seen in its statistics).
        self.requests["Metadata"] += 1
        try:
            described = served(self._ck).describe_cluster(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
        except Exception as err:
            raise _fail("describing the cluster", err) from err
        return tuple(sorted((BrokerInfo(n.id, n.rack) for n in described.nodes), key=lambda b: b.id))

    def partitions(self) -> dict[Tp, PartitionInfo]:
        self.requests["Metadata"] += 1
        try:
            metadata = served(self._ck).list_topics(timeout=TIMEOUT_S)
        except KafkaException as err:
            raise _fail("reading topic metadata", err) from err
        return {
            (name, pid): PartitionInfo(tuple(p.replicas), p.leader, frozenset(p.isrs))
            for name, topic in metadata.topics.items()
            if topic.error is None
            for pid, p in topic.partitions.items()
        }

    def reassigning(self) -> dict[Tp, tuple[int, ...]]:
        """The partitions being reassigned now (by anyone), each with the replicas it is moving to."""
        self.requests["ListPartitionReassignments"] += 1
        try:
            listed = self._kafka_python().list_partition_reassignments()
        except Exception as err:
            raise _fail("listing partition reassignments", err) from err
        return {
            (tp.topic, tp.partition): tuple(b for b in info["replicas"] if b not in info["removing_replicas"])
            for tp, info in listed.items()
        }

    def log_dirs(self, brokers: Iterable[int]) -> dict[int, tuple[LogDirState, ...]]:
        """Every log dir of each broker with every replica in it: one DescribeLogDirs per broker."""
        asked = sorted(set(brokers))
        if not asked:
            return {}
        self.requests["DescribeLogDirs"] += len(asked)
        try:
            answers = self._kafka_python().describe_log_dirs(topic_partitions=None, brokers=asked)
        except Exception as err:
            raise _fail("describing log dirs", err) from err
        return log_dir_states(described_log_dirs(answers))

    def offsets(self, leaders: Mapping[Tp, int], spec: OffsetSpec) -> dict[Tp, int]:
        """Earliest or latest offsets; a partition whose query fails (e.g. leader moving) is left out."""
        if not leaders:
            return {}
        self.requests["ListOffsets"] += len(set(leaders.values()))
        request = {TopicPartition(t, p): spec for t, p in leaders}
        try:
            futures = served(self._ck).list_offsets(request, request_timeout=TIMEOUT_S)
        except KafkaException as err:
            raise _fail("listing offsets", err) from err
        return {(tp.topic, tp.partition): info.offset for tp, info in _settled(futures).items()}

    def may_describe_any_topic(self) -> bool:
        """Whether the principal may describe a topic whatever its name: asked of a name no one made
        (DescribeTopics never creates a topic)."""
        self.requests["Metadata"] += 1
        name = probe_topic()
        try:
            futures = served(self._ck).describe_topics(TopicCollection([name]), request_timeout=TIMEOUT_S)
            futures[name].result(timeout=TIMEOUT_S)
        except KafkaException as err:
            reported = err.args[0] if err.args else None
            code = reported.code() if isinstance(reported, KafkaError) else None
            if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return True
            if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                return False
            raise _fail("describing a topic", err) from err
        except Exception as err:
            raise _fail("describing a topic", err) from err
        return True  # someone made it meanwhile: described all the same

    def denials(self) -> list[Denial]:
        """The deny ACLs that hide a topic or a group from this principal (or from everyone); none
        when the cluster enforces no ACLs."""
        self.requests["DescribeAcls"] += 1
        try:
            found = (
                served(self._ck).describe_acls(DENY_ACLS, request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
            )
        except KafkaException as err:
            reported = err.args[0] if err.args else None
            if isinstance(reported, KafkaError) and reported.code() == KafkaError.SECURITY_DISABLED:
                return []  # no authorizer: nothing is kept from anyone
            if (
                isinstance(reported, KafkaError)
                and reported.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
            ):
                # Without it DescribeLogDirs answers no dir at all, and ListGroups only some groups.
                raise KafkaAccessDenied(
                    "Kafka's ACLs do not let this principal DESCRIBE the cluster, which collecting "
                    "needs (see docs/security.md)"
                ) from err
            raise _fail("describing ACLs", err) from err
        except Exception as err:
            raise _fail("describing ACLs", err) from err
        return denials_of(found, self._principal)

    def committed_offsets(self, broker_count: int) -> tuple[dict[tuple[str, Tp], int], list[str]]:
        """(group, partition) → committed offset, for every consumer group; and the groups whose
        offsets the principal may not read."""
        self.requests["ListGroups"] += broker_count
        try:
            listed = (
                served(self._ck).list_consumer_groups(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
            )
        except Exception as err:
            raise _fail("listing consumer groups", err) from err
        groups = sorted(g.group_id for g in listed.valid)
        self.requests["OffsetFetch"] += len(groups)
        # One group per call (the client's limit), all in flight at once.
        futures: dict[str, Future[Any]] = {}
        for group in groups:
            futures.update(
                served(self._ck).list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT_S
                )
            )
        committed: dict[tuple[str, Tp], int] = {}
        for group, answer in _settled(futures).items():
            for tp in answer.topic_partitions:
                if tp.error is None and tp.offset >= 0:  # -1001: none committed
                    committed[(group, (tp.topic, tp.partition))] = tp.offset
        refused = [group for group, future in futures.items() if _group_refused(future)]
        return committed, refused

    def _kafka_python(self) -> KafkaAdminClient:
        if self._kp is None:
            try:
                self._kp = KafkaAdminClient(**self._kp_config)
            except Exception as err:
                raise _fail("connecting the log-dirs client", err) from err
        return self._kp


def _group_refused(future: Future[Any]) -> bool:
    """Whether a settled OffsetFetch failed on the group's ACLs (not a group deleted meanwhile)."""
    if not future.done():
        return False
    err = future.exception(timeout=0)
    reported = err.args[0] if isinstance(err, KafkaException) and err.args else None
    return isinstance(reported, KafkaError) and reported.code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def _settled(futures: Mapping[K, Future[Any]]) -> dict[K, Any]:
    """The results of the futures that succeeded (a group deleted mid-pass, a partition without leader)."""
    done: dict[K, Any] = {}
    for key, future in futures.items():
        try:
            done[key] = future.result(timeout=TIMEOUT_S)
        except Exception:  # one partition or group failing must not lose the others' samples
            continue
    return done


def observe(reader: AdminReader, clock: Callable[[], float] = time.time) -> Observation:
    """One pass of Admin API reads; partitions without a leader are left out of this pass."""
    before = Counter(reader.requests)
    brokers = reader.brokers()
    if not reader.may_describe_any_topic():
        raise KafkaAccessDenied(
            f"{NOT_EVERY_TOPIC}; nothing is planned on part of the cluster (grant DESCRIBE on topic '*', "
            "see docs/security.md)"
        )
    denials = reader.denials()
    partitions = reader.partitions()
    leaders = {tp: p.leader for tp, p in partitions.items() if p.leader >= 0}
    end = reader.offsets(leaders, OffsetSpec.latest())  # type: ignore[no-untyped-call]
    ts_ms = int(clock() * 1000)
    start = reader.offsets(leaders, OffsetSpec.earliest())  # type: ignore[no-untyped-call]
    dirs = reader.log_dirs(b.id for b in brokers)
    sizes = leader_sizes(dirs, leaders)
    committed, refused_groups = reader.committed_offsets(len(brokers))
    hidden = unseen(denials, refused_groups)
    if hidden is not None:
        raise KafkaAccessDenied(hidden + PART_OF_THE_CLUSTER)
    reassigning = reader.reassigning()
    return Observation(
        ts_ms=ts_ms,
        brokers=brokers,
        partitions=partitions,
        sizes=sizes,
        start_offsets=start,
        end_offsets=end,
        committed=committed,
        requests=Counter(reader.requests) - before,
        log_dirs=dirs,
        reassigning=reassigning,
    )


def leader_sizes(dirs: Mapping[int, tuple[LogDirState, ...]], leaders: Mapping[Tp, int]) -> dict[Tp, int]:
    """Log size of each partition's leader replica; a future replica (a log-dir move) is listed too,
    the larger is the live log. A leader that did not answer gives no size (left out of the pass)."""
    sizes: dict[Tp, int] = {}
    for tp, leader in leaders.items():
        found = [d.replicas[tp] for d in dirs.get(leader, ()) if tp in d.replicas]
        found += [d.future[tp] for d in dirs.get(leader, ()) if tp in d.future]
        if found:
            sizes[tp] = max(found)
    return sizes


def observe_cluster(bootstrap: str, props: Mapping[str, str]) -> Observation:
    """One pass on fresh clients, as the operator makes it between syncs: the login is checked
    first, so a refused one is named at once instead of after the clients' silent retries."""
    check_connection(bootstrap, props)
    reader = AdminReader(bootstrap, props)
    try:
        return observe(reader)
    except KafkaOperationError as err:
        # The same class: the pool's condition tells a refusal by ACLs from an outage.
        raise type(err)(f"reading the cluster at {bootstrap}: {err}") from err
    finally:
        reader.close()


def average_record_size(size: int, prev_size: int | None, end: int, prev_end: int, start: int) -> float:
    """Bytes per record: from the deltas when both grew, else from the whole log."""
    if prev_size is not None and size > prev_size and end > prev_end:
        return (size - prev_size) / (end - prev_end)
    records = end - start
    return size / records if records > 0 else 0.0


def samples_between(
    prev: Observation, cur: Observation, usage: Mapping[int, BrokerUsage] | None = None
) -> tuple[pa.Table, pa.Table]:
    """Partition and broker samples of the interval between two passes (schemas of ``samples.schema``);
    ``usage`` fills the broker resource columns of the brokers it names."""
    interval_ms = cur.ts_ms - prev.ts_ms
    if interval_ms <= 0:
        raise KafkaOperationError(f"sampling passes out of order ({prev.ts_ms} then {cur.ts_ms} ms)")
    out_offsets: dict[Tp, int] = Counter()
    for (group, tp), offset in cur.committed.items():
        before = prev.committed.get((group, tp))
        if before is not None and offset > before:
            out_offsets[tp] += offset - before
    rows = []
    for tp, info in sorted(cur.partitions.items()):
        if tp not in cur.end_offsets or tp not in prev.end_offsets or tp not in cur.sizes:
            continue
        end, prev_end = cur.end_offsets[tp], prev.end_offsets[tp]
        size = cur.sizes[tp]
        record = average_record_size(size, prev.sizes.get(tp), end, prev_end, cur.start_offsets.get(tp, end))
        # An end offset that went back means the topic was recreated: nothing measurable produced.
        produced = max(0, end - prev_end)
        rows.append(
            {
                "ts_ms": cur.ts_ms,
                "interval_ms": interval_ms,
                "topic": tp[0],
                "partition": tp[1],
                "leader": info.leader,
                "replicas": list(info.replicas),
                "size_bytes": float(size),
                "bytes_in": produced * record,
                "bytes_out": out_offsets.get(tp, 0) * record,
                "messages_in": produced,
            }
        )
    unknown = BrokerUsage(None, None, None)
    brokers = []
    for b in cur.brokers:
        used = (usage or {}).get(b.id, unknown)
        brokers.append(
            {
                "ts_ms": cur.ts_ms,
                "interval_ms": interval_ms,
                "broker": b.id,
                "rack": b.rack,
                "cpu": used.cpu,
                "network_in": used.network_in,
                "network_out": used.network_out,
            }
        )
    return (
        pa.Table.from_pylist(rows, schema=PARTITION_SAMPLES),
        pa.Table.from_pylist(brokers, schema=BROKER_SAMPLES),
    )


@dataclass(frozen=True)
class PassResult:
    observation: Observation
    samples_written: int
    usage: Mapping[int, BrokerUsage] = field(default_factory=dict)
    # Why the usage source gave nothing this pass (its one-line error), None when it answered.
    usage_error: str | None = None


class Collector:
    """Sampling passes into a store; the first pass of a collector is a baseline and stores nothing."""

    def __init__(
        self,
        reader: AdminReader,
        store: SampleStore,
        clock: Callable[[], float] = time.time,
        usage_source: BrokerUsageSource | None = None,
    ) -> None:
        self._reader = reader
        self._store = store
        self._clock = clock
        self._usage_source = usage_source
        self._previous: Observation | None = None

    def sample_once(self) -> PassResult:
        current = observe(self._reader, self._clock)
        written = 0
        usage: Mapping[int, BrokerUsage] = {}
        usage_error = None
        if self._previous is not None:
            if self._usage_source is not None:
                try:
                    usage = self._usage_source.usage(current.ts_ms, current.ts_ms - self._previous.ts_ms)
                except MetricsSourceError as err:
                    usage_error = str(err)
            partitions, brokers = samples_between(self._previous, current, usage)
            self._store.append(current.ts_ms, partitions, brokers)
            written = partitions.num_rows
        self._previous = current
        return PassResult(current, written, usage, usage_error)

    def run(
        self,
        passes: int,
        interval_s: float,
        on_pass: Callable[[int, PassResult], None] = lambda i, r: None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> list[PassResult]:
        """``passes`` passes, each starting ``interval_s`` after the previous one started."""
        results = []
        next_start = time.monotonic()
        for i in range(passes):
            sleep(max(0.0, next_start - time.monotonic()))
            next_start = time.monotonic() + interval_s
            result = self.sample_once()
            results.append(result)
            on_pass(i, result)
        return results


def total_requests(results: Iterable[PassResult]) -> Counter[str]:
    total: Counter[str] = Counter()
    for r in results:
        total.update(r.observation.requests)
    return total
