"""The optimizer: drain, re-home replicas off offline log dirs, demote, then every goal in priority
order, repeated until nothing moves.

Termination: each applied action strictly improves the goal being optimised and worsens no
goal optimised before it (and no hard goal), so the vector of goal violations in priority
order decreases lexicographically. docs/how-a-plan-is-made.md walks through the steps and names
the terms.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from kafka_balancer.errors import InfeasibleError
from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.base import EPSILON, Goal, GoalStatus
from kafka_balancer.goals.registry import build_goal, priority_order
from kafka_balancer.goals.spec import GoalFamily, GoalSpec, GoalType
from kafka_balancer.goals.topic import TopicReplicaDistributionGoal
from kafka_balancer.model.candidate_moves import leader_changes, leadership_away, replica_moves, slot_moves
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.model.destinations import holds
from kafka_balancer.model.math import IntArray
from kafka_balancer.model.quantities import REPLICAS
from kafka_balancer.model.reassign import apply_reassignments
from kafka_balancer.model.resources import Resource
from kafka_balancer.model.working import BrokerLoad, WorkingModel
from kafka_balancer.planner.bound import bound_bands, lower_bounds
from kafka_balancer.planner.log_dirs import plan_log_dirs
from kafka_balancer.planner.plan import GoalOutcome, Plan, diff
from kafka_balancer.planner.prune import prune
from kafka_balancer.planner.reasons import explained
from kafka_balancer.planner.search import Search
from kafka_balancer.planner.vetoes import TOLERANCE

MAX_PASSES = 6
# Times the goals are built again when their bands moved with the replicas of demoted brokers.
MAX_REBUILDS = 3
# Times a plan that misses a band is planned again from where it left the replicas.
MAX_REPLANS = 2


def plan(cluster: Cluster, specs: tuple[GoalSpec, ...]) -> Plan:
    """Plan the moves that satisfy ``specs``; InfeasibleError if the hard goals cannot all hold."""
    started = time.perf_counter()
    # Left out of the plan and reported: no move can restore them, and the dead broker or disk
    # their replicas sit on serves no load that a live broker could take over.
    stranded = cluster.stranded()
    if stranded:
        out = {(p.topic, p.partition) for p in stranded}
        cluster = replace(
            cluster, partitions=tuple(p for p in cluster.partitions if (p.topic, p.partition) not in out)
        )
    # The intra-broker goals act between a broker's log dirs, once the brokers are settled.
    ordered = priority_order(tuple(s for s in specs if not s.type.intra_broker))
    state, goals, before_loads, before = _optimised(cluster, ordered)
    # A plan that meets every band replans to nothing as it is. One that drained a broker into
    # its rack is left as it is too: planned afresh, the drained broker is empty and nothing
    # keeps its replicas in their rack (docs/design.md's drain), which a replan may then move across.
    for _ in range(MAX_REPLANS):
        if state.any_pinned or all(g.status(state).satisfied for g in goals):
            break
        again = _optimised(apply_reassignments(cluster, diff(state)[0]), ordered)[0]
        if not _carried(again, state):
            break
    after = explained(state, goals, [g.status(state) for g in goals])
    for goal, status in zip(goals, after, strict=True):
        if goal.hard and not status.satisfied:
            raise InfeasibleError(f"hard goal {goal.spec.label} cannot be satisfied: {status.detail}")

    reassignments, figures = diff(state)
    log_dirs = plan_log_dirs(cluster, reassignments, specs)
    met = [g for g, status in zip(goals, after, strict=True) if status.satisfied]
    aimed = [g for g, status in zip(goals, after, strict=True) if not status.satisfied and _aim_met(g, state)]
    missed = [g for g, status in zip(goals, after, strict=True) if not status.satisfied and g not in aimed]
    judged_by = bound_bands(met, aimed, missed, state)
    bounds = lower_bounds(state, judged_by)
    return Plan(
        reassignments=log_dirs.reassignments,
        figures=replace(
            figures,
            bytes_moved_lower_bound=bounds.bytes_moved,
            cross_rack_lower_bound=bounds.cross_rack,
            rack_local_lower_bound=bounds.rack_local,
            intra_broker_bytes=log_dirs.intra_broker_bytes,
        ),
        goals=tuple(
            GoalOutcome(g.spec.label, g.spec.type.value, g.hard, g.spec.priority, b, a)
            for g, b, a in zip(goals, before, after, strict=True)
        )
        + log_dirs.goals,
        brokers_before=before_loads,
        brokers_after=state.broker_loads(),
        seconds=time.perf_counter() - started,
        led_by_demoted=tuple(f"{state.names[p][0]}-{state.names[p][1]}" for p in state.demoted_leaders()),
        stranded=tuple(p.name for p in stranded),
        bound_bands=judged_by,
    )


def _optimised(
    cluster: Cluster, ordered: list[GoalSpec]
) -> tuple[WorkingModel, list[Goal], tuple[BrokerLoad, ...], list[GoalStatus]]:
    """``cluster`` with every goal settled (the drain, the re-homing and the demotion first), its
    goals, and the brokers' loads and the goals' statuses before any move."""
    state = WorkingModel(cluster)
    goals = _build_goals(state, ordered)
    _check_feasible(state, goals)
    before_loads = state.broker_loads()
    before = [g.status(state) for g in goals]
    _drain(state, goals)
    _rehome_offline(state, goals)
    _demote(state, goals)
    # Inside every band nothing moves (docs/design.md's stability): leaders are evened only in a plan
    # that fixes some band anyway.
    even = not all(status.satisfied for status in before)
    _settle(state, goals, even)
    # A demoted broker keeps the follower load of the replicas it holds, which the bands of what
    # leadership carries leave out of the other brokers' mean: a replica moved on or off it
    # shifts those bands. They are built again from where the plan left the replicas, and the
    # goals settle again, until they hold still, so that the plan replans to nothing.
    for _ in range(MAX_REBUILDS if state.demoted.any() else 0):
        rebuilt = _build_goals(state, ordered)
        if all(_same_band(old, new) for old, new in zip(goals, rebuilt, strict=True)):
            break
        goals = rebuilt
        _settle(state, goals, even)
    return state, goals, before_loads, before


def _carried(again: WorkingModel, state: WorkingModel) -> bool:
    """Apply to ``state`` what planning its assignment afresh (``again``) changed; whether it
    changed anything.

    A band no plan meets leaves the search at a point that depends on how it got there: the
    order of each partition's replicas (the plan lists the leader first) and what the plan had
    already moved decide ties and which candidates are weighed, and planning the planned
    assignment found more moves (tests/unit/planner/test_missed_band_replans_to_nothing.py has such a
    cluster). Planned again here, the plan is one its own replan leaves alone."""
    version = state.journal.version
    for p in again.changed_partitions().tolist():
        now = [int(b) for b in again.replicas[p] if b >= 0]
        held = [int(b) for b in state.replicas[p] if b >= 0]
        gone = [b for b in held if b not in now]
        arriving = [b for b in now if b not in held]
        if state.any_banned and state.banned[p, arriving].any():
            # The replan's cluster no longer shows the offline log dir this partition left: back on
            # that broker, Kafka would keep the replica where it was, unreadable.
            continue
        for b, dest in zip(gone, arriving, strict=True):
            slot = np.array([int(np.nonzero(state.replicas[p] == b)[0][0])])
            state.apply(slot_moves(state, np.array([p]), slot), 0, dest)
        leader = int(again.replicas[p, again.leader_slot[p]])
        if state.leader_of(p) != leader:
            state.apply(leader_changes(state, np.array([p]), np.array([leader])), 0, leader)
    return state.journal.version != version


def _build_goals(state: WorkingModel, ordered: list[GoalSpec]) -> list[Goal]:
    rack_aware = [i for i, spec in enumerate(ordered) if spec.type is GoalType.RACK_AWARE]
    return [
        build_goal(spec, state, racks_held=any(ordered[j].hard or j < i for j in rack_aware))
        for i, spec in enumerate(ordered)
    ]


def _same_band(old: Goal, new: Goal) -> bool:
    if not (isinstance(old, BandGoal) and isinstance(new, BandGoal)):
        return True
    return bool(np.array_equal(old.veto_lo, new.veto_lo) and np.array_equal(old.veto_hi, new.veto_hi))


def _settle(state: WorkingModel, goals: list[Goal], even: bool) -> None:
    """The goals' passes, then the undos of what they no longer need (``even``: the leaders
    evened before the undos and after them). A leadership the evening moves can leave room for
    an undo, and an undo that takes a leader replica home takes its leadership with it."""
    _passes(state, goals)
    met = all(g.status(state).satisfied for g in goals)
    # Only where every band holds: where one is missed, the leaderships the evening moves would
    # change what the undos leave of it (a topic band no plan meets was then missed by more).
    even = even and met
    if even:
        _even_leaders(state, goals)
    if prune(state, goals) and not met:
        # A goal still missing its band may gain from what the undos freed; the passes also
        # end where they find nothing to do, so the plan replans to nothing.
        _passes(state, goals)
    if even:
        _even_leaders(state, goals)


def _even_leaders(state: WorkingModel, goals: list[Goal]) -> None:
    """Leader counts brought within half of LeaderDistribution's range by leader changes alone,
    every goal (each met) vetoing.

    A band goal stops where its brokers enter the band, so the leaders end at its edges, as far
    off the mean as its range allows. A leader change copies no data; what the leaders carry
    (network out, cpu) stays within its bands."""
    lead = next((g for g in goals if g.spec.type is GoalType.LEADER_DISTRIBUTION), None)
    if not isinstance(lead, BandGoal) or not lead.active:
        return
    tight = build_goal(replace(lead.spec, range_percent=lead.spec.range_percent // 2), state)
    tight.optimize(state, Search(state, list(goals), moves_data=False))


def _passes(state: WorkingModel, goals: list[Goal]) -> None:
    """Each goal in priority order, the earlier ones vetoing, until a pass changes nothing.

    A goal that found nothing to do is not asked again while the assignment is the one it found
    nothing in: its search is a function of the assignment, and the last pass of every call
    would otherwise ask the goals after the last one that acted again, for nothing, and where a
    leader band cannot be met each such ask searches at length
    (tests/unit/search/test_idle_goals_not_asked_again.py)."""
    idle: dict[int, tuple[IntArray, IntArray]] = {}
    for _ in range(MAX_PASSES):
        actions = 0
        for i, goal in enumerate(goals):
            if i in idle and _same_assignment(state, idle[i]):
                continue
            vetoes = [g for g in goals[:i] if not g.hard] + [g for g in goals if g.hard and g is not goal]
            later = [g for g in goals[i + 1 :] if not g.hard]
            search = Search(state, vetoes, later)
            goal.optimize(state, search)
            actions += search.actions
            if search.actions == 0:
                idle[i] = (state.replicas.copy(), state.leader_slot.copy())
            else:
                idle.pop(i, None)
        if actions == 0:
            break


def _same_assignment(state: WorkingModel, assignment: tuple[IntArray, IntArray]) -> bool:
    replicas, leader_slot = assignment
    return bool(np.array_equal(state.replicas, replicas) and np.array_equal(state.leader_slot, leader_slot))


def _aim_met(goal: Goal, state: WorkingModel) -> bool:
    """Whether ``goal`` aims somewhere other than its contract (a rack that cannot meet it) and
    the plan met that aim."""
    if isinstance(goal, BandGoal) and goal.rack_aim is not None:
        return not (goal.needs_fix(state) > EPSILON).any()
    if isinstance(goal, TopicReplicaDistributionGoal) and goal.short.any():
        return not (goal.per_cell(state) > EPSILON).any()
    return False


def _check_feasible(state: WorkingModel, goals: list[Goal]) -> None:
    """Fail fast, with the reason, on what no sequence of moves could fix."""
    n_active = int(state.active.sum())
    if len(state.rf) and int(state.rf.max()) > n_active:
        p = int(np.argmax(state.rf))
        topic, number = state.names[p]
        raise InfeasibleError(
            f"partition {topic}-{number} has replication factor {int(state.rf[p])} "
            f"but only {n_active} broker(s) are active"
        )
    for goal in goals:
        if not (goal.hard and isinstance(goal, BandGoal) and goal.spec.type.family is GoalFamily.CAPACITY):
            continue
        _check_one_replica_fits(state, goal)
        total = float(state.quantity(goal.column).sum())
        room = float(goal.hi[state.active].sum())
        if total > room:
            raise InfeasibleError(
                f"hard goal {goal.spec.label} cannot be satisfied: the cluster's total "
                f"{'replica count' if goal.spec.type is GoalType.REPLICA_CAPACITY else 'load'} "
                f"{total:.6g} exceeds what the active brokers may hold ({room:.6g})"
            )


def _check_one_replica_fits(state: WorkingModel, goal: BandGoal) -> None:
    """A hard capacity goal of a resource fails at once when one replica alone carries more of it
    than any active broker may hold: every replica carries at least a follower's share (all of the
    disk and network in, the follower's cpu), wherever it goes. Without this the plan ran to the
    end and named the broker the replica sat on, as if moving it elsewhere could help."""
    if goal.column >= REPLICAS or not state.active.any() or not len(state.rf):
        return
    least = state.follower_load[:, goal.column]
    p = int(np.argmax(least))
    most = float(goal.hi[state.active].max())
    if float(least[p]) <= most:
        return
    topic, number = state.names[p]
    capacity = float(state.capacity[state.active, goal.column].max())
    raise InfeasibleError(
        f"hard goal {goal.spec.label} cannot be satisfied: partition {topic}-{number} alone needs "
        f"{100.0 * float(least[p]) / capacity:.2f}% of the largest active broker's "
        f"{Resource(goal.column).key} capacity, above the threshold of {goal.spec.threshold_percent}%"
    )


def _drain(state: WorkingModel, goals: list[Goal]) -> None:
    """Move every replica off draining brokers: same rack first, within every hard goal."""
    hard = [g for g in goals if g.hard]
    search = Search(state, hard, [g for g in goals if not g.hard])
    for b in (int(i) for i in np.nonzero(~state.active)[0]):
        parts = state.parts_on(b)
        for p in (int(i) for i in parts[np.lexsort((parts, -state.disk[parts]))]):
            one = np.array([p], dtype=np.int64)
            cands = replica_moves(state, b, one)
            if search.place(None, cands) is None:
                raise InfeasibleError(_drain_blocked(state, hard, b, p))
            slot = int(cands.slot[0])
            if state.rack[state.replicas[p, slot]] == state.rack[b]:
                state.pin_to_rack(p, slot)


def _rehome_offline(state: WorkingModel, goals: list[Goal]) -> None:
    """Move every replica on an offline log dir off its broker like a drain (same rack first,
    within every hard goal): Kafka 4.3 neither recreates it nor moves it to another dir of that
    broker, a reassignment to another broker is what makes the partition whole again."""
    hard = [g for g in goals if g.hard]
    search = Search(state, hard, [g for g in goals if not g.hard])
    for p, b, path in state.offline_replicas:
        if p not in state.partitions_on[b]:
            continue  # drained already: its broker is leaving
        one = np.array([p], dtype=np.int64)
        cands = replica_moves(state, b, one, every=True)
        if search.place(None, cands) is None:
            topic, number = state.names[p]
            raise InfeasibleError(
                f"cannot move {topic}-{number} off offline log dir {path} of broker "
                f"{int(state.broker_ids[b])}: {_nowhere(state, hard, b, p)}"
            )
        slot = int(cands.slot[0])
        if state.rack[state.replicas[p, slot]] == state.rack[b]:
            state.pin_to_rack(p, slot)


def _demote(state: WorkingModel, goals: list[Goal]) -> None:
    """Hand every leadership of a demoted broker to another replica: a reordering, 0 bytes.

    The new leader is the non-demoted replica the soft goals (LeaderDistribution first among them
    when it is set) like best, within every hard goal. A partition whose replicas are all demoted
    keeps its leader: demotion is for maintenance and rolling restarts, so it never copies data (a
    broker that must give up its replicas is drained); the plan reports those partitions."""
    hard = [g for g in goals if g.hard]
    search = Search(state, hard, [g for g in goals if not g.hard])
    for p in (int(i) for i in state.demoted_leaders()):
        one = np.array([p], dtype=np.int64)
        leader = state.leader_of(p)
        cands = leadership_away(state, leader, one)
        takers = cands.dst[~state.demoted[cands.dst]]
        if not len(takers):
            continue
        if search.hand_over(cands) is None:
            raise InfeasibleError(_demote_blocked(state, hard, leader, p, cands))
        _pass_on(state, search, state.leader_of(p))


def _pass_on(state: WorkingModel, search: Search, broker: int) -> None:
    """A broker that took more than its share of leaderships hands one on, along the shortest chain
    of leader changes that ends at a broker with room: a demoted broker's partitions often share
    their followers, and without the chain the soft goals would fix the pile-up by copying data."""
    counted = state.active & ~state.demoted
    per_share = float(state.leader_count[counted].sum()) / max(float(state.share[counted].sum()), 1e-300)
    room = np.ceil(per_share * state.share - 1e-9) - state.leader_count
    if room[broker] >= 0:
        return
    came_from: dict[int, tuple[int, int] | None] = {broker: None}
    queue, end = [broker], None
    while queue and end is None:
        u = queue.pop(0)
        away = leadership_away(state, u)
        for p, v in zip(away.part.tolist(), away.dst.tolist(), strict=True):
            if v in came_from or state.demoted[v]:
                continue
            came_from[v] = (u, p)
            if room[v] > 0:
                end = v
                break
            queue.append(v)
    # The last hop first: every broker on the chain ends with the count it started with.
    while end is not None and (hop := came_from[end]) is not None:
        u, p = hop
        change = leader_changes(state, np.array([p], dtype=np.int64), np.array([end], dtype=np.int64))
        if search.hand_over(change) is None:
            return  # a hard goal vetoes a hop: the goals take it from here
        end = u


def _demote_blocked(state: WorkingModel, hard: list[Goal], broker: int, p: int, cands: Candidates) -> str:
    reasons = []
    for goal in hard:
        src, dst = goal.evaluate(state, cands)
        blocked = [
            int(state.broker_ids[b])
            for k, b in enumerate(cands.dst)
            if not state.demoted[b] and (src[k] > TOLERANCE or dst[k, b] > TOLERANCE)
        ]
        if blocked:
            reasons.append(f"{goal.spec.label} blocks broker(s) {blocked}")
    topic, number = state.names[p]
    why = "; ".join(reasons) if reasons else "no other replica may lead it"
    return (
        f"cannot demote broker {int(state.broker_ids[broker])}: "
        f"no other replica can lead {topic}-{number}: {why}"
    )


def _drain_blocked(state: WorkingModel, hard: list[Goal], broker: int, p: int) -> str:
    topic, number = state.names[p]
    return (
        f"cannot drain broker {int(state.broker_ids[broker])}: no broker can take {topic}-{number}: "
        f"{_nowhere(state, hard, broker, p)}"
    )


def _nowhere(state: WorkingModel, hard: list[Goal], broker: int, p: int) -> str:
    """Why no broker can take ``broker``'s replica of partition ``p``: the hard goals that block which."""
    cands = replica_moves(state, broker, np.array([p], dtype=np.int64), every=True)
    holders = holds(state, cands.part)[0]
    allowed = state.active & ~holders
    if state.any_banned:
        allowed &= ~state.banned[p]
    open_brokers = np.nonzero(allowed)[0]
    reasons = []
    for goal in hard:
        src, dst = goal.evaluate(state, cands)
        blocked = [int(state.broker_ids[b]) for b in open_brokers if dst[0, b] > 0 or src[0] > 0]
        if blocked:
            reasons.append(f"{goal.spec.label} blocks broker(s) {blocked}")
    return "; ".join(reasons) if reasons else "no active broker without a replica of it is left"
