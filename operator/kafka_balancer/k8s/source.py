"""A pool's cluster as the collector sees it: metadata, racks and per-partition loads.

Each read is one collector pass. The samples between two passes are appended to the pool's durable
sample store (``<state dir>/samples/<namespace>.<pool>/``, pruned to the scoring retention) and the
Spark scoring job runs on that store in the background (``scored_loads``). Loads are the newest scored
ones for every partition the job modelled, merged with the current metadata (which always comes from
the latest pass); partitions it did not model yet, and every partition before the first run
completes, get the loads of the last two passes, computed here in Python.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from kafka_balancer.api import API_VERSION, BalancerGoalSpec, BrokerPoolSpec, Scoring
from kafka_balancer.errors import InputError, KafkaOperationError, MetricsSourceError, ScoringError
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.port import KubePort, PoolId
from kafka_balancer.k8s.prometheus_secrets import PoolSecrets, prometheus_settings
from kafka_balancer.k8s.scored_loads import BackgroundScoring, Loads, pass_times, prune
from kafka_balancer.k8s.settings import OperatorSettings
from kafka_balancer.k8s.spark_application import SparkApplicationScorer
from kafka_balancer.k8s.spark_submit import SparkSubmitScorer
from kafka_balancer.kafka.collector import Observation, observe_cluster, samples_between
from kafka_balancer.kafka.log_dir_snapshot import replica_dirs
from kafka_balancer.kafka.sample_store import SampleStore
from kafka_balancer.kafka.snapshot_builder import Capacities, build_snapshot
from kafka_balancer.model.cluster import PartitionLoad
from kafka_balancer.prometheus.source import PrometheusSource
from kafka_balancer.reconcile.pool_input import LoadSource, UsageSource
from kafka_balancer.reconcile.snapshot import ClusterMetadata, PartitionMeta, broker_capacity, no_rack
from kafka_balancer.samples.broker_usage import BrokerUsage
from kafka_balancer.scoring.launch import EmbeddedScorer, Scorer, ScoringRequest

log = logging.getLogger(__name__)

# The snapshot builder wants capacities; only its loads are used here (the pool's spec gives capacity).
_UNUSED_CAPACITY = Capacities({}, default=(1.0, 1.0, 1.0, 1.0))


class ClusterSource:
    """Each pool's previous pass, keyed by ``namespace/name``; scoring is off without a state dir."""

    def __init__(
        self,
        state_dir: Path | None = None,
        scoring: BackgroundScoring | None = None,
        clock: Callable[[], float] = time.time,
        secrets: PoolSecrets | None = None,
    ) -> None:
        self._previous: dict[str, Observation] = {}
        # What the last read of each pool used: Spark-scored loads or the collector's, and why.
        self.load_sources: dict[str, LoadSource] = {}
        # Where the last read of each pool got broker cpu and network (spec.prometheus), and why not.
        self.usage_sources: dict[str, UsageSource] = {}
        # Why the last read of each pool had no log dirs (None: it had them), to log changes only.
        self._no_log_dirs: dict[str, str | None] = {}
        self._state_dir = state_dir
        self.scoring = scoring
        self._clock = clock
        self._secrets = secrets

    @classmethod
    def for_operator(
        cls, kube: KubePort, settings: OperatorSettings, metrics: OperatorMetrics
    ) -> ClusterSource:
        state_dir = settings.state_dir
        embedded = EmbeddedScorer(state_dir / "scoring", jobs=settings.limits.embedded_jobs)
        spark = settings.spark

        def scorer_for(spec: Scoring) -> Scorer:
            if spec.engine != "SparkOnKubernetes":
                return embedded
            if spark is None:
                raise ScoringError(
                    "scoring.engine SparkOnKubernetes needs shared storage for the driver: "
                    "set the chart's scoring.volume or scoring.storage"
                )
            if spec.launcher == "SparkApplication":
                return SparkApplicationScorer(kube, spark)
            return SparkSubmitScorer(kube, spark)

        scoring = BackgroundScoring(scorer_for, settings.scoring, observe=metrics.scoring_run)
        return cls(state_dir, scoring, secrets=PoolSecrets(kube.read_secret, state_dir / "tls"))

    def read(
        self,
        pool: PoolId,
        spec: BrokerPoolSpec,
        props: Mapping[str, str],
        goals: Sequence[tuple[str, BalancerGoalSpec]] = (),
    ) -> tuple[ClusterMetadata, Loads]:
        """Blocking (one Admin API pass); never waits for Spark."""
        key = pool.key
        bootstrap = spec.connection().bootstrap_servers
        current = observe_cluster(bootstrap, props)
        previous = self._previous.get(key)
        self._previous[key] = current
        samples = None
        if previous is not None and current.ts_ms > previous.ts_ms:
            usage = self._usage(pool, spec, current, current.ts_ms - previous.ts_ms)
            samples = samples_between(previous, current, usage)
        elif key not in self.usage_sources or spec.prometheus is None:
            url = spec.prometheus.url if spec.prometheus else None
            self.usage_sources[key] = UsageSource(url)
        metadata = with_log_dirs(metadata_of(current), current, spec)
        if metadata.no_log_dirs != self._no_log_dirs.get(key):
            # Once per change, not per pass: a cluster without JBOD would say it at every sync.
            if metadata.no_log_dirs is None:
                log.info("pool %s: log dirs known for every broker", key)
            else:
                log.info("pool %s: planned without log dirs: %s", key, metadata.no_log_dirs)
        self._no_log_dirs[key] = metadata.no_log_dirs
        loads = loads_from(current, previous, samples)
        if self.scoring is None or self._state_dir is None:
            return metadata, loads
        store = SampleStore(self._state_dir / "samples" / f"{pool.namespace}.{pool.name}")
        if samples is not None:
            store.append(current.ts_ms, *samples)
        now_ms = int(self._clock() * 1000)
        if not self.scoring.running(key):  # a running job may be listing these files
            prune(store.root, now_ms - self.scoring.schedule.retention_ms)
        times = pass_times(store.root)
        # The job needs one complete window of history; before that a run could only fail.
        if times and times[-1] - times[0] >= self.scoring.schedule.window_ms:
            self.scoring.submit(
                key, spec.scoring.engine, self._request(pool, spec, goals, current, store, times[-1])
            )
        scored = self.scoring.latest(key, now_ms)
        self.load_sources[key] = LoadSource(
            scored is not None, self.scoring.error(key), scored.engine if scored else None
        )
        if scored is None:
            return metadata, loads
        return metadata, merge_loads(metadata, loads, scored.loads)

    def _usage(
        self, pool: PoolId, spec: BrokerPoolSpec, current: Observation, interval_ms: int
    ) -> dict[int, BrokerUsage]:
        """Broker cpu and network of the interval ending at ``current`` from ``spec.prometheus``;
        empty without it or when it fails (recorded in ``usage_sources``: the planner goes on with
        cpu unknown). Ids that are no broker of the cluster (a label ending in a port) are dropped."""
        key = pool.key
        if spec.prometheus is None:
            self.usage_sources[key] = UsageSource(None)
            return {}
        try:
            source = PrometheusSource(prometheus_settings(spec.prometheus, pool, self._secrets))
        except InputError as err:
            self.usage_sources[key] = UsageSource(spec.prometheus.url, error=str(err))
            return {}
        try:
            answered = source.usage(current.ts_ms, interval_ms)
        except MetricsSourceError as err:
            self.usage_sources[key] = UsageSource(spec.prometheus.url, error=str(err))
            return {}
        finally:
            source.close()
        brokers = {b.id for b in current.brokers}
        usage = {broker: used for broker, used in answered.items() if broker in brokers}
        self.usage_sources[key] = UsageSource(spec.prometheus.url, brokers=len(usage))
        return usage

    def _request(
        self,
        pool: PoolId,
        spec: BrokerPoolSpec,
        goals: Sequence[tuple[str, BalancerGoalSpec]],
        current: Observation,
        store: SampleStore,
        newest_ms: int,
    ) -> ScoringRequest:
        assert self.scoring is not None
        return ScoringRequest(
            namespace=pool.namespace,
            pool=pool.name,
            pool_uid=pool.uid,
            run=f"{newest_ms:013d}",  # names sort by time; the same samples give the same run
            samples=store.root,
            topology=topology_document(current, spec),
            goals=goals_document(goals),
            window_ms=self.scoring.schedule.window_ms,
            windows=self.scoring.schedule.windows,
            spec=spec.scoring,
        )

    def forget(self, key: str) -> None:
        self._previous.pop(key, None)
        self.usage_sources.pop(key, None)
        self._no_log_dirs.pop(key, None)
        if self.scoring is not None:
            self.scoring.forget(key)


def topology_document(obs: Observation, spec: BrokerPoolSpec) -> dict[str, Any]:
    """The job's ``--topology``: the brokers of the latest pass with the pool's capacities.

    Offline brokers that partitions still name are included (rack unknown), so a broker restart
    during a window does not make the job refuse the samples."""
    brokers = []
    for broker_id, rack in sorted(metadata_of(obs).brokers.items()):
        disk, net_in, net_out, cpu = broker_capacity(spec.capacity, broker_id)
        brokers.append(
            {
                "id": broker_id,
                "rack": rack or no_rack(broker_id),
                "state": "draining" if broker_id in spec.drain else "active",
                "capacity": {"disk": disk, "networkIn": net_in, "networkOut": net_out, "cpu": cpu},
            }
        )
    return {"brokers": brokers}


def goals_document(goals: Sequence[tuple[str, BalancerGoalSpec]]) -> dict[str, Any]:
    """The job's ``--goals``: the pool's goals as a ``v1`` List of manifests (empty: the default set)."""
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": API_VERSION,
                "kind": "BalancerGoal",
                "metadata": {"name": name},
                "spec": goal.model_dump(by_alias=True, exclude_none=True),
            }
            for name, goal in goals
        ],
    }


def merge_loads(metadata: ClusterMetadata, collected: Loads, scored: Loads) -> Loads:
    """Scored loads for the partitions that still exist; the collector's for the others."""
    merged = dict(collected)
    for p in metadata.partitions:
        found = scored.get((p.topic, p.partition))
        if found is not None:
            merged[(p.topic, p.partition)] = found
    return merged


def metadata_of(obs: Observation) -> ClusterMetadata:
    brokers = {b.id: b.rack or "" for b in obs.brokers}
    live = frozenset(brokers)
    # A replica on a broker missing from the metadata (offline) still counts: it must be planned around.
    for info in obs.partitions.values():
        for replica in info.replicas:
            brokers.setdefault(replica, "")
    # A partition another tool is reassigning shows the union of its old and new replicas; it is
    # planned where it is going, and left where it is (see PartitionMeta.reassigning).
    partitions = tuple(
        PartitionMeta(
            topic,
            pid,
            obs.reassigning.get((topic, pid), info.replicas),
            info.leader,
            reassigning=(topic, pid) in obs.reassigning,
        )
        for (topic, pid), info in sorted(obs.partitions.items())
    )
    return ClusterMetadata(brokers, partitions, frozenset(brokers) - live)


def with_log_dirs(metadata: ClusterMetadata, obs: Observation, spec: BrokerPoolSpec) -> ClusterMetadata:
    """``metadata`` with the log dirs of the pass, all or nothing: a broker that is down (or did not
    answer) leaves them out, and ``no_log_dirs`` says why."""
    if metadata.offline:
        return replace(
            metadata, no_log_dirs=f"broker(s) {sorted(metadata.offline)} down: their log dirs unknown"
        )
    found = replica_dirs(
        obs.log_dirs,
        {b: broker_capacity(spec.capacity, b)[0] for b in metadata.brokers},
        {(p.topic, p.partition): p.replicas for p in metadata.partitions if p.replicas},
    )
    if isinstance(found, str):
        return replace(metadata, no_log_dirs=found)
    partitions = tuple(
        replace(p, log_dirs=found.partitions[(p.topic, p.partition)]) if p.replicas else p
        for p in metadata.partitions
    )
    return replace(metadata, partitions=partitions, log_dirs=dict(found.brokers))


def loads_from(
    current: Observation, previous: Observation | None, samples: tuple[pa.Table, pa.Table] | None
) -> Loads:
    """Loads of the interval between two passes; sizes only (no traffic) without a previous pass."""
    sizes_only = {tp: PartitionLoad(float(size), 0.0, 0.0, 0.0) for tp, size in current.sizes.items()}
    if previous is None or samples is None:
        return sizes_only
    partition_samples, broker_samples = samples
    try:
        document = build_snapshot(
            current.brokers,
            _UNUSED_CAPACITY,
            partition_samples,
            broker_samples,
            current.ts_ms - previous.ts_ms + 1,
        )
    except KafkaOperationError:  # a replica on an offline broker: sizes are still right
        return sizes_only
    return {
        (p["topic"], p["partition"]): PartitionLoad(
            p["load"]["disk"],
            p["load"]["networkIn"],
            p["load"]["networkOut"],
            p["load"]["cpu"],
            p["load"]["followerCpu"],
        )
        for p in document["partitions"]
    }
