"""A log dir that went offline under a live broker, as the pool sees it pass by pass: with
spec.selfHealing.enabled its replicas are re-homed on other brokers (same rack first) by a plan that
runs without approval in mode Manual too, and the status and events name the broker and the dir;
without self-healing nothing is planned about it and the status says so. And the operator's own
metadata: log dirs from the collector's DescribeLogDirs, all or nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.k8s.source import with_log_dirs
from kafka_balancer.kafka.admin import LogDirState
from kafka_balancer.kafka.collector import Observation, PartitionInfo, leader_sizes
from kafka_balancer.kafka.snapshot_builder import BrokerInfo
from kafka_balancer.model.cluster import LogDir
from kafka_balancer.reconcile.approval import Action, repair_opted_in
from kafka_balancer.reconcile.pool import PoolOutcome, decide_pool
from kafka_balancer.reconcile.snapshot import ClusterMetadata, PartitionMeta
from tests.unit.reconcile.test_self_healing import ORDERS, RACKS, condition, events, pool_input

DATA = ("/data/0", "/data/1")
T0 = 1_000_000.0


def jbod(
    offline: dict[int, str] | None = None, partitions: tuple[PartitionMeta, ...] = ORDERS
) -> ClusterMetadata:
    """ORDERS with two dirs a broker; each broker keeps partitions 0-3 in /data/0, 4-7 in /data/1."""
    offline = offline or {}
    dirs = {b: tuple(LogDir(d, 1.0e12, offline.get(b) != d) for d in DATA) for b in RACKS}
    parts = tuple(
        PartitionMeta(
            p.topic, p.partition, p.replicas, p.leader, tuple(DATA[p.partition // 4] for _ in p.replicas)
        )
        for p in partitions
    )
    return ClusterMetadata(dict(RACKS), parts, log_dirs=dirs)


def run(meta: ClusterMetadata, status: dict[str, Any] | None = None, **spec: Any) -> PoolOutcome:
    """A pass on ``meta`` after ``status``, by default that of a first pass with every dir online."""
    if status is None:
        status = decide_pool(pool_input({}, jbod(), T0 - 60, **dict(spec))).status.to_dict()
    return decide_pool(pool_input(status, meta, T0, **spec))


def test_the_replicas_of_an_offline_log_dir_leave_their_broker_for_its_rack_without_approval() -> None:
    outcome = run(jbod({4: "/data/1"}))

    status, reason, message = condition(outcome, "LogDirFailure")
    assert (status, reason) == ("True", "LogDirsOffline")
    assert "log dir /data/1 of broker 4 is offline (2 replicas)" in message
    assert "re-homed to other brokers, same rack first" in message
    assert (
        "Log dir /data/1 of broker 4 is offline with 2 replica(s) on it" in events(outcome)["LogDirOffline"]
    )
    plan = outcome.new_plan
    assert plan is not None and plan.repairs == "offline log dirs /data/1 of broker 4"
    assert repair_opted_in(plan.repairs, repair_hard_goals=False, heal_brokers=True)
    # Broker 4 keeps partitions 4-7 in /data/1, and holds 5 and 7 (ORDERS): those move to broker 1, the
    # other broker of rack a; its replicas in /data/0 stay, nothing else moves.
    before = {p.partition: p.replicas for p in ORDERS}
    assert sorted(r.partition for r in plan.reassignments) == [5, 7]
    for r in plan.reassignments:
        assert set(r.replicas) == set(before[r.partition]) - {4} | {1}
    assert outcome.decision.action is Action.EXECUTE


def test_once_re_homed_the_dir_is_healed_and_nothing_more_runs_unapproved() -> None:
    first = run(jbod({4: "/data/1"}))
    moved = tuple(
        PartitionMeta(
            p.topic,
            p.partition,
            tuple(1 if b == 4 and p.partition in (5, 7) else b for b in p.replicas),
            p.leader,
        )
        for p in ORDERS
    )
    healed = run(jbod({4: "/data/1"}, moved), first.status.to_dict())

    status, reason, message = condition(healed, "LogDirFailure")
    assert (status, reason) == ("True", "LogDirsOffline")
    assert "log dir /data/1 of broker 4 is offline (0 replicas)" in message
    assert "LogDirOffline" not in events(healed)
    assert "Log dir /data/1 of broker 4 is healed" in events(healed)["LogDirHealed"]
    # Broker 1 now holds two replicas more than its share: the goals may move some, as a plan to approve.
    assert healed.new_plan is None or healed.new_plan.repairs is None


def test_without_self_healing_an_offline_dir_is_reported_and_nothing_is_planned_about_it() -> None:
    outcome = run(jbod({4: "/data/1"}), selfHealing={"enabled": False})

    status, reason, message = condition(outcome, "LogDirFailure")
    assert (status, reason) == ("True", "LogDirsOffline")
    assert "spec.selfHealing.enabled is false: not healed" in message
    assert "not healed" in events(outcome)["LogDirOffline"]
    assert outcome.new_plan is None or outcome.new_plan.moves == 0


def test_offline_dirs_on_more_brokers_than_the_guard_allows_are_not_healed() -> None:
    outcome = run(jbod({4: "/data/1", 5: "/data/1"}), selfHealing={"maxFailedBrokers": 1})

    status, reason, message = condition(outcome, "BrokerFailure")
    assert (status, reason) == ("True", "TooManyFailedBrokers")
    assert "2 brokers [4, 5] failed or with an offline log dir at once" in message
    assert condition(outcome, "PlanReady")[:2] == ("False", "TooManyFailedBrokers")
    assert "not healed while spec.selfHealing's guard holds" in condition(outcome, "LogDirFailure")[2]
    assert outcome.new_plan is None
    # One broker's disk is within the same guard.
    assert run(jbod({4: "/data/1"}), selfHealing={"maxFailedBrokers": 1}).new_plan is not None


def test_every_dir_online_with_self_healing_is_a_false_condition() -> None:
    outcome = run(jbod())
    assert condition(outcome, "LogDirFailure")[:2] == ("False", "AllLogDirsOnline")
    assert outcome.new_plan is None or outcome.new_plan.moves == 0


def _state(path: str, online: bool, replicas: dict[tuple[str, int], int]) -> LogDirState:
    return LogDirState(path, online, 1_000 if online else None, replicas, {})


def _observation(dirs: Mapping[int, tuple[LogDirState, ...]]) -> Observation:
    partitions = {("t", 0): PartitionInfo((1, 2), 1, frozenset({1, 2}))}
    return Observation(0, (BrokerInfo(1, "a"), BrokerInfo(2, "b")), partitions, {}, {}, {}, {}, log_dirs=dirs)


def test_the_operator_metadata_carries_every_brokers_log_dirs_or_none_and_says_why() -> None:
    spec = BrokerPoolSpec.model_validate(
        {
            "kafka": {"bootstrapServers": "k:9092"},
            "capacity": {"disk": "1Ti", "networkIn": "1M", "networkOut": "1M", "cpu": 1},
        }
    )
    meta = ClusterMetadata({1: "a", 2: "b"}, (PartitionMeta("t", 0, (1, 2), 1),))
    dirs = {
        1: (_state("/d0", True, {("t", 0): 10}), _state("/d1", True, {})),
        # Broker 2's /d1 failed: it lists no replica there; the replica it does not list is in it.
        2: (_state("/d0", True, {}), _state("/d1", False, {})),
    }
    found = with_log_dirs(meta, _observation(dirs), spec)
    assert found.no_log_dirs is None
    assert found.partitions[0].log_dirs == ("/d0", "/d1")
    assert found.offline_log_dirs() == [(2, "/d1")]
    assert found.replicas_in(2, "/d1") == 1

    missing = with_log_dirs(meta, _observation({1: dirs[1]}), spec)
    assert missing.log_dirs == {} and missing.no_log_dirs == "broker 2 reported no log dir"
    down = with_log_dirs(
        ClusterMetadata(meta.brokers, meta.partitions, frozenset({2})), _observation(dirs), spec
    )
    assert down.log_dirs == {} and down.no_log_dirs is not None and "[2] down" in down.no_log_dirs


def test_the_leaders_size_comes_from_the_same_describe_log_dirs_answer() -> None:
    dirs = {
        1: (LogDirState("/d0", True, 1, {("t", 0): 50}, {}), LogDirState("/d1", True, 1, {}, {("t", 0): 70})),
        2: (LogDirState("/d0", True, 1, {("t", 0): 40, ("t", 1): 5}, {}),),
    }
    # A log-dir move in flight: the future replica is the larger, and the one that counts.
    assert leader_sizes(dirs, {("t", 0): 1, ("t", 1): 2, ("t", 2): 3}) == {("t", 0): 70, ("t", 1): 5}
