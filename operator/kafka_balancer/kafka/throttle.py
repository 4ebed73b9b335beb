"""Replication throttles: what the moves in flight need, and bringing the cluster to exactly that.

Brokers that send or receive replicas get Kafka's replication rates; brokers that copy a replica
between their own log dirs get the intra-broker rate (``replica.alter.log.dirs.io.max.bytes.per.second``),
both at the execution's throttle.

Only configs we set are ever changed or removed; a throttle someone else set is left alone. Every
config is recorded in the state (through ``commit``) BEFORE it is set, so a crash cannot leak one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import replace
from typing import TypeVar

from kafka_balancer.kafka.execution_state import (
    ALL_BROKER_RATES,
    BROKER_RATES,
    FOLLOWER_REPLICAS,
    INTRA_BROKER_RATE,
    LEADER_REPLICAS,
    TOPIC_REPLICAS,
    ExecutionState,
    Move,
    MoveStatus,
)
from kafka_balancer.kafka.port import AdminPort

Commit = Callable[[ExecutionState], ExecutionState]
V = TypeVar("V")


def wanted_topic_values(moves: Iterable[Move]) -> dict[str, dict[str, str]]:
    """Topic → throttled-replica lists: leaders are the current replicas, followers the added ones."""
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    for move in moves:
        if not move.adding:
            continue
        leaders.setdefault(move.topic, []).extend(f"{move.partition}:{b}" for b in move.source)
        followers.setdefault(move.topic, []).extend(f"{move.partition}:{b}" for b in move.adding)
    return {
        topic: {
            LEADER_REPLICAS: ",".join(sorted(leaders[topic])),
            FOLLOWER_REPLICAS: ",".join(sorted(followers[topic])),
        }
        for topic in leaders
    }


def wanted_brokers(moves: Iterable[Move]) -> dict[str, frozenset[str]]:
    """Broker → the rate configs ``moves`` need on it."""
    wanted: dict[str, set[str]] = {}
    for move in moves:
        for b in move.replicating:
            wanted.setdefault(str(b), set()).update(BROKER_RATES)
        for b in move.dir_copying:
            wanted.setdefault(str(b), set()).add(INTRA_BROKER_RATE)
    return {b: frozenset(names) for b, names in wanted.items()}


def sync_throttles(
    admin: AdminPort, state: ExecutionState, commit: Commit, *, final: bool = False
) -> ExecutionState:
    """Set throttles for the moves in flight and remove ours where nothing of ours is in flight."""
    in_flight = [] if final or state.throttle_rate is None else state.by_status(MoveStatus.IN_FLIGHT)
    brokers = wanted_brokers(in_flight)
    if brokers:
        # A broker that is down takes no config, and sends nothing (a move off a dead broker copies
        # from the other replicas).
        live = {str(b) for b in admin.broker_ids()}
        brokers = {b: names for b, names in brokers.items() if b in live}
    topics = wanted_topic_values(in_flight)

    state = release_brokers(admin, state, commit, keep=brokers)
    for topic, names in list(state.throttled_topics.items()):
        if topic not in topics:
            admin.alter_configs("topic", topic, {}, names)
            state = commit(replace(state, throttled_topics=_without(state.throttled_topics, topic)))

    effective = capped_rate(admin, state.throttle_rate, int(min(brokers))) if brokers else state.throttle_rate
    rate = str(effective)
    for broker, names in state.throttled_brokers.items():
        # Ours already, maybe at another rate: a resume with a new --throttle, a cap set or lifted
        # meanwhile, or a broker that was down kept ours from an earlier plan.
        if broker in brokers and names and state.broker_rates.get(broker) != effective:
            admin.alter_configs("broker", broker, dict.fromkeys(names, rate))
            state = commit(replace(state, broker_rates=_rated(state, broker, effective)))
    # Configs neither ours yet nor found set by someone else before.
    missing = {
        broker: [
            name
            for name in ALL_BROKER_RATES
            if name in names
            and name not in state.throttled_brokers.get(broker, ())
            and f"broker {broker}: {name}" not in state.foreign_throttles
        ]
        for broker, names in brokers.items()
    }
    missing = {broker: names for broker, names in missing.items() if names}
    for broker, present in admin.dynamic_configs("broker", sorted(missing)).items():
        ours = tuple(name for name in missing[broker] if name not in present)
        state = commit(
            replace(
                state,
                throttled_brokers={
                    **state.throttled_brokers,
                    broker: (*state.throttled_brokers.get(broker, ()), *ours),
                },
                broker_rates=_rated(state, broker, effective),
                foreign_throttles=_foreign(state, "broker", broker, missing[broker], present),
            )
        )
        admin.alter_configs("broker", broker, dict.fromkeys(ours, rate))

    new_topics = sorted(set(topics) - set(state.throttled_topics))
    for topic, present in admin.dynamic_configs("topic", new_topics).items():
        ours = tuple(name for name in TOPIC_REPLICAS if name not in present)
        state = commit(
            replace(
                state,
                throttled_topics={**state.throttled_topics, topic: ours},
                foreign_throttles=_foreign(state, "topic", topic, TOPIC_REPLICAS, present),
            )
        )
    for topic, names in state.throttled_topics.items():
        if topic in topics and names:
            admin.alter_configs("topic", topic, {name: topics[topic][name] for name in names})
    return state


def release_brokers(
    admin: AdminPort,
    state: ExecutionState,
    commit: Commit,
    keep: Mapping[str, Collection[str]] | None = None,
) -> ExecutionState:
    """Remove our rates from every broker that is up, but those ``keep`` names for it.

    In KRaft a broker's dynamic config can only be changed through that broker (another one answers
    "Unexpected broker id") or the controller quorum, which clients rarely reach. So a broker that is
    down keeps our rate, recorded in the state, until it is back and this runs again: at the next
    batch, on cancel, or at the operator's next sync.
    """
    kept = keep or {}
    stale = {
        broker: [n for n in names if n not in kept.get(broker, ())]
        for broker, names in state.throttled_brokers.items()
    }
    stale = {b: names for b, names in stale.items() if names or b not in kept}
    live = {str(b) for b in admin.broker_ids()} if stale else set()
    for broker, names in stale.items():
        if broker not in live:
            continue
        admin.alter_configs("broker", broker, {}, names)
        if broker in kept:
            left = tuple(n for n in state.throttled_brokers[broker] if n not in names)
            state = commit(replace(state, throttled_brokers={**state.throttled_brokers, broker: left}))
        else:
            state = commit(
                replace(
                    state,
                    throttled_brokers=_without(state.throttled_brokers, broker),
                    broker_rates=_without(state.broker_rates, broker),
                )
            )
    return state


def leftover_throttles(admin: AdminPort, state: ExecutionState) -> list[str]:
    """Throttle configs of ours that brokers still show on the plan's brokers and topics (should be
    none). A broker applies a config change a moment after the controller commits it, so a config
    just removed can still show here: callers poll."""
    live = {str(b) for b in admin.broker_ids()}
    brokers = sorted({str(b) for m in state.moves for b in (*m.original, *m.source, *m.final)} & live)
    topics = sorted({m.topic for m in state.moves})
    return [
        f"{kind} {name}: {config}"
        for kind, names, throttles in (
            ("broker", brokers, ALL_BROKER_RATES),
            ("topic", topics, TOPIC_REPLICAS),
        )
        for name, configs in admin.dynamic_configs(kind, names).items()
        for config in throttles
        if config in configs and f"{kind} {name}: {config}" not in state.foreign_throttles
    ]


def throttles_on_down_brokers(admin: AdminPort, state: ExecutionState) -> list[str]:
    """Our rates on brokers that are down: nobody can remove them until the broker is back."""
    live = {str(b) for b in admin.broker_ids()}
    return [
        f"broker {b} is down with our {', '.join(n)} set; removed once it is back "
        "(kafka-balancer cancel, or the operator's next sync)"
        for b, n in state.throttled_brokers.items()
        if b not in live
    ]


def _foreign(
    state: ExecutionState, kind: str, name: str, throttles: Iterable[str], present: Mapping[str, str]
) -> tuple[str, ...]:
    found = {f"{kind} {name}: {config}" for config in throttles if config in present}
    return tuple(sorted(set(state.foreign_throttles) | found))


def _rated(state: ExecutionState, broker: str, rate: int | None) -> dict[str, int]:
    """The broker rates once ``broker`` carries ``rate`` (the ``None`` rate sets nothing)."""
    if rate is None:
        return dict(state.broker_rates)
    return {**state.broker_rates, broker: rate}


def capped_rate(admin: AdminPort, rate: int | None, broker: int) -> int | None:
    """``rate``, but never above a replication rate set as the cluster-wide default
    (``kafka-configs --entity-default``, as ``broker`` reports it): whoever set it meant it as a cap
    for every broker, and a rate set per broker overrides the default."""
    if rate is None:
        return None
    defaults = admin.default_broker_configs(broker)
    caps = [int(defaults[name]) for name in BROKER_RATES if defaults.get(name, "").isdigit()]
    return min([rate, *caps])


def _without(records: Mapping[str, V], key: str) -> dict[str, V]:
    return {k: v for k, v in records.items() if k != key}
