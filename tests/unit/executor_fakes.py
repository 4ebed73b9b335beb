"""An in-memory fake of the executor's admin port, for pure-logic unit tests only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafka_balancer.errors import KafkaOperationError, KafkaUnavailableError
from kafka_balancer.kafka.admin import LogDirState, OngoingReassignment, PartitionState, Tp

Replica = tuple[str, int, int]
DIRS = ("/data/0", "/data/1")


@dataclass
class FakeKafkaCluster:
    """Reassignments advance one ``tick()`` at a time: a fraction of bytes copied, then done; a
    reordering of the same replicas is done at once and keeps its leader."""

    brokers: frozenset[int]
    replicas: dict[Tp, tuple[int, ...]]
    sizes: dict[Tp, int]
    ticks_to_finish: int = 2
    stuck: set[Tp] = field(default_factory=set)
    configs: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    leaders: dict[Tp, int] = field(default_factory=dict)
    ongoing: dict[Tp, tuple[tuple[int, ...], int]] = field(default_factory=dict)
    submitted: list[dict[Tp, tuple[int, ...] | None]] = field(default_factory=list)
    throttled_when_submitted: list[dict[tuple[str, str], dict[str, str]]] = field(default_factory=list)
    elections: list[list[Tp]] = field(default_factory=list)
    ongoing_when_elected: list[set[Tp]] = field(default_factory=list)  # reassignments then in flight
    # Kafka keeps the in-flight order when a reassignment is cancelled: (3, 4) → (1, 4) reverts to (4, 3).
    reorder_on_cancel: bool = False
    racks: dict[int, str] = field(default_factory=dict)
    out_of_isr: dict[Tp, frozenset[int]] = field(default_factory=dict)  # replicas that fell behind
    min_isr: dict[str, int] = field(default_factory=dict)  # topic -> min.insync.replicas (default 1)
    id: str = "fake-cluster-Id_1"  # the Kafka cluster id
    cordoning: bool = True  # the brokers know cordoned.log.dirs (Kafka 4.3 and later)
    # Why Kafka's ACLs may hide topics from the principal (None: it sees them all).
    hidden: str | None = None
    # KRaft: a broker shows a config change a moment after the controller commits it; reads of a
    # resource show its configs from before the last change this many times.
    stale_config_reads: int = 0
    # The controller is down for this many ticks: what brokers forward to it gets no answer.
    controller_down_ticks: int = 0
    # Brokers' metadata lags the controller: a cancelled reassignment still shows its in-flight
    # replica set in this many reads of partitions() after Kafka stopped listing it.
    metadata_lag_reads: int = 0
    # JBOD: every broker has the dirs DIRS; a replica is in its placed dir (default the first one).
    # AlterReplicaLogDirs copies into a future replica over ``ticks_to_finish`` ticks; asked for a
    # replica it does not host, a broker remembers the dir for when the replica is created.
    placed: dict[Replica, str] = field(default_factory=dict)
    futures: dict[Replica, tuple[str, int]] = field(default_factory=dict)
    preferred: dict[Replica, str] = field(default_factory=dict)
    offline_dirs: set[tuple[int, str]] = field(default_factory=set)
    # False: a new replica lands in the first dir whatever the broker was told before it existed.
    honours_preferred_dir: bool = True
    dir_asks: list[dict[Replica, str]] = field(default_factory=list)
    throttled_when_dir_asked: list[dict[tuple[str, str], dict[str, str]]] = field(default_factory=list)
    _lagging: dict[Tp, tuple[tuple[int, ...], int]] = field(default_factory=dict)
    _stale: dict[tuple[str, str], tuple[dict[str, str], int]] = field(default_factory=dict)

    def tick(self, _seconds: float = 0.0) -> None:
        self.controller_down_ticks = max(0, self.controller_down_ticks - 1)
        for tp, (target, done) in list(self.ongoing.items()):
            if tp in self.stuck:
                continue
            if done + 1 >= self.ticks_to_finish:
                del self.ongoing[tp]
                self.replicas[tp] = target
            else:
                self.ongoing[tp] = (target, done + 1)
        for replica, (path, done) in list(self.futures.items()):
            if done + 1 >= self.ticks_to_finish:
                del self.futures[replica]
                self.placed[replica] = path
            else:
                self.futures[replica] = (path, done + 1)

    def delete_topic(self, topic: str) -> None:
        """Kafka deletes a topic with its partitions, its reassignments and its configs."""
        for tp in [tp for tp in self.replicas if tp[0] == topic]:
            del self.replicas[tp]
            self.ongoing.pop(tp, None)
        self.configs.pop(("topic", topic), None)

    def _exists(self, kind: str, name: str) -> bool:
        return kind != "topic" or any(t == name for t, _ in self.replicas)

    def cluster_id(self) -> str:
        return self.id

    def default_broker_configs(self, broker: int) -> dict[str, str]:
        return dict(self.configs.get(("broker", ""), {}))

    def broker_config_names(self, broker: int) -> frozenset[str]:
        known = {"log.retention.ms", "leader.replication.throttled.rate"}
        return frozenset(known | ({"cordoned.log.dirs"} if self.cordoning else set()))

    def leader(self, tp: Tp) -> int:
        return self.leaders.get(tp, self.replicas[tp][0])

    def broker_ids(self) -> frozenset[int]:
        return self.brokers

    def broker_racks(self) -> dict[int, str | None]:
        return {b: self.racks.get(b) for b in self.brokers}

    def hidden_topics(self) -> str | None:
        return self.hidden

    def partitions(self, topics: Iterable[str] | None = None) -> dict[Tp, PartitionState]:
        wanted = None if topics is None else set(topics)
        found = {}
        for tp, replicas in self.replicas.items():
            if wanted is None or tp[0] in wanted:
                shown = replicas
                if tp in self.ongoing:
                    target = self.ongoing[tp][0]
                    shown = target + tuple(b for b in replicas if b not in target)
                elif tp in self._lagging:
                    shown, reads_left = self._lagging.pop(tp)
                    if reads_left > 1:
                        self._lagging[tp] = (shown, reads_left - 1)
                isr = frozenset(replicas) - self.out_of_isr.get(tp, frozenset())
                found[tp] = PartitionState(shown, self.leader(tp), isr)
        return found

    def ask_controller(self, what: str) -> None:
        """Raises as a request Kafka forwards to its controller does while that does not answer."""
        if self.controller_down_ticks:
            raise KafkaUnavailableError(f"{what}: no answer within 30s: Kafka's controller did not answer")

    def partition_sizes(
        self, partitions: Iterable[Tp], brokers: Iterable[int] | None = None
    ) -> dict[tuple[str, int, int], int]:
        asked = self.brokers if brokers is None else frozenset(brokers)
        if asked - self.brokers:
            raise KafkaUnavailableError(f"describing log dirs: broker {sorted(asked - self.brokers)} is gone")
        sizes = {}
        for tp in partitions:
            if tp not in self.replicas:
                continue
            for broker in self.replicas[tp]:
                sizes[(tp[0], tp[1], broker)] = self.sizes[tp]
            if tp in self.ongoing:
                target, done = self.ongoing[tp]
                for broker in target:
                    if broker not in self.replicas[tp]:
                        sizes[(tp[0], tp[1], broker)] = self.sizes[tp] * done // self.ticks_to_finish
        return sizes

    def reassignments(self) -> dict[Tp, OngoingReassignment]:
        self.ask_controller("listing partition reassignments")
        return {
            tp: OngoingReassignment(target, tuple(b for b in target if b not in self.replicas[tp]), ())
            for tp, (target, _) in self.ongoing.items()
        }

    def alter_reassignments(self, targets: Mapping[Tp, tuple[int, ...] | None]) -> dict[Tp, str]:
        self.ask_controller("altering partition reassignments")
        self.submitted.append(dict(targets))
        self.throttled_when_submitted.append({k: dict(v) for k, v in self.configs.items() if v})
        refused = {}
        for tp, target in targets.items():
            if tp not in self.replicas:
                refused[tp] = "UnknownTopicOrPartitionError"
            elif target is None:
                cancelled = self.ongoing.pop(tp, None)
                original = self.replicas[tp]
                if cancelled is not None and self.metadata_lag_reads:
                    in_flight = cancelled[0] + tuple(b for b in original if b not in cancelled[0])
                    self._lagging[tp] = (in_flight, self.metadata_lag_reads)
                if cancelled is not None and self.reorder_on_cancel:
                    self.replicas[tp] = tuple(b for b in cancelled[0] + original if b in original)
            elif set(target) == set(self.replicas[tp]) and tp not in self.ongoing:
                # Kafka takes a reordering of the same replicas at once (nothing to copy) and keeps
                # the leader: only an election makes the new first replica lead.
                self.leaders.setdefault(tp, self.leader(tp))
                self.replicas[tp] = target
            else:
                self.ongoing[tp] = (target, 0)
                for broker in target:
                    if broker not in self.replicas[tp]:
                        replica = (tp[0], tp[1], broker)
                        preferred = self.preferred.pop(replica, DIRS[0])
                        self.placed[replica] = preferred if self.honours_preferred_dir else DIRS[0]
        return refused

    def _hosts(self, replica: Replica) -> bool:
        tp, broker = replica[:2], replica[2]
        return broker in self.replicas[tp] or (tp in self.ongoing and broker in self.ongoing[tp][0])

    def dir_of(self, replica: Replica) -> str:
        return self.placed.get(replica, DIRS[0])

    def log_dirs(self, brokers: Iterable[int]) -> dict[int, tuple[LogDirState, ...]]:
        found = {}
        for broker in brokers:
            if broker not in self.brokers:
                raise KafkaUnavailableError(f"describing log dirs: broker {broker} is gone")
            hosted = [(t, p, broker) for (t, p) in self.replicas if self._hosts((t, p, broker))]
            found[broker] = tuple(
                LogDirState(
                    path,
                    (broker, path) not in self.offline_dirs,
                    10**12,
                    {r[:2]: self.sizes[r[:2]] for r in hosted if self.dir_of(r) == path},
                    {
                        r[:2]: self.sizes[r[:2]] * done // self.ticks_to_finish
                        for r, (future, done) in self.futures.items()
                        if r[2] == broker and future == path
                    },
                )
                for path in DIRS
            )
        return found

    def alter_replica_log_dirs(self, targets: Mapping[Replica, str]) -> dict[Replica, str]:
        self.dir_asks.append(dict(targets))
        self.throttled_when_dir_asked.append({k: dict(v) for k, v in self.configs.items() if v})
        refused = {}
        for replica, path in targets.items():
            if path not in DIRS:
                refused[replica] = "LogDirNotFoundError"
            elif (replica[2], path) in self.offline_dirs:
                refused[replica] = "KafkaStorageError"
            elif not self._hosts(replica):
                self.preferred[replica] = path
                refused[replica] = "ReplicaNotAvailableError"
            elif self.dir_of(replica) == path:
                self.futures.pop(replica, None)  # back to its own dir: the copy is dropped
            elif self.futures.get(replica, ("", 0))[0] != path:
                self.futures[replica] = (path, 0)
        return refused

    def dynamic_configs(self, kind: str, names: Iterable[str]) -> dict[str, dict[str, str]]:
        found = {}
        for name in names:
            if not self._exists(kind, name):
                continue  # as Kafka's admin port: a topic that does not exist is absent
            shown, reads_left = self._stale.pop((kind, name), (self.configs.get((kind, name), {}), 0))
            if reads_left > 1:
                self._stale[(kind, name)] = (shown, reads_left - 1)
            found[name] = dict(shown)
        return found

    def min_insync_replicas(self, topics: Iterable[str]) -> dict[str, int]:
        return {t: self.min_isr.get(t, 1) for t in topics if self._exists("topic", t)}

    def alter_configs(
        self, kind: str, name: str, set_: Mapping[str, str], delete: Iterable[str] = ()
    ) -> None:
        self.ask_controller(f"altering configs of {kind} {name}")
        if kind == "broker" and int(name) not in self.brokers:
            # KRaft: only the broker itself (or the controller quorum) takes its config.
            raise KafkaOperationError(f"altering configs of broker {name}: broker not available")
        if not self._exists(kind, name):
            return
        current = self.configs.setdefault((kind, name), {})
        if self.stale_config_reads:
            self._stale[(kind, name)] = (dict(current), self.stale_config_reads)
        current.update(set_)
        for key in delete:
            current.pop(key, None)

    def elect_preferred_leaders(self, partitions: Iterable[Tp]) -> dict[Tp, str]:
        chosen = list(partitions)
        self.elections.append(chosen)
        self.ongoing_when_elected.append(set(self.ongoing))
        for tp in chosen:
            self.leaders.pop(tp, None)
        return {}


class FakeClock:
    """Time that only moves when the executor sleeps, which also advances the fake cluster."""

    def __init__(self, cluster: FakeKafkaCluster) -> None:
        self.now = 1000.0
        self.cluster = cluster

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.cluster.tick()
