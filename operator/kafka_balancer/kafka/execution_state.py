"""The execution state file: the plan, each move's status, the throttles we set, progress.

It is written atomically after every step, so a crashed or killed executor resumes from it with no
move lost, duplicated or reverted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from kafka_balancer.errors import InputError
from kafka_balancer.formats.plan_file import write_json_atomically
from kafka_balancer.model.plan import ANY_LOG_DIR

STATE_VERSION = 1

# The only configs an execution ever sets or removes: Kafka's replication throttles. A record names the
# ones it set; whatever else a record names (it is a file or a ConfigMap that others can edit) is
# dropped as it is read, so no record can make the executor remove another config, such as a
# compacted topic's ``cleanup.policy``.
BROKER_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
INTRA_BROKER_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
ALL_BROKER_RATES = (*BROKER_RATES, INTRA_BROKER_RATE)
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
TOPIC_REPLICAS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)


class MoveStatus(StrEnum):
    PENDING = "pending"
    IN_FLIGHT = "in-flight"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"
    # Left alone: its topic was deleted, or someone else changed its replicas, during the execution.
    SKIPPED = "skipped"


# Why a move whose partition is gone from the metadata was skipped: partitions only grow, so it went
# with its topic (Kafka drops a deleted topic's reassignments and configs with it).
TOPIC_DELETED = "its topic was deleted during the execution"


@dataclass(frozen=True)
class Move:
    """One partition of the plan: from ``source`` to ``target`` (``target[0]`` leads afterwards).

    Moved a few replicas at a time (:mod:`~kafka_balancer.kafka.steps`), ``source`` and ``target``
    are the current step's, ``origin`` and ``planned`` the partition's replicas before the first
    step and in the plan; both are empty when the move is one reassignment. ``log_dirs`` is the
    plan's log dir of each replica of ``final`` (AlterReplicaLogDirs moves it there); the move is
    done once the replicas are ``final`` and every named dir holds its replica, with no future one.
    """

    topic: str
    partition: int
    source: tuple[int, ...]
    target: tuple[int, ...]
    size: int = 0
    status: MoveStatus = MoveStatus.PENDING
    reason: str = ""
    started_at: float | None = None
    finished_at: float | None = None
    progress_bytes: int = 0
    progress_at: float | None = None
    origin: tuple[int, ...] = ()
    planned: tuple[int, ...] = ()
    # When the executor elected the planned leader of this reordering as soon as it was done (or
    # saw it in place already): never asked again on resume; the end of the plan settles the rest.
    leader_elected_at: float | None = None
    # Aligned with ``final``, ``ANY_LOG_DIR`` where the plan leaves the dir to the broker; empty when
    # no replica of the partition changes log dir.
    log_dirs: tuple[str, ...] = ()
    # Brokers whose AlterReplicaLogDirs for this move Kafka accepted (asked again only while their
    # replica is neither in its dir nor being copied there).
    dirs_asked: tuple[int, ...] = ()
    # Bytes copied between log dirs so far (replicas in their dir, plus future replicas' sizes).
    dir_progress_bytes: int = 0

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def original(self) -> tuple[int, ...]:
        return self.origin or self.source

    @property
    def final(self) -> tuple[int, ...]:
        return self.planned or self.target

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.source)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.source if b not in self.target)

    @property
    def dir_targets(self) -> dict[int, str]:
        """Broker → the log dir the plan puts its replica in, for the replicas whose dir it names."""
        if not self.log_dirs:
            return {}
        return {b: d for b, d in zip(self.final, self.log_dirs, strict=True) if d != ANY_LOG_DIR}

    @property
    def reorders_only(self) -> bool:
        """The whole move only changes the replicas' order, hence the preferred leader: no copy."""
        return set(self.original) == set(self.final) and not self.dir_targets

    @property
    def replicating(self) -> frozenset[int]:
        """Brokers that send or receive replication traffic in this step (none for a reorder)."""
        if not self.adding:
            return frozenset()
        return frozenset(self.adding) | frozenset(self.source)

    @property
    def dir_copying(self) -> frozenset[int]:
        """Brokers of this step whose replica the plan puts in a named log dir: each may copy it
        from one of its dirs to another (disk I/O on that broker, throttled apart)."""
        return frozenset(b for b in self.dir_targets if b in self.target)

    @property
    def brokers(self) -> frozenset[int]:
        """Brokers that send, receive or copy data between their own dirs for this move (none for a
        leadership-only reorder)."""
        return self.replicating | self.dir_copying

    def idle_seconds(self, now: float) -> float:
        """How long an in-flight move has copied nothing (since it started, before its first byte)."""
        return now - (self.progress_at or self.started_at or now)

    @property
    def bytes_total(self) -> int:
        return self.size * len(set(self.final) - set(self.original))

    @property
    def bytes_done(self) -> int:
        if self.status is MoveStatus.DONE:
            return self.bytes_total
        earlier_steps = self.bytes_total - self.size * len(set(self.final) - set(self.source))
        return earlier_steps + min(self.progress_bytes, self.size * len(self.adding))

    @property
    def dir_bytes_total(self) -> int:
        """Bytes copied between log dirs: a replica the broker had before the move, put in a named dir
        (a new replica is made in its dir by the reassignment's own copy)."""
        return self.size * sum(1 for b in self.dir_targets if b in self.original)

    @property
    def dir_bytes_done(self) -> int:
        if self.status is MoveStatus.DONE:
            return self.dir_bytes_total
        return min(self.dir_progress_bytes, self.dir_bytes_total)


class MoveOrder(StrEnum):
    """Which pending moves start first when not all fit in a batch."""

    PLAN = "plan"  # as the plan lists them: whoever wrote it chose
    SMALLEST_FIRST = "smallest-first"  # the most moves done early; the big copies at the end


@dataclass(frozen=True)
class ExecutionState:
    """Everything the executor needs to resume; ``throttled_*`` name the configs WE set, per resource."""

    moves: tuple[Move, ...]
    created_at: float
    updated_at: float
    throttle_rate: int | None = None
    throttled_brokers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The rate our configs on each throttled broker carry (absent: unknown, e.g. from an earlier plan).
    broker_rates: Mapping[str, int] = field(default_factory=dict)
    throttled_topics: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    foreign_throttles: tuple[str, ...] = ()
    leadership_done: bool = False
    finished_at: float | None = None
    # At most this many new replicas per partition at once (0: each move is one reassignment).
    replicas_at_a_time: int = 0
    order: MoveOrder = MoveOrder.PLAN
    # Destination brokers this execution declared gone (left the cluster for the dead-broker
    # timeout): no move towards them starts again, even if they come back.
    gone_brokers: frozenset[int] = frozenset()
    # The next batch waits for its partitions' health (Executor.submit): why, and since when.
    waiting: str = ""
    waiting_since: float | None = None

    def with_move(self, move: Move) -> ExecutionState:
        return replace(self, moves=tuple(move if m.tp == move.tp else m for m in self.moves))

    def by_status(self, status: MoveStatus) -> list[Move]:
        return [m for m in self.moves if m.status is status]

    @property
    def bytes_total(self) -> int:
        return sum(m.bytes_total for m in self.moves)

    @property
    def bytes_done(self) -> int:
        return sum(m.bytes_done for m in self.moves)

    @property
    def dir_bytes_total(self) -> int:
        return sum(m.dir_bytes_total for m in self.moves)

    @property
    def dir_bytes_done(self) -> int:
        return sum(m.dir_bytes_done for m in self.moves)

    def plan_targets(self) -> dict[tuple[str, int], tuple[int, ...]]:
        return {m.tp: m.final for m in self.moves}

    def plan_log_dirs(self) -> dict[tuple[str, int], tuple[str, ...]]:
        """The plan's log dirs by (topic, partition), for the partitions whose dirs it names."""
        return {m.tp: m.log_dirs for m in self.moves if m.dir_targets}


def _move_from(doc: Mapping[str, Any]) -> Move:
    return Move(
        topic=str(doc["topic"]),
        partition=int(doc["partition"]),
        source=tuple(int(b) for b in doc["source"]),
        target=tuple(int(b) for b in doc["target"]),
        size=int(doc.get("size", 0)),
        status=MoveStatus(doc["status"]),
        reason=str(doc.get("reason", "")),
        started_at=doc.get("startedAt"),
        finished_at=doc.get("finishedAt"),
        progress_bytes=int(doc.get("progressBytes", 0)),
        progress_at=doc.get("progressAt"),
        origin=tuple(int(b) for b in doc.get("origin", ())),
        planned=tuple(int(b) for b in doc.get("planned", ())),
        leader_elected_at=doc.get("leaderElectedAt"),
        log_dirs=tuple(str(d) for d in doc.get("logDirs", ())),
        dirs_asked=tuple(int(b) for b in doc.get("dirsAsked", ())),
        dir_progress_bytes=int(doc.get("dirProgressBytes", 0)),
    )


def _move_doc(move: Move) -> dict[str, Any]:
    return {
        "topic": move.topic,
        "partition": move.partition,
        "source": list(move.source),
        "target": list(move.target),
        "size": move.size,
        "status": move.status.value,
        "reason": move.reason,
        "startedAt": move.started_at,
        "finishedAt": move.finished_at,
        "progressBytes": move.progress_bytes,
        "progressAt": move.progress_at,
        "origin": list(move.origin),
        "planned": list(move.planned),
        "leaderElectedAt": move.leader_elected_at,
        "logDirs": list(move.log_dirs),
        "dirsAsked": list(move.dirs_asked),
        "dirProgressBytes": move.dir_progress_bytes,
    }


def state_document(state: ExecutionState) -> dict[str, Any]:
    return {**state_head_document(state), "moves": moves_document(state.moves)}


def moves_document(moves: Sequence[Move]) -> list[dict[str, Any]]:
    return [_move_doc(m) for m in moves]


def state_head_document(state: ExecutionState) -> dict[str, Any]:
    """The state less its moves: what a mirror that stores the moves apart writes on every step."""
    return {
        "version": STATE_VERSION,
        "createdAt": state.created_at,
        "updatedAt": state.updated_at,
        "finishedAt": state.finished_at,
        "throttleRate": state.throttle_rate,
        "throttles": {
            "brokers": {k: list(v) for k, v in state.throttled_brokers.items()},
            "brokerRates": dict(state.broker_rates),
            "topics": {k: list(v) for k, v in state.throttled_topics.items()},
            "foreign": list(state.foreign_throttles),
        },
        "leadershipDone": state.leadership_done,
        "replicasAtATime": state.replicas_at_a_time,
        "order": state.order.value,
        "goneBrokers": sorted(state.gone_brokers),
        "waiting": state.waiting,
        "waitingSince": state.waiting_since,
        "bytesDone": state.bytes_done,
        "bytesTotal": state.bytes_total,
        "dirBytesDone": state.dir_bytes_done,
        "dirBytesTotal": state.dir_bytes_total,
    }


def _throttles(recorded: Mapping[str, Any], allowed: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Resource → the throttle configs recorded for it, less any name that is not a throttle of its kind."""
    return {str(k): tuple(str(n) for n in v if n in allowed) for k, v in recorded.items()}


def state_from_document(doc: Mapping[str, Any]) -> ExecutionState:
    throttles = doc.get("throttles", {})
    return ExecutionState(
        moves=tuple(_move_from(m) for m in doc["moves"]),
        created_at=float(doc["createdAt"]),
        updated_at=float(doc["updatedAt"]),
        throttle_rate=doc.get("throttleRate"),
        throttled_brokers=_throttles(throttles.get("brokers", {}), ALL_BROKER_RATES),
        broker_rates={str(k): int(v) for k, v in throttles.get("brokerRates", {}).items()},
        throttled_topics=_throttles(throttles.get("topics", {}), TOPIC_REPLICAS),
        foreign_throttles=tuple(throttles.get("foreign", [])),
        leadership_done=bool(doc.get("leadershipDone", False)),
        finished_at=doc.get("finishedAt"),
        replicas_at_a_time=int(doc.get("replicasAtATime", 0)),
        order=MoveOrder(doc.get("order", MoveOrder.PLAN.value)),
        gone_brokers=frozenset(int(b) for b in doc.get("goneBrokers", ())),
        waiting=str(doc.get("waiting", "")),
        waiting_since=doc.get("waitingSince"),
    )


def save_state(path: Path, state: ExecutionState) -> None:
    write_json_atomically(path, state_document(state))


def load_state(path: Path) -> ExecutionState:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("version") != STATE_VERSION:
            raise InputError(f"state file {path}: unsupported version {doc.get('version')!r}")
        return state_from_document(doc)
    except OSError as err:
        raise InputError(f"state file {path}: {err.strerror}") from err
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise InputError(f"state file {path} is malformed: {err}") from err
