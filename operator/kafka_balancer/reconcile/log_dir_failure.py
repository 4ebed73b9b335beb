"""A log dir (JBOD disk) that went offline under a live broker: the pool's ``LogDirFailure`` condition
and its events.

Kafka 4.3 takes such a dir offline, moves leadership off its replicas and leaves them out of the
ISR for good: it neither recreates them nor lets AlterReplicaLogDirs move them to another dir of the
broker (KAFKA_STORAGE_ERROR). So with ``spec.selfHealing.enabled`` the planner re-homes them on other
brokers, same rack first, as it does a failed broker's, and the plan runs without approval in mode
Manual too; at once, not after ``brokerFailureSeconds``: a dir comes back only with a broker
restart, which the pool sees as a missing broker anyway.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafka_balancer.reconcile.approval import HEALS_LOG_DIRS
from kafka_balancer.reconcile.conditions import FALSE, TRUE, Condition
from kafka_balancer.reconcile.events import Event, sentence
from kafka_balancer.reconcile.snapshot import ClusterMetadata

CONDITION = "LogDirFailure"
OFFLINE_REASON = "LogDirsOffline"


def named(offline: Sequence[tuple[int, str]]) -> str:
    return ", ".join(f"{path} of broker {broker}" for broker, path in offline)


def failed_disks(metadata: ClusterMetadata) -> list[int]:
    """The brokers with an offline dir that still holds replicas: those healing would copy data for,
    counted in spec.selfHealing's guard with the failed brokers."""
    return sorted({b for b, path in metadata.offline_log_dirs() if metadata.replicas_in(b, path)})


def repairs(metadata: ClusterMetadata) -> str | None:
    """What a plan heals by re-homing the replicas of offline dirs (a plan's ``repairs``), if any."""
    offline = metadata.offline_log_dirs()
    held = [(b, path) for b, path in offline if metadata.replicas_in(b, path)]
    return f"{HEALS_LOG_DIRS} {named(held)}" if held else None


def log_dir_conditions(metadata: ClusterMetadata, healing: bool, guarded: bool = False) -> list[Condition]:
    """True while a live broker reports a log dir offline (which, how many replicas, what happens:
    ``guarded`` when spec.selfHealing's guard holds healing back); False with self-healing on and
    every dir online; none when the pass could not read the dirs."""
    offline = metadata.offline_log_dirs()
    if not offline:
        if not healing or not metadata.log_dirs:
            return []
        return [Condition(CONDITION, FALSE, "AllLogDirsOnline", "every log dir of every broker is online")]
    parts = [
        f"log dir {path} of broker {b} is offline ({metadata.replicas_in(b, path)} replicas)"
        for b, path in offline
    ]
    if healing and guarded:
        what = "not healed while spec.selfHealing's guard holds (see BrokerFailure)"
    elif healing:
        what = "their replicas are re-homed to other brokers, same rack first"
    else:
        what = "spec.selfHealing.enabled is false: not healed, the partitions stay under-replicated"
    return [Condition(CONDITION, TRUE, OFFLINE_REASON, f"{'; '.join(parts)}: {what}")]


def log_dir_events(metadata: ClusterMetadata, healing: bool, status: Mapping[str, Any]) -> list[Event]:
    """``LogDirOffline`` (Warning) for each dir newly offline; ``LogDirHealed`` for each once every
    replica it held is on another broker. What the previous pass saw is its condition's message."""
    before = next((c for c in status.get("conditions") or [] if c.get("type") == CONDITION), None)
    was = before.get("message", "") if before is not None and before.get("status") == TRUE else ""
    events = []
    for broker, path in metadata.offline_log_dirs():
        count = metadata.replicas_in(broker, path)
        if f"log dir {path} of broker {broker} is offline" in was:
            if count == 0 and f"log dir {path} of broker {broker} is offline (0 replicas)" not in was:
                text = (
                    f"Log dir {path} of broker {broker} is healed: every replica it held is on another broker"
                )
                events.append(Event("Normal", "LogDirHealed", sentence(text)))
            continue
        text = f"Log dir {path} of broker {broker} is offline with {count} replica(s) on it; " + (
            "they are re-homed to other brokers, same rack first"
            if healing
            else "spec.selfHealing.enabled is false: not healed"
        )
        events.append(Event("Warning", "LogDirOffline", sentence(text)))
    return events
