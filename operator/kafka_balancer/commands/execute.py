"""``kafka-balancer execute | status | cancel``: run a plan on Kafka, report it, stop it."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kafka_balancer.errors import ExecutionError, InputError
from kafka_balancer.formats.plan_file import read_plan
from kafka_balancer.kafka.admin import KafkaAdmin, check_connection, load_properties
from kafka_balancer.kafka.cancel import cancel_execution
from kafka_balancer.kafka.execution_lock import StateLock, cancel_marker
from kafka_balancer.kafka.execution_state import ExecutionState, MoveOrder, load_state, save_state
from kafka_balancer.kafka.executor import ExecuteOptions, Executor, check_same_plan, new_state
from kafka_balancer.kafka.progress import summary

CANCEL_WAIT_S = 120.0


def _connection(bootstrap: str, command_config: Path | None) -> dict[str, str]:
    """Client properties just seen to work: bad credentials fail here, in one line, before any lock."""
    props = load_properties(command_config) if command_config else {}
    check_connection(bootstrap, props)
    return props


def run_execute(args: argparse.Namespace) -> int:
    plan = read_plan(args.plan)
    state_path: Path = args.state or args.plan.with_name(args.plan.name + ".state.json")
    options = ExecuteOptions(
        throttle=args.throttle,
        max_moves_per_broker=args.max_moves_per_broker,
        max_moves=args.max_moves,
        timeout_per_move_s=float(args.timeout_per_move),
        dead_broker_timeout_s=float(args.dead_broker_timeout),
        poll_interval_s=args.poll_interval,
        force=args.force,
        replicas_at_a_time=args.replicas_at_a_time,
        order=None if args.order is None else MoveOrder(args.order),
    )
    props = _connection(args.bootstrap_server, args.command_config)
    lock = StateLock(state_path)
    if not lock.try_acquire():
        raise ExecutionError(f"another kafka-balancer process is working on {state_path}")
    admin = KafkaAdmin(args.bootstrap_server, props)
    try:
        marker = cancel_marker(state_path)
        if state_path.exists():
            state = load_state(state_path)
            check_same_plan(state, plan, state_path)
            print(f"resuming from {state_path}", flush=True)
        else:
            state = new_state(admin, plan, options, time.time())
        executor = Executor(
            admin,
            state_path,
            options,
            log=lambda line: print(line, flush=True),
            cancel_requested=marker.exists,
        )
        state = executor.run(state)
        print(summary(state, time.time()), flush=True)
        return 0
    finally:
        admin.close()
        lock.release()


def run_status(args: argparse.Namespace) -> int:
    if not args.state.exists():
        raise InputError(f"--state {args.state}: no such file")
    print(summary(load_state(args.state), time.time()))
    return 0


def run_cancel(args: argparse.Namespace) -> int:
    """Ask a running executor to stop, then cancel whatever it left in flight and remove our throttles."""
    if not args.state.exists():
        raise InputError(f"--state {args.state}: no such file")
    props = _connection(args.bootstrap_server, args.command_config)
    lock = StateLock(args.state)
    marker = cancel_marker(args.state)
    deadline = time.monotonic() + CANCEL_WAIT_S
    if not lock.try_acquire():
        marker.touch()
        while not lock.try_acquire():
            if time.monotonic() > deadline:
                raise ExecutionError(f"the executor on {args.state} did not stop within {CANCEL_WAIT_S:.0f}s")
            time.sleep(0.2)
    admin = KafkaAdmin(args.bootstrap_server, props)
    try:

        def commit(state: ExecutionState) -> ExecutionState:
            save_state(args.state, state)
            return state

        state = cancel_execution(admin, load_state(args.state), commit, clock=time.time, sleep=time.sleep)
        marker.unlink(missing_ok=True)
        print(summary(state, time.time()))
        return 0
    finally:
        admin.close()
        lock.release()
