"""Cordoning the brokers a pool drains (KIP-1066, Kafka 4.3 and later).

A broker whose log dirs are all cordoned (``cordoned.log.dirs=*``) gets no replica of a partition
created meanwhile, so a topic made during a drain does not land on the brokers being emptied. The
operator cordons the brokers it drains and uncordons them when the drain is withdrawn, or when a
broker of that id joins again (a StatefulSet reuses its ordinals). It only ever uncordons what it
cordoned itself: a broker someone else cordoned is left as it is.
"""

from __future__ import annotations

from collections.abc import Set

from kafka_balancer.errors import KafkaAccessDenied
from kafka_balancer.kafka.port import AdminPort

CORDONED_LOG_DIRS = "cordoned.log.dirs"
ALL_DIRS = "*"


def sync_cordons(admin: AdminPort, wanted: Set[int], ours: Set[int]) -> frozenset[int] | None:
    """Cordon the live brokers of ``wanted``, uncordon the live brokers of ``ours`` no longer wanted;
    a broker that is down keeps its record until it is back. Returns the brokers the operator holds
    cordoned now (its record), or None when this Kafka does not know cordoning (older than 4.3):
    then nothing was changed."""
    if not wanted and not ours:
        return frozenset()
    live = admin.broker_ids()
    if not live:
        return frozenset(ours)
    if CORDONED_LOG_DIRS not in admin.broker_config_names(min(live)):
        return None
    touched = sorted((set(wanted) | set(ours)) & live)
    current = admin.dynamic_configs("broker", [str(b) for b in touched])
    held = set(ours)
    for broker in touched:
        configs = current.get(str(broker), {})
        if broker in wanted:
            if broker in held and configs.get(CORDONED_LOG_DIRS) != ALL_DIRS:
                admin.alter_configs("broker", str(broker), {CORDONED_LOG_DIRS: ALL_DIRS})
            elif broker not in held and CORDONED_LOG_DIRS not in configs:
                held.add(broker)
                admin.alter_configs("broker", str(broker), {CORDONED_LOG_DIRS: ALL_DIRS})
        elif broker in held:
            admin.alter_configs("broker", str(broker), {}, [CORDONED_LOG_DIRS])
            held.discard(broker)
    return frozenset(held)


def ready_to_leave(admin: AdminPort, brokers: Set[int]) -> tuple[dict[int, int], frozenset[int] | None]:
    """What a scale-down of ``brokers`` depends on, read now: the replicas each of them holds (in
    any partition's replica set, a reassignment's target included), and which of them take no new
    replica: cordoned, or down (Kafka places new replicas on live brokers only). None for the latter
    when this Kafka does not know cordoning.

    Refused with :class:`KafkaAccessDenied` when Kafka's ACLs may hide topics from the principal: a
    broker that looks empty could still hold their replicas."""
    hidden = admin.hidden_topics()
    if hidden is not None:
        raise KafkaAccessDenied(
            f"{hidden}, so a broker that looks empty may still hold their replicas (grant DESCRIBE on "
            "every topic, see docs/security.md)"
        )
    held = dict.fromkeys(brokers, 0)
    for state in admin.partitions().values():
        for broker in state.replicas:
            if broker in held:
                held[broker] += 1
    live = admin.broker_ids()
    if live and CORDONED_LOG_DIRS not in admin.broker_config_names(min(live)):
        return held, None
    up = sorted(set(brokers) & live)
    current = admin.dynamic_configs("broker", [str(b) for b in up])
    closed = {b for b in up if current.get(str(b), {}).get(CORDONED_LOG_DIRS) == ALL_DIRS}
    return held, frozenset(closed | (set(brokers) - live))
