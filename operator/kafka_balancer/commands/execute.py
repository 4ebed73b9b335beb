"""``kafka-balancer execute | status | cancel``: run a plan on Kafka, report it, stop it."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from kafka_balancer.api import Execution, throttle_rate
from kafka_balancer.commands.progress_display import ProgressDisplay, progress_display
from kafka_balancer.durations import age_text
from kafka_balancer.errors import ExecutionError, InputError, KafkaUnavailableError
from kafka_balancer.formats.plan_file import read_plan
from kafka_balancer.kafka.admin import TIMEOUT_S, KafkaAdmin, check_connection, load_properties
from kafka_balancer.kafka.cancel import cancel_execution
from kafka_balancer.kafka.execution_lock import CancelMarker, StateLock
from kafka_balancer.kafka.execution_state import ExecutionState, MoveOrder, MoveStatus, load_state, save_state
from kafka_balancer.kafka.executor import ExecuteOptions, Executor, check_same_plan, new_state
from kafka_balancer.kafka.progress import progress_document, summary


def _connection(bootstrap: str, command_config: Path | None, timeout_s: float = TIMEOUT_S) -> dict[str, str]:
    """Client properties just seen to work: bad credentials fail here, in one line, before any lock."""
    props = load_properties(command_config) if command_config else {}
    check_connection(bootstrap, props, timeout_s)
    return props


def _command(name: str, args: argparse.Namespace, *flags: str) -> str:
    """The command line that runs ``name`` again on the same state file and cluster."""
    words = ["kafka-balancer", name]
    for flag in flags:
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if value is not None:
            words += [flag, str(value)]
    return shlex.join(words)


class _ShownExecutor(Executor):
    """The CLI's executor: each state it commits also moves the terminal's bar (bytes copied, between
    brokers and between a broker's log dirs)."""

    def __init__(self, *args: Any, display: ProgressDisplay, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._display = display

    def commit(self, state: ExecutionState) -> ExecutionState:
        state = super().commit(state)
        done = len(state.by_status(MoveStatus.DONE))
        self._display.update(
            state.bytes_done + state.dir_bytes_done,
            state.bytes_total + state.dir_bytes_total,
            status=f"{done}/{len(state.moves)} moves",
        )
        return state


def run_execute(args: argparse.Namespace) -> int:
    plan = read_plan(args.plan)
    state_path: Path = args.state or args.plan.with_name(args.plan.name + ".state.json")
    options = ExecuteOptions(
        throttle=args.throttle,
        max_moves_per_broker=args.max_moves_per_broker,
        max_moves=args.max_moves,
        timeout_per_move_s=float(args.timeout_per_move),
        dead_broker_timeout_s=float(args.dead_broker_timeout),
        outage_timeout_s=float(args.outage_timeout),
        health_timeout_s=float(args.health_timeout),
        poll_interval_s=args.poll_interval,
        force=args.force,
        replicas_at_a_time=args.replicas_at_a_time,
        order=None if args.order is None else MoveOrder(args.order),
    )
    props = _connection(args.bootstrap_server, args.command_config)
    lock = StateLock(state_path)
    if not lock.try_acquire():
        raise ExecutionError(f"another kafka-balancer process is working on {state_path}")
    admin = KafkaAdmin(args.bootstrap_server, props, timeout_s=options.request_timeout_s)
    resume = _command("execute", args, "--plan", "--bootstrap-server", "--command-config")
    resume += f" --state {shlex.quote(str(state_path))}"
    try:
        marker = CancelMarker(state_path)
        if state_path.exists():
            state = load_state(state_path)
            check_same_plan(state, plan, state_path)
            print(f"resuming from {state_path}", flush=True)
        else:
            # A new execution is throttled as the CR's default unless told otherwise; a resumed one
            # keeps the throttle it was started with (options.throttle None).
            if options.throttle is None:
                options = replace(options, throttle=throttle_rate(Execution().throttle_bytes_per_second))
            state = new_state(admin, plan, options, time.time())
        total = state.bytes_total + state.dir_bytes_total
        with progress_display(sys.stdout, "executing", total, data=True) as display:
            executor = _ShownExecutor(
                admin,
                state_path,
                options,
                display=display,
                log=display.line,
                cancel_requested=lambda: marker.requested(display.line),
                resume_hint=f"`{resume}` resumes it safely",
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
    state, now = load_state(args.state), time.time()
    if args.output == "json":
        print(json.dumps(progress_document(state, now), indent=2))
    elif args.output == "yaml":
        print(yaml.safe_dump(progress_document(state, now), sort_keys=False).rstrip())
    else:
        print(summary(state, now))
    return 0


def run_cancel(args: argparse.Namespace) -> int:
    """Ask a running executor to stop, then cancel whatever it left in flight and remove our throttles,
    all within ``--timeout``. A cancel that fails leaves no request to stop behind."""
    if not args.state.exists():
        raise InputError(f"--state {args.state}: no such file")
    limit = float(args.timeout)
    started = time.monotonic()
    deadline = started + limit
    props = _connection(args.bootstrap_server, args.command_config, min(TIMEOUT_S, limit))
    lock = StateLock(args.state)
    marker = CancelMarker(args.state)
    try:
        if not lock.try_acquire():
            marker.hold()
            while not lock.try_acquire():
                if time.monotonic() > deadline:
                    waited = f"did not stop within {age_text(limit)}"
                    raise ExecutionError(f"the executor on {args.state} {waited}; nothing was cancelled")
                marker.keep()
                time.sleep(0.2)
        admin = KafkaAdmin(args.bootstrap_server, props, deadline=deadline)
        try:

            def commit(state: ExecutionState) -> ExecutionState:
                save_state(args.state, state)
                return state

            state = cancel_execution(
                admin,
                load_state(args.state),
                commit,
                clock=time.time,
                sleep=time.sleep,
                timeout_s=deadline - time.monotonic(),
            )
        except KafkaUnavailableError as err:
            again = _command("cancel", args, "--state", "--bootstrap-server", "--command-config")
            raise ExecutionError(
                f"cancel gave up after {age_text(time.monotonic() - started)} (limit {age_text(limit)}): "
                f"{err}; moves may still be in flight and our throttles set: once Kafka answers, "
                f"`{again}` finishes the cancel and removes them"
            ) from err
        finally:
            admin.close()
        print(summary(state, time.time()))
        return 0
    finally:
        marker.release()
        lock.release()
