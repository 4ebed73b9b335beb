"""What a pass observed of the cluster besides its brokers, as conditions and events: Kafka answered,
where the loads and the broker cpu came from, the drained brokers' cordons, the reassignments in
flight, the demoted brokers' leadership.
"""

from __future__ import annotations

from kafka_balancer.reconcile.conditions import FALSE, TRUE, Condition
from kafka_balancer.reconcile.events import Event, sentence
from kafka_balancer.reconcile.pool_input import LoadSource, PoolInput, UsageSource
from kafka_balancer.reconcile.snapshot import ClusterMetadata

# The Reassigning condition names this many of the partitions being reassigned.
SHOWN_REASSIGNING = 5


def observation_conditions(inp: PoolInput) -> list[Condition]:
    """Kafka answered; where the loads and the broker cpu came from, and what other tools are
    reassigning (informational)."""
    conditions = [Condition("KafkaReachable", TRUE, "Connected", "metadata read from the bootstrap servers")]
    if inp.load_source is not None:
        conditions.append(loads_condition(inp.load_source))
    if inp.usage_source is not None:
        conditions.append(usage_condition(inp.usage_source))
    reassigning = reassigning_condition(inp.metadata)
    if reassigning is not None:
        conditions.append(reassigning)
    return conditions


def loads_condition(source: LoadSource) -> Condition:
    """Informational: a failed scoring run leaves the pool planning on the collector's loads."""
    if source.error is not None:
        using = "the last scored loads" if source.scored else "collected loads"
        message = f"planning on {using}; the latest scoring run failed: {source.error}"
        return Condition("LoadsScored", FALSE, "ScoringFailed", message)
    if source.scored:
        where = f" ({source.engine})" if source.engine else ""
        return Condition("LoadsScored", TRUE, "Scored", f"loads from the Spark scoring job{where}")
    return Condition("LoadsScored", FALSE, "Collecting", "loads from the last collector passes until scored")


def usage_condition(source: UsageSource) -> Condition:
    """Informational: whether broker cpu is measured; without it cpu goals hold trivially."""
    if source.url is None:
        message = (
            "no spec.prometheus: broker cpu is not measured, partition cpu is 0 and cpu goals "
            "(CpuCapacity, CpuDistribution) hold trivially"
        )
        return Condition("CpuMeasured", FALSE, "NoSource", message)
    if source.error is not None:
        message = f"broker cpu unknown this pass, cpu goals hold trivially: {source.error}"
        return Condition("CpuMeasured", FALSE, "PrometheusFailed", message)
    if source.brokers is None:
        return Condition("CpuMeasured", FALSE, "Waiting", "measured from the second collector pass on")
    if source.brokers == 0:
        message = f"Prometheus at {source.url} answered no series naming a broker (check brokerLabel)"
        return Condition("CpuMeasured", FALSE, "NoBrokerSeries", message)
    message = f"cpu and network of {source.brokers} broker(s) from Prometheus at {source.url}"
    return Condition("CpuMeasured", TRUE, "Prometheus", message)


def reassigning_condition(metadata: ClusterMetadata) -> Condition | None:
    """``Reassigning``, while partitions are being reassigned (by anyone: another tool, a person,
    an execution of this operator's): they are planned where they are going and left out of the
    plan until it ends, and an execution waits for those it did not start."""
    moving = sorted(f"{p.topic}-{p.partition}" for p in metadata.partitions if p.reassigning)
    if not moving:
        return None
    shown = ", ".join(moving[:SHOWN_REASSIGNING]) + (" …" if len(moving) > SHOWN_REASSIGNING else "")
    message = (
        f"{len(moving)} partition(s) being reassigned ({shown}): left out of the plan until their "
        "reassignment ends"
    )
    return Condition("Reassigning", TRUE, "InFlight", message)


def reassigning_events(inp: PoolInput, condition: Condition | None) -> list[Event]:
    """An Event when reassignments appear (not at every pass while they run)."""
    before = next((c for c in inp.status.get("conditions") or [] if c.get("type") == "Reassigning"), None)
    if condition is None or before is not None:
        return []
    return [Event("Normal", "ReassignmentsInFlight", sentence(condition.message))]


def cordon_conditions(inp: PoolInput) -> list[Condition]:
    """``Cordoned``, while the pool drains or holds brokers cordoned: which, or why none."""
    cordoning = inp.cordoning
    if cordoning is None:
        return []
    draining = ", ".join(map(str, sorted(inp.spec.drain))) or "none"
    if cordoning.error is not None:
        message = (
            f"cordoning the drained brokers ({draining}) failed, tried again next pass: {cordoning.error}"
        )
        return [Condition("Cordoned", FALSE, "CordonFailed", message)]
    if not cordoning.supported:
        message = (
            "cordoning needs Kafka 4.3 or later (KIP-1066): a partition created during the drain may get "
            f"replicas on the drained brokers ({draining})"
        )
        return [Condition("Cordoned", FALSE, "Unsupported", message)]
    if not cordoning.ours:
        return []
    held = ", ".join(map(str, sorted(cordoning.ours)))
    message = (
        f"broker(s) {held} cordoned (cordoned.log.dirs=*): a partition created meanwhile gets no replica "
        "on them; uncordoned when the drain is withdrawn"
    )
    return [Condition("Cordoned", TRUE, "Cordoned", message)]


def demoted_condition(inp: PoolInput) -> Condition | None:
    """With ``spec.demote``: how many partitions the demoted brokers still lead, from Kafka's metadata.

    True once they lead none; ``AllReplicasDemoted`` when the only ones left have every replica on
    a demoted broker (no other replica can lead them, and demotion never copies data)."""
    if not inp.spec.demote:
        return None
    demoted = sorted(set(inp.spec.demote))
    listed = set(demoted)
    led = {b: 0 for b in demoted}
    stuck = []
    for p in inp.metadata.partitions:
        if p.leader in listed:
            led[p.leader] += 1
            if set(p.replicas) <= listed:
                stuck.append(f"{p.topic}-{p.partition}")
    unknown = [b for b in demoted if b not in inp.metadata.brokers]
    also = f"; not in the cluster: {unknown}" if unknown else ""
    held = sum(led.values())
    if held == 0:
        return Condition("Demoted", TRUE, "LeadershipMoved", f"brokers {demoted} lead no partition{also}")
    counts = ", ".join(f"broker {b} leads {n}" for b, n in led.items() if n)
    if len(stuck) == held:
        shown = ", ".join(stuck[:5]) + (", ..." if len(stuck) > 5 else "")
        message = (
            f"brokers {demoted} still lead {held} partition(s) ({counts}) whose replicas are all "
            f"demoted: {shown}{also}"
        )
        return Condition("Demoted", FALSE, "AllReplicasDemoted", message)
    message = f"brokers {demoted} still lead {held} partition(s) ({counts}); leadership is being moved{also}"
    return Condition("Demoted", FALSE, "MovingLeadership", message)


def demotion_events(inp: PoolInput, demoted: Condition | None) -> list[Event]:
    """An event when a demotion completes (the condition turns True)."""
    if demoted is None or demoted.status != TRUE:
        return []
    before = next((c for c in inp.status.get("conditions") or [] if c.get("type") == "Demoted"), None)
    if before is not None and before.get("status") == TRUE and before.get("message") == demoted.message:
        return []
    return [Event("Normal", "DemotionDone", demoted.message)]
