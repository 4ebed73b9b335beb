"""Moves of replicas between a broker's own log dirs (JBOD), as the executor sees and steers them.

Kafka moves a replica between dirs with AlterReplicaLogDirs: the broker copies it into a *future*
replica in the new dir and swaps it in once caught up. A broker asked about a replica it does not host
yet remembers the dir (the reassignment then creates the replica there) and answers
ReplicaNotAvailable, so, like Kafka's own reassignment tool, the executor asks before the
reassignment and again each round until the broker accepts. Done means seen: DescribeLogDirs shows
the replica in its planned dir and no future replica left.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kafka_balancer.kafka.admin import LogDirState
from kafka_balancer.kafka.execution_state import Move
from kafka_balancer.kafka.port import AdminPort

Replica = tuple[str, int, int]  # topic, partition, broker
# What a broker answers while it does not host the replica yet: asked again next round.
NOT_HOSTED_YET = "ReplicaNotAvailableError"


@dataclass(frozen=True)
class ReplicaDir:
    """Where a broker keeps one replica: its dir (None: not hosted) and any future replica's."""

    current: str | None = None
    future: str | None = None
    future_bytes: int = 0


def replica_dirs(admin: AdminPort, brokers: Iterable[int]) -> dict[Replica, ReplicaDir]:
    """Every replica of ``brokers`` with its log dir and future log dir."""
    found: dict[Replica, ReplicaDir] = {}
    for broker, dirs in admin.log_dirs(brokers).items():
        for replica, path, future, size in _listed(broker, dirs):
            seen = found.get(replica, ReplicaDir())
            if future:
                found[replica] = ReplicaDir(seen.current, path, size)
            else:
                found[replica] = ReplicaDir(path, seen.future, seen.future_bytes)
    return found


def _listed(broker: int, dirs: Iterable[LogDirState]) -> Iterable[tuple[Replica, str, bool, int]]:
    for d in dirs:
        for (topic, partition), size in d.replicas.items():
            yield (topic, partition, broker), d.path, False, size
        for (topic, partition), size in d.future.items():
            yield (topic, partition, broker), d.path, True, size


def dir_brokers(moves: Iterable[Move]) -> set[int]:
    """The brokers whose dirs tell how ``moves`` stand."""
    return {b for m in moves for b in m.dir_targets}


def to_ask(move: Move, dirs: Mapping[Replica, ReplicaDir]) -> dict[Replica, str]:
    """The replicas of this step still to be sent to their dir: neither there nor being copied there."""
    asks = {}
    for broker, path in move.dir_targets.items():
        if broker not in move.target:
            continue
        seen = dirs.get((move.topic, move.partition, broker), ReplicaDir())
        if seen.current != path and seen.future != path:
            asks[(move.topic, move.partition, broker)] = path
    return asks


def dir_progress(move: Move, dirs: Mapping[Replica, ReplicaDir]) -> int:
    """Bytes copied between dirs for the replicas the brokers had before the move."""
    copied = 0
    for broker, path in move.dir_targets.items():
        if broker not in move.original:
            continue
        seen = dirs.get((move.topic, move.partition, broker), ReplicaDir())
        if seen.current == path and seen.future is None:
            copied += move.size
        elif seen.future == path:
            copied += min(seen.future_bytes, move.size)
    return copied


def misplaced(move: Move, dirs: Mapping[Replica, ReplicaDir]) -> list[str]:
    """What keeps the move's replicas from being in their planned dirs (empty: all in place)."""
    problems = []
    for broker, path in sorted(move.dir_targets.items()):
        seen = dirs.get((move.topic, move.partition, broker), ReplicaDir())
        name = f"{move.topic}-{move.partition} on broker {broker}"
        if seen.current != path:
            problems.append(f"{name} in log dir {seen.current}, planned {path}")
        elif seen.future is not None:
            problems.append(f"{name} still has a future replica in {seen.future}")
    return problems


def stop_copies(admin: AdminPort, moves: Iterable[Move]) -> dict[Replica, str]:
    """Stop the copies between dirs of ``moves``: each replica with a future one is sent back to the
    dir it is in, which drops the future replica (as Kafka's tool cancels). Returns the refused."""
    moves = [m for m in moves if m.dir_targets]
    if not moves:
        return {}
    # A broker that is down copies nothing meanwhile; a copy it resumes once back is left to finish.
    dirs = replica_dirs(admin, dir_brokers(moves) & admin.broker_ids())
    back = {
        (m.topic, m.partition, b): seen.current
        for m in moves
        for b in m.dir_targets
        if (seen := dirs.get((m.topic, m.partition, b))) is not None
        and seen.future is not None
        and seen.current is not None
    }
    return admin.alter_replica_log_dirs(back) if back else {}
