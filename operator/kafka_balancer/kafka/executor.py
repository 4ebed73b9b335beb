"""Execute a plan safely: validated, throttled, batched, resumable, verified.

Every step is committed to the state file before the cluster is changed, so a killed executor
resumes from the file and observes what Kafka reports (ongoing reassignments and the
actual replica sets): no move is lost, submitted twice or reverted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from kafka_balancer.durations import age_text
from kafka_balancer.errors import ExecutionError, InputError, KafkaOperationError, KafkaUnavailableError
from kafka_balancer.kafka.admin import TIMEOUT_S, OngoingReassignment, PartitionState, Tp
from kafka_balancer.kafka.batching import next_batch
from kafka_balancer.kafka.cancel import restore_order
from kafka_balancer.kafka.execution_state import (
    TOPIC_DELETED,
    ExecutionState,
    Move,
    MoveOrder,
    MoveStatus,
    save_state,
)
from kafka_balancer.kafka.log_dir_moves import (
    NOT_HOSTED_YET,
    dir_brokers,
    dir_progress,
    misplaced,
    replica_dirs,
    stop_copies,
    to_ask,
)
from kafka_balancer.kafka.plan_check import check_plan, named_dir_brokers
from kafka_balancer.kafka.port import AdminPort
from kafka_balancer.kafka.progress import cap_text
from kafka_balancer.kafka.steps import Racks, next_step
from kafka_balancer.kafka.throttle import leftover_throttles, sync_throttles, throttles_on_down_brokers
from kafka_balancer.model.plan import ReassignmentPlan

# A failed verification names this many problems (a plan of thousands could list thousands).
SHOWN_PROBLEMS = 3
# While Kafka does not answer, a round is retried after the poll interval, doubling up to this.
OUTAGE_RETRY_MAX_S = 10.0
T = TypeVar("T")


@dataclass(frozen=True)
class ExecuteOptions:
    throttle: int | None = None
    max_moves_per_broker: int = 2
    max_moves: int = 10
    timeout_per_move_s: float = 600.0
    # A destination broker that left the cluster: waited for this long (a restart comes back).
    dead_broker_timeout_s: float = 300.0
    # Kafka not answering (its controller down, a broker hanging) is ridden out for this long.
    outage_timeout_s: float = 300.0
    # A batch whose partitions are not healthy waits for them this long, then the execution stops.
    health_timeout_s: float = 1800.0
    # What would stop the start (another tool's reassignments, an under-replicated cluster) is waited
    # for instead, for the health timeout: the operator's choice; the command line stops at once.
    wait_at_start: bool = False
    poll_interval_s: float = 1.0
    settle_timeout_s: float = 120.0
    force: bool = False
    replicas_at_a_time: int = 0
    order: MoveOrder | None = None  # None: the state's (a new one's is the plan's order)

    @property
    def request_timeout_s(self) -> float:
        """How long one admin call may wait: a broker that hangs must not stretch the dead-broker
        timeout to the clients' request timeout."""
        return min(TIMEOUT_S, self.dead_broker_timeout_s)


def new_state(
    admin: AdminPort, plan: ReassignmentPlan, options: ExecuteOptions, now: float
) -> ExecutionState:
    """Validate the plan against the cluster (raises :class:`InputError`) and build the initial state."""
    partitions = admin.partitions({p.topic for p in plan})
    named = named_dir_brokers(plan)
    check_plan(plan, admin.broker_ids(), partitions, admin.log_dirs(named) if named else {})
    sizes = admin.partition_sizes([(p.topic, p.partition) for p in plan])
    racks = admin.broker_racks() if options.replicas_at_a_time else {}
    moves = []
    for entry in plan:
        source = partitions[(entry.topic, entry.partition)].replicas
        size = max((sizes.get((entry.topic, entry.partition, b), 0) for b in source), default=0)
        step = next_step(source, entry.replicas, options.replicas_at_a_time, racks)
        stepped = step != entry.replicas
        moves.append(
            Move(
                entry.topic,
                entry.partition,
                source,
                step,
                size=size,
                origin=source if stepped else (),
                planned=entry.replicas if stepped else (),
                log_dirs=entry.log_dirs if entry.moves_log_dirs else (),
            )
        )
    return ExecutionState(
        moves=tuple(moves),
        created_at=now,
        updated_at=now,
        throttle_rate=options.throttle,
        replicas_at_a_time=options.replicas_at_a_time,
        order=options.order or MoveOrder.PLAN,
    )


def check_same_plan(state: ExecutionState, plan: ReassignmentPlan, state_path: Path) -> None:
    planned_dirs = {r.tp: r.log_dirs for r in plan if r.moves_log_dirs}
    if state.plan_targets() != plan.targets() or state.plan_log_dirs() != planned_dirs:
        raise InputError(f"state file {state_path} belongs to a different plan")


class Executor:
    """Runs one plan to completion against ``admin``, committing ``state`` to ``state_path`` at every step."""

    def __init__(
        self,
        admin: AdminPort,
        state_path: Path,
        options: ExecuteOptions,
        *,
        log: Callable[[str], None] = print,
        cancel_requested: Callable[[], bool] = lambda: False,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        resume_hint: str = "running the same plan again resumes it safely",
    ) -> None:
        self.admin = admin
        self.state_path = state_path
        self.options = options
        self.log = log
        self.cancel_requested = cancel_requested
        self.clock = clock
        self.sleep = sleep
        self.resume_hint = resume_hint
        # The state last committed by the step ride_out runs: a retry starts from it.
        self.committed: ExecutionState | None = None
        # Partitions whose pending move waits for a reassignment someone else started (told once).
        self.waiting_for_others: set[Tp] = set()
        # The last cap a cluster-wide default put on the throttle, told once.
        self.told_cap = ""

    def commit(self, state: ExecutionState) -> ExecutionState:
        state = replace(state, updated_at=self.clock())
        save_state(self.state_path, state)
        self.committed = state
        return state

    def run(self, state: ExecutionState) -> ExecutionState:
        """Move every partition, apply leadership, clear throttles, verify (ExecutionError if not)."""
        if state.throttle_rate != self.options.throttle and self.options.throttle is not None:
            state = replace(state, throttle_rate=self.options.throttle)
        if self.options.order is not None:
            state = replace(state, order=self.options.order)
        state = self.ride_out(lambda s: self.commit(self.observe(s)), state)
        state = self.start_when_ready(state)
        while True:
            self.stop_if_cancelled(state)
            state = self.ride_out(self.round, state)
            if not state.by_status(MoveStatus.PENDING) and not state.by_status(MoveStatus.IN_FLIGHT):
                break
            self.sleep(self.options.poll_interval_s)
        return self.ride_out(self.finish, state)

    def round(self, state: ExecutionState) -> ExecutionState:
        """One look at the cluster: settle moves, stop stuck ones, elect the leaders of reorderings
        done, start the next batch, throttle it."""
        state = self.commit(self.stop_stuck(self.steer_dirs(self.observe(state))))
        state = self.elect_leaders_first(state)
        state = self.submit(state)
        state = sync_throttles(self.admin, state, self.commit)
        capped = cap_text(state)
        if capped and capped != self.told_cap:
            self.log(capped)
        self.told_cap = capped or self.told_cap
        return state

    def finish(self, state: ExecutionState) -> ExecutionState:
        restore_order(self.admin, state, clock=self.clock, sleep=self.sleep)
        state = self.apply_leadership(state)
        state = sync_throttles(self.admin, state, self.commit, final=True)
        return self.verify(state)

    def stop_if_cancelled(self, state: ExecutionState) -> None:
        if self.cancel_requested():
            self.commit(state)
            raise ExecutionError("cancel requested: stopped submitting moves")

    def ride_out(self, step: Callable[[ExecutionState], T], state: ExecutionState) -> T:
        """``step(state)``, retried while Kafka does not answer, for at most the outage timeout.

        A retry starts from the last committed state: what the failed attempt recorded before
        changing the cluster (a throttle, a move in flight) stays on record. A cancel is obeyed
        between retries. Past the timeout, one sentence names the cause and how to resume."""
        since: float | None = None
        pause = self.options.poll_interval_s
        self.committed = None
        while True:
            tried_at = self.clock()
            try:
                result = step(state)
            except KafkaUnavailableError as err:
                now = self.clock()
                if since is None:
                    # From when the unanswered request went out: it waited its timeout already.
                    since = tried_at
                    limit = self.options.outage_timeout_s
                    self.log(f"Kafka does not answer ({err}); riding it out for up to {age_text(limit)}")
                if now - since >= self.options.outage_timeout_s:
                    raise ExecutionError(self._outage(err, since, now)) from err
                state = self.committed or state
                self.stop_if_cancelled(state)
                self.sleep(pause)
                pause = min(pause * 2, OUTAGE_RETRY_MAX_S)
                continue
            if since is not None:
                self.log(f"Kafka answers again after {age_text(self.clock() - since)}")
            return result

    def _outage(self, err: KafkaUnavailableError, since: float, now: float) -> str:
        started = time.strftime("%H:%M:%S UTC", time.gmtime(since))
        return (
            f"Kafka has not answered since {started}, for {age_text(now - since)}, longer than the outage "
            f"timeout of {age_text(self.options.outage_timeout_s)} ({err}); nothing is lost and every move "
            f"is recorded in {self.state_path}: once Kafka answers, {self.resume_hint}"
        )

    # -- steps -------------------------------------------------------------------------------------

    def observe(self, state: ExecutionState) -> ExecutionState:
        """Bring each move's status in line with Kafka's ongoing reassignments and replica sets."""
        listed = self.admin.reassignments()
        parts = self.admin.partitions({m.topic for m in state.moves})
        now = self.clock()
        at_a_time = state.replicas_at_a_time
        racks = self.admin.broker_racks() if at_a_time else {}
        for move in state.moves:
            updated = _observed(move, parts.get(move.tp), listed.get(move.tp), now, (at_a_time, racks))
            if updated != move:
                if updated.target != move.target:
                    self.log(f"{_name(move)}: step to {list(move.target)} done")
                elif updated.status is not move.status:
                    change = f"{move.status.value} -> {updated.status.value} {updated.reason}"
                    self.log(f"{_name(move)}: {change.rstrip()}")
                state = state.with_move(updated)
        return self.progress(state, now)

    def progress(self, state: ExecutionState, now: float) -> ExecutionState:
        moving = [m for m in state.by_status(MoveStatus.IN_FLIGHT) if m.adding]
        if not moving:
            return state
        destinations = {b for m in moving for b in m.adding}
        try:
            sizes = self.admin.partition_sizes([m.tp for m in moving], destinations)
        except KafkaOperationError as err:  # a broker down: counts as no progress, the timeout decides
            self.log(f"progress unknown this round: {err}")
            return state
        for move in moving:
            copied = sum(min(sizes.get((move.topic, move.partition, b), 0), move.size) for b in move.adding)
            if copied > move.progress_bytes:
                state = state.with_move(replace(move, progress_bytes=copied, progress_at=now))
        return state

    def start_when_ready(self, state: ExecutionState) -> ExecutionState:
        """Start once :meth:`preflight` finds nothing in the way. What it finds stops the execution
        (the command line: a person decides), or, with ``wait_at_start`` (the operator: an Auto pool
        must not fail every interval while another tool reassigns), is waited for as a batch's
        health is, for at most the health timeout."""
        waited = False
        while (found := self.ride_out(self.preflight, state)) is not None:
            problem, hint = found
            if not self.options.wait_at_start:
                raise ExecutionError(f"{problem}; {hint}")
            self.stop_if_cancelled(state)
            state = self.wait(state, f"the execution waits to start: {problem}", self.clock())
            waited = True
            self.sleep(self.options.poll_interval_s)
        if waited:
            self.log("nothing in the way any more: starting")
            state = self.commit(replace(state, waiting="", waiting_since=None))
        return state

    def preflight(self, state: ExecutionState) -> tuple[str, str] | None:
        """What stands in the way of starting, and what a person can do about it; None: nothing."""
        if self.options.force:
            return None
        ours = {m.tp for m in state.by_status(MoveStatus.IN_FLIGHT)}
        foreign = sorted(tp for tp in self.admin.reassignments() if tp not in ours)
        if foreign:
            return (
                f"{len(foreign)} reassignment(s) not started by this execution are in flight "
                f"(e.g. {_tp(foreign[0])})",
                "wait for them or use --force",
            )
        # A replica out of the ISR on a live broker is a cluster in trouble, unless the plan takes it
        # off that broker: a replica on a log dir gone offline stays out of the ISR until it is moved
        # (Kafka recreates it nowhere), so that move is the cure. One on a broker that is down is not a
        # reason to wait either: moving replicas off a dead broker is how it is replaced.
        live = self.admin.broker_ids()
        kept = {m.tp: set(m.final) for m in state.moves if m.status is not MoveStatus.DONE}
        under = sorted(
            tp
            for tp, p in self.admin.partitions().items()
            if tp not in ours and (set(p.replicas) - p.isr) & live & kept.get(tp, set(p.replicas))
        )
        if under:
            return (
                f"{len(under)} partition(s) are under-replicated on live brokers (e.g. {_tp(under[0])})",
                "fix the cluster first or use --force",
            )
        return None

    def steer_dirs(self, state: ExecutionState, only: list[Tp] | None = None) -> ExecutionState:
        """For the in-flight moves with planned log dirs (``only`` these, if given): ask for the
        replicas neither in their dir nor being copied there, count the bytes copied between dirs,
        and mark done each move whose replicas are the plan's, every one in its dir, no future one
        left. A broker that does not host a replica yet is asked again next round."""
        moving = [m for m in state.by_status(MoveStatus.IN_FLIGHT) if m.dir_targets]
        if only is not None:
            moving = [m for m in moving if m.tp in only]
        if not moving:
            return state
        # A broker that is down answers nothing: its replicas wait for it (or for the dead-broker
        # timeout, which stops the move).
        live = self.admin.broker_ids()
        dirs = replica_dirs(self.admin, dir_brokers(moving) & live)
        asks = {r: path for m in moving for r, path in to_ask(m, dirs).items() if r[2] in live}
        refused = self.admin.alter_replica_log_dirs(asks) if asks else {}
        listed = self.admin.reassignments() if only is None else {}
        parts = self.admin.partitions({m.topic for m in moving}) if only is None else {}
        now = self.clock()
        for move in moving:
            mine = {r: e for r, e in refused.items() if r[:2] == move.tp}
            hard = {r: e for r, e in mine.items() if e != NOT_HOSTED_YET}
            if hard:
                (_, _, broker), error = sorted(hard.items())[0]
                path = asks[(*move.tp, broker)]
                reason = f"Kafka refused moving its replica on broker {broker} to {path}: {error}"
                if move.tp in listed:
                    self.admin.alter_reassignments({move.tp: None})
                self.log(f"{_name(move)}: failed: {reason}")
                state = state.with_move(
                    replace(move, status=MoveStatus.FAILED, reason=reason, finished_at=now)
                )
                continue
            accepted = {b for (t, p, b) in asks if (t, p) == move.tp and (t, p, b) not in mine}
            updated = replace(move, dirs_asked=tuple(sorted(set(move.dirs_asked) | accepted)))
            copied = dir_progress(move, dirs)
            if copied > move.dir_progress_bytes:
                updated = replace(updated, dir_progress_bytes=copied, progress_at=now)
            part = parts.get(move.tp)
            placed = part is not None and part.replicas == move.final and move.tp not in listed
            if (
                placed
                and not asks.keys() & {(*move.tp, b) for b in move.dir_targets}
                and not misplaced(move, dirs)
            ):
                self.log(f"{_name(move)}: every replica in its planned log dir")
                updated = replace(updated, status=MoveStatus.DONE, finished_at=now, reason="")
            state = state.with_move(updated)
        return state

    def stop_stuck(self, state: ExecutionState) -> ExecutionState:
        """Cancel moves without progress for the move timeout, and every move towards a broker that
        has left the cluster once one of them made no progress for the dead-broker timeout: that
        broker is declared gone for the rest of this execution."""
        now = self.clock()
        in_flight = state.by_status(MoveStatus.IN_FLIGHT)
        live = self.admin.broker_ids() if any(m.adding for m in in_flight) else frozenset()
        gone = set(state.gone_brokers)
        for move in in_flight:
            idle = move.idle_seconds(now)
            if idle > self.options.dead_broker_timeout_s:
                gone.update(b for b in move.adding if b not in live)
        for broker in sorted(gone - state.gone_brokers):
            self.log(f"broker {broker} left the cluster: no move towards it starts in this execution")
        state = replace(state, gone_brokers=frozenset(gone))
        stuck: dict[Tp, tuple[Move, str]] = {}
        for move in in_flight:
            idle = move.idle_seconds(now)
            lost = sorted(set(move.adding) & gone)
            if lost:
                left = f"destination broker {', '.join(map(str, lost))} left the cluster"
                reason = f"{left} (no progress for {age_text(idle)}); reassignment cancelled"
                stuck[move.tp] = (move, reason)
            elif idle > self.options.timeout_per_move_s:
                reason = (
                    f"no progress for {age_text(self.options.timeout_per_move_s)}; reassignment cancelled"
                )
                stuck[move.tp] = (move, reason)
        if not stuck:
            return state
        # A move of dirs alone has no reassignment to cancel; its copies between dirs are stopped.
        self.admin.alter_reassignments(
            {tp: None for tp, (m, _) in stuck.items() if m.target != m.source or not m.dir_targets}
        )
        stop_copies(self.admin, [move for move, _ in stuck.values()])
        for move, reason in stuck.values():
            self.log(f"{_name(move)}: failed: {reason}")
            state = state.with_move(replace(move, status=MoveStatus.FAILED, reason=reason, finished_at=now))
        return state

    def submit(self, state: ExecutionState) -> ExecutionState:
        options = self.options
        now = self.clock()
        for move in state.by_status(MoveStatus.PENDING):
            lost = sorted(set(move.adding) & state.gone_brokers)
            if lost:
                reason = f"not started: destination broker {', '.join(map(str, lost))} left the cluster"
                self.log(f"{_name(move)}: failed: {reason}")
                state = state.with_move(
                    replace(move, status=MoveStatus.FAILED, reason=reason, finished_at=now)
                )
        batch = next_batch(state.moves, options.max_moves_per_broker, options.max_moves, state.order)
        if not batch:
            return state
        # A partition another tool is reassigning waits for that reassignment to end: submitting ours
        # would replace it. Once it ends, observe skips the move if it changed the replicas.
        foreign = {m.tp for m in batch} & set(self.admin.reassignments())
        if foreign:
            for tp in sorted(foreign - self.waiting_for_others):
                self.log(f"{_tp(tp)}: waits for a reassignment this execution did not start")
            self.waiting_for_others |= foreign
            others = [m for m in state.moves if m.tp not in foreign]
            batch = next_batch(others, options.max_moves_per_broker, options.max_moves, state.order)
            if not batch:
                return state
        unhealthy = self.unhealthy(batch)
        if unhealthy:
            return self.wait_for_health(state, unhealthy, now)
        if state.waiting:
            self.log("the batch's partitions are healthy again: submitting")
            state = replace(state, waiting="", waiting_since=None)
        for move in batch:
            state = state.with_move(
                replace(move, status=MoveStatus.IN_FLIGHT, started_at=now, progress_at=now)
            )
        state = self.commit(state)
        state = sync_throttles(self.admin, state, self.commit)
        # Dirs first, as Kafka's own tool does: a broker that will host a new replica then creates it
        # in its planned dir.
        state = self.steer_dirs(state, [m.tp for m in batch])
        still = {m.tp: m for m in state.by_status(MoveStatus.IN_FLIGHT)}
        batch = [still[m.tp] for m in batch if m.tp in still]
        # A move of dirs alone has no reassignment to submit.
        refused = self.admin.alter_reassignments(
            {m.tp: m.target for m in batch if m.target != m.source or not m.dir_targets}
        )
        for move in batch:
            towards = f", a step towards {list(move.planned)}" if move.planned else ""
            dirs = "".join(f", {b} into {d}" for b, d in sorted(move.dir_targets.items()) if b in move.target)
            moved = f"{list(move.source)} -> {list(move.target)}"
            self.log(f"{_name(move)}: {moved} ({move.size} bytes{towards}{dirs})")
            if move.tp in refused:
                reason = f"Kafka refused the reassignment: {refused[move.tp]}"
                self.log(f"{_name(move)}: failed: {reason}")
                failed = replace(move, status=MoveStatus.FAILED, reason=reason, finished_at=now)
                state = state.with_move(failed)
        return self.commit(state)

    def unhealthy(self, batch: list[Move]) -> list[str]:
        """The partitions of ``batch`` no copy may start on now, each with why: a replica its move
        keeps is out of the ISR (a broker down or lagging), or the ISR is below the topic's
        ``min.insync.replicas``. A replica out of sync that the move takes away (a failed broker
        being replaced) is no reason to wait: the move is the cure."""
        copying = [m for m in batch if m.brokers]
        if not copying:
            return []
        topics = {m.topic for m in copying}
        parts = self.admin.partitions(topics)
        min_isr = self.admin.min_insync_replicas(topics)
        found = []
        for move in copying:
            part = parts.get(move.tp)
            if part is None:
                continue  # deleted: the next round's observe skips it
            lagging = sorted((set(part.replicas) - part.isr) & set(move.target))
            least = min_isr.get(move.topic, 1)
            if lagging:
                found.append(f"{_name(move)} (replica(s) {', '.join(map(str, lagging))} out of sync)")
            elif len(part.isr) < least:
                found.append(f"{_name(move)} (ISR {sorted(part.isr)} below min.insync.replicas {least})")
        return found

    def wait_for_health(self, state: ExecutionState, unhealthy: list[str], now: float) -> ExecutionState:
        """Submit nothing while ``unhealthy`` names partitions, for at most the health timeout."""
        more = f" and {len(unhealthy) - SHOWN_PROBLEMS} more" if len(unhealthy) > SHOWN_PROBLEMS else ""
        text = (
            f"the next batch waits for {len(unhealthy)} partition(s) to be healthy: "
            f"{', '.join(unhealthy[:SHOWN_PROBLEMS])}{more}"
        )
        return self.wait(state, text, now)

    def wait(self, state: ExecutionState, text: str, now: float) -> ExecutionState:
        """Record (and tell once) why the execution waits; past the health timeout, stop it."""
        since = now if state.waiting_since is None else state.waiting_since
        limit = self.options.health_timeout_s
        if now - since > limit:
            raise ExecutionError(
                f"{text}, for {age_text(now - since)}, longer than the health timeout of {age_text(limit)}; "
                f"nothing more was submitted: once that is over, {self.resume_hint}"
            )
        if text != state.waiting:
            self.log(text)
            state = self.commit(replace(state, waiting=text, waiting_since=since))
        return state

    def elect_leaders_first(self, state: ExecutionState) -> ExecutionState:
        """Elect the planned leader of each reordering done, once, while the data moves still copy.

        A data move's leader waits for :meth:`apply_leadership` at the end, as Cruise Control moves
        leadership after the replicas: the copies still load the brokers it would lead on, and the
        plan's leader balance holds for its end, not for any state half-way."""
        fresh = [
            m for m in state.by_status(MoveStatus.DONE) if m.reorders_only and m.leader_elected_at is None
        ]
        if not fresh:
            return state
        parts = self.admin.partitions({m.topic for m in fresh})
        wrong = sorted(m.tp for m in fresh if m.tp in parts and parts[m.tp].leader != m.final[0])
        now = self.clock()
        for move in fresh:
            state = state.with_move(replace(move, leader_elected_at=now))
        # Committed before asking: a restart after this never asks again, the end of the plan does.
        state = self.commit(state)
        if wrong:
            self.log(f"electing preferred leaders for {len(wrong)} partition(s) (leadership first)")
            refused = self.admin.elect_preferred_leaders(wrong)
            for tp, reason in sorted(refused.items()):
                self.log(f"{_tp(tp)}: preferred leader not elected yet ({reason}); retried at the end")
        return state

    def apply_leadership(self, state: ExecutionState) -> ExecutionState:
        """Preferred-leader election where the leader is not ``replicas[0]`` of the plan."""
        done = {m.tp: m.final[0] for m in state.by_status(MoveStatus.DONE)}
        deadline = self.clock() + self.options.settle_timeout_s
        while True:
            parts = self.admin.partitions({tp[0] for tp in done})
            wrong = sorted(tp for tp, leader in done.items() if tp in parts and parts[tp].leader != leader)
            if not wrong:
                return self.commit(replace(state, leadership_done=True))
            if self.clock() > deadline:
                self.log(
                    f"leadership not applied within {age_text(self.options.settle_timeout_s)} "
                    f"for {len(wrong)}"
                )
                return state
            self.log(f"electing preferred leaders for {len(wrong)} partition(s)")
            self.admin.elect_preferred_leaders(wrong)
            self.sleep(self.options.poll_interval_s)

    def verify(self, state: ExecutionState) -> ExecutionState:
        """Replicas, leader and ISR as planned for every move, no throttle of ours left; else raise.

        What catches up by itself (ISR, leader, a removed config the broker still shows) is polled
        until the settle timeout; anything else fails at once."""
        deadline = self.clock() + self.options.settle_timeout_s
        while True:
            parts = self.admin.partitions({m.topic for m in state.moves})
            checked = [_verify_move(m, parts.get(m.tp)) for m in state.moves]
            with_dirs = [m for m in state.by_status(MoveStatus.DONE) if m.dir_targets]
            dirs = replica_dirs(self.admin, dir_brokers(with_dirs)) if with_dirs else {}
            checked += [_Problem(text, settles=False) for m in with_dirs for text in misplaced(m, dirs)]
            broken = [p.text for p in checked if p is not None and not p.settles]
            broken += [f"throttle left: {t}" for t in throttles_on_down_brokers(self.admin, state)]
            settling = [p.text for p in checked if p is not None and p.settles]
            settling += [f"throttle left: {t}" for t in leftover_throttles(self.admin, state)]
            if not broken and not settling:
                return self.commit(replace(state, finished_at=self.clock()))
            if broken or self.clock() > deadline:
                problems = broken + settling
                shown = "; ".join(problems[:SHOWN_PROBLEMS])
                more = (
                    f"; and {len(problems) - SHOWN_PROBLEMS} more" if len(problems) > SHOWN_PROBLEMS else ""
                )
                raise ExecutionError(f"verification failed: {len(problems)} problem(s): {shown}{more}")
            self.sleep(self.options.poll_interval_s)


def _observed(
    move: Move,
    part: PartitionState | None,
    listed: OngoingReassignment | None,
    now: float,
    stepping: tuple[int, Racks],
) -> Move:
    """The move as Kafka shows it now; ``stepping`` (replicas at a time, racks) picks a next step."""
    if move.status not in (MoveStatus.PENDING, MoveStatus.IN_FLIGHT):
        return move
    if part is None:
        return replace(move, status=MoveStatus.SKIPPED, finished_at=now, reason=TOPIC_DELETED)
    if listed is not None:
        return move
    if part.replicas == move.final:
        if move.dir_targets:
            # Done once every replica is seen in its planned dir (Executor.steer_dirs).
            return move
        return replace(move, status=MoveStatus.DONE, finished_at=now, reason="")
    if part.replicas == move.target:
        # A step done: the next one waits for its turn in a batch like any pending move.
        return replace(
            move,
            source=move.target,
            target=next_step(move.target, move.final, *stepping),
            status=MoveStatus.PENDING,
            started_at=None,
            progress_at=None,
            progress_bytes=0,
        )
    changed = replace(
        move,
        status=MoveStatus.SKIPPED,
        finished_at=now,
        reason=f"someone else changed its replicas to {list(part.replicas)}",
    )
    if move.status is MoveStatus.PENDING:
        # A replica of the source gone is someone else's change. More replicas than the source may be
        # a broker's metadata that lags a step just done (the step's union): submitted as planned.
        return move if set(part.replicas) >= set(move.source) else changed
    if set(part.replicas) == set(move.source) | set(move.target):
        # Metadata lags the controller's reassignment list by a moment: still settling.
        return move
    if part.replicas == move.source:
        # Recorded in flight, but Kafka never took it (a crash before submission): submit it again.
        return replace(move, status=MoveStatus.PENDING, started_at=None, progress_at=None, progress_bytes=0)
    return changed


@dataclass(frozen=True)
class _Problem:
    text: str
    settles: bool  # Kafka catches up by itself (ISR, leader election): worth polling for


def _verify_move(move: Move, part: PartitionState | None) -> _Problem | None:
    name = _name(move)
    if move.status is MoveStatus.SKIPPED:
        return None  # not ours any more: the reason is on record
    if move.status is not MoveStatus.DONE:
        return _Problem(f"{name} is {move.status.value} {move.reason}".rstrip(), settles=False)
    if part is None:
        return None  # done, then its topic was deleted: nothing of it is left to check
    if part.replicas != move.final:
        return _Problem(f"{name} replicas {list(part.replicas)}, planned {list(move.final)}", settles=False)
    if part.leader != move.final[0]:
        return _Problem(f"{name} leader {part.leader}, planned {move.final[0]}", settles=True)
    if part.isr != set(move.final):
        return _Problem(f"{name} ISR {sorted(part.isr)} incomplete", settles=True)
    return None


def _tp(tp: Tp) -> str:
    return f"{tp[0]}-{tp[1]}"


def _name(move: Move) -> str:
    return _tp(move.tp)
