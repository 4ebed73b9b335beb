"""The ``kafka-balancer`` command line.

Exit codes (docs/design.md): 0 done; 2 bad input (one line naming the field, no output file);
3 hard goals cannot be satisfied (says which and why, no output file). Each command's
implementation lives in its layer; this module only parses arguments, sends the Kafka clients' own
log lines to ``--kafka-log`` (kafka/client_log.py) and maps errors. Every command's ``--help`` ends
with an example a person can copy (``EXAMPLES``).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from kafka_balancer import __version__
from kafka_balancer.api import Execution, throttle_rate
from kafka_balancer.commands.completion import add_arguments as add_completion_arguments
from kafka_balancer.commands.demo import add_arguments as add_demo_arguments
from kafka_balancer.commands.pools import add_arguments as add_pool_arguments
from kafka_balancer.commands.run import add_arguments as add_run_arguments
from kafka_balancer.durations import EXAMPLES as DURATION_EXAMPLES
from kafka_balancer.durations import age_text, parse_duration
from kafka_balancer.errors import InfeasibleError, InputError, KafkaBalancerError
from kafka_balancer.kafka.client_log import clients_logging_to, default_log_file, log_handler
from kafka_balancer.kafka.execution_state import MoveOrder
from kafka_balancer.scoring.options import add_arguments as add_score_arguments

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INFEASIBLE = 3
# The operator's image leaves matplotlib out: only `report` draws.
NEEDS_REPORT_EXTRA = (
    "drawing needs matplotlib, which this installation leaves out (the operator's image does): "
    "pip install 'kafka-balancer[report]'"
)
# The command line's own installation leaves out what scoring runs on: the operator extra.
NEEDS_OPERATOR_EXTRA = (
    "scoring runs on pyspark and pandas, which this installation leaves out (they are the operator "
    "extra): pip install 'kafka-balancer[operator]'"
)
OPERATOR_EXTRA = ("pyspark", "pandas")

# The CR's execution defaults are the command line's (one source: the model's defaults).
_EXECUTION = Execution()
# Flags the CR has no field for.
OUTAGE_TIMEOUT_S = 300
CANCEL_TIMEOUT_S = 120


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


Handler = Callable[[argparse.Namespace], int]

# One copyable command line per command, shown at the end of its --help (a unit test parses each).
EXAMPLES = {
    "plan": "kafka-balancer plan --snapshot snapshot.json --goals goals.yaml --output plan.json",
    "snapshot": "kafka-balancer snapshot --bootstrap-server kafka-0:9092 --window 5m --interval 10s "
    "--disk-capacity 1e12 --network-capacity 1.25e8 --cpu-capacity 8 --output snapshot.json",
    "execute": "kafka-balancer execute --plan plan.json --bootstrap-server kafka-0:9092 --throttle 50000000",
    "status": "kafka-balancer status --state plan.json.state.json",
    "cancel": "kafka-balancer cancel --state plan.json.state.json --bootstrap-server kafka-0:9092",
    "run": "kafka-balancer run --kubeconfig ~/.kube/config --namespace kafka --metrics-port 8000",
    "score": "kafka-balancer score --samples samples/ --topology brokers.json --goals goals.yaml "
    "--out scores/",
    "report": "kafka-balancer report --snapshot snapshot.json --plan plan.json --goals goals.yaml "
    "--output report.png",
    "demo": "kafka-balancer demo --fast",
    "pool": "kafka-balancer pool approve main -n kafka --plan 3f9c1e07aa",
    "completion": "kafka-balancer completion bash",
}


def _command(commands: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with its example."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=help_text,
        description=help_text[0].upper() + help_text[1:] + ".",
        epilog=f"example:\n  {EXAMPLES[name]}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def _plan(args: argparse.Namespace) -> int:
    from kafka_balancer.commands.plan import run_plan

    return run_plan(args.snapshot, args.goals, args.output, args.report)


def _snapshot(args: argparse.Namespace) -> int:
    from kafka_balancer.commands.snapshot import run_snapshot

    return run_snapshot(args)


def _without_operator_extra(command: str) -> bool:
    """Whether the operator extra is missing, said in one line (the commands that score need it)."""
    if all(importlib.util.find_spec(module) is not None for module in OPERATOR_EXTRA):
        return False
    print(f"kafka-balancer {command}: {NEEDS_OPERATOR_EXTRA}", file=sys.stderr)
    return True


def _score(args: argparse.Namespace) -> int:
    if _without_operator_extra("score"):
        return EXIT_BAD_INPUT
    from kafka_balancer.commands.score import run_score

    return run_score(args)


# The execute flags a BrokerPool's spec.execution also takes: the CLI holds them to the CR's bounds.
_EXECUTION_FLAGS = {
    "maxMovesPerBroker": ("--max-moves-per-broker", "max_moves_per_broker"),
    "maxMoves": ("--max-moves", "max_moves"),
    "moveTimeoutSeconds": ("--timeout-per-move", "timeout_per_move"),
    "deadBrokerTimeoutSeconds": ("--dead-broker-timeout", "dead_broker_timeout"),
    "healthTimeoutSeconds": ("--health-timeout", "health_timeout"),
    "replicasAtATime": ("--replicas-at-a-time", "replicas_at_a_time"),
}


def _within_execution_bounds(args: argparse.Namespace) -> None:
    """:class:`InputError` naming the flag when a value is outside what ``spec.execution`` accepts.

    The CR refuses more moves per broker than in all; here ``--max-moves 1`` alone must not be
    refused for the per-broker default, and a per-broker bound above the total never binds, so the
    check takes the smaller."""
    values = {field: getattr(args, attr) for field, (_, attr) in _EXECUTION_FLAGS.items()}
    values["maxMovesPerBroker"] = min(values["maxMovesPerBroker"], values["maxMoves"])
    if not values["replicasAtATime"]:
        del values["replicasAtATime"]  # 0: all at once, the CR's default (no field)
    try:
        Execution.model_validate(values)
    except ValidationError as err:
        first = err.errors()[0]
        flag, attr = _EXECUTION_FLAGS[str(first["loc"][0])]
        shown = getattr(args, attr)
        if flag.endswith(("timeout", "move")):
            shown = age_text(shown)
        message = first["msg"].replace("Input should be", "must be")
        raise InputError(f"{flag} {shown}: {message}, as the BrokerPool's spec.execution takes it") from None


def _execute(args: argparse.Namespace) -> int:
    from kafka_balancer.commands.execute import run_execute

    _within_execution_bounds(args)
    return run_execute(args)


def _status(args: argparse.Namespace) -> int:
    from kafka_balancer.commands.execute import run_status

    return run_status(args)


def _cancel(args: argparse.Namespace) -> int:
    from kafka_balancer.commands.execute import run_cancel

    return run_cancel(args)


def _report(args: argparse.Namespace) -> int:
    try:
        from kafka_balancer.commands.report import run_report
    except ModuleNotFoundError as err:
        # Only matplotlib's absence means "installed without the report extra".
        if (err.name or "").partition(".")[0] != "matplotlib":
            raise
        print(f"kafka-balancer report: {NEEDS_REPORT_EXTRA}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return run_report(args.snapshot, args.plan, args.goals, args.output)


def _demo(args: argparse.Namespace) -> int:
    if _without_operator_extra("demo"):
        return EXIT_BAD_INPUT
    from kafka_balancer.commands.demo import run_demo

    return run_demo(args)


def _pool(args: argparse.Namespace) -> int:
    from kafka_balancer.commands.pools import run_pool

    return run_pool(args)


def _completion(args: argparse.Namespace) -> int:
    from kafka_balancer.commands.completion import completion_script

    print(completion_script(build_parser(), args.shell), end="")
    return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    if _without_operator_extra("run"):
        return EXIT_BAD_INPUT
    from kafka_balancer.commands.run import run_run

    return run_run(args)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {value}")
    return value


def _throttle(text: str) -> int:
    try:
        return throttle_rate(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _duration(text: str) -> int:
    try:
        seconds = parse_duration(text, bare_seconds=True)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a duration ({DURATION_EXAMPLES}) nor a number of seconds"
        ) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return seconds


def _add_duration(parser: argparse.ArgumentParser, flag: str, default: int, help_text: str) -> None:
    """A duration flag: the CRs' grammar or bare seconds; its value is seconds (an int)."""
    parser.add_argument(
        flag,
        type=_duration,
        default=default,
        metavar="DURATION",
        help=f"how long {help_text} ({DURATION_EXAMPLES}, or seconds; default {age_text(default)})",
    )


def _add_kafka_log(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kafka-log",
        type=Path,
        help="where the Kafka clients' own log lines go (librdkafka's connection failures and retries), "
        f"appended; default {default_log_file()} ($XDG_STATE_HOME), dropped when that cannot be written",
    )


def _add_execution_commands(commands: Any) -> None:
    execute = _command(commands, "execute", "execute a plan on Kafka: throttled, batched, resumable")
    execute.add_argument("--plan", required=True, type=Path, help="plan (Kafka reassignment JSON)")
    execute.add_argument("--bootstrap-server", required=True, help="host:port[,host:port...]")
    execute.add_argument("--command-config", type=Path, help="client properties (security, SASL, SSL)")
    execute.add_argument(
        "--throttle",
        type=_throttle,
        metavar="QUANTITY",
        help="replication throttle, bytes/s per broker (also the rate of copies between its log dirs), a "
        "Kubernetes quantity as the CR takes it (50Mi, 1000000, 1.5M); default "
        f"{_EXECUTION.throttle_bytes_per_second} for a new execution, a resumed one keeps its own",
    )
    execute.add_argument(
        "--max-moves-per-broker",
        type=_positive,
        default=_EXECUTION.max_moves_per_broker,
        help=f"moves in flight per broker (default {_EXECUTION.max_moves_per_broker})",
    )
    execute.add_argument(
        "--max-moves",
        type=_positive,
        default=_EXECUTION.max_moves,
        help=f"moves in flight cluster-wide (default {_EXECUTION.max_moves})",
    )
    execute.add_argument("--state", type=Path, help="state file (default: <plan>.state.json)")
    _add_duration(
        execute, "--timeout-per-move", _EXECUTION.move_timeout_seconds, "a move may go without progress"
    )
    _add_duration(
        execute,
        "--dead-broker-timeout",
        _EXECUTION.dead_broker_timeout_seconds,
        "a move waits for a destination broker that left the cluster (a restart comes back)",
    )
    _add_duration(
        execute,
        "--outage-timeout",
        OUTAGE_TIMEOUT_S,
        "the execution rides out Kafka not answering (its controller down, a broker hanging) before it "
        "stops; a re-run resumes it",
    )
    _add_duration(
        execute,
        "--health-timeout",
        _EXECUTION.health_timeout_seconds,
        "a batch waits for its partitions' replicas to be in sync (and their ISR at min.insync.replicas) "
        "before the execution stops; a re-run resumes it",
    )
    execute.add_argument("--poll-interval", type=float, default=1.0, help=argparse.SUPPRESS)
    execute.add_argument("--force", action="store_true", help="start despite under-replicated partitions")
    execute.add_argument(
        "--replicas-at-a-time",
        type=_positive,
        default=0,
        help="copy at most N new replicas of a partition at once, in steps (default: all at once)",
    )
    execute.add_argument(
        "--order",
        choices=[o.value for o in MoveOrder],
        help="which pending moves start first: the plan's order (default) or the smallest partitions; "
        "a resumed run keeps its order unless given again",
    )
    _add_kafka_log(execute)
    execute.set_defaults(handler=_execute)

    status = _command(commands, "status", "progress of an execution")
    status.add_argument("--state", required=True, type=Path, help="the execution's state file")
    status.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "yaml"),
        default="text",
        help="text (default), or a document of the same facts in numbers for scripts",
    )
    status.set_defaults(handler=_status)

    cancel = _command(commands, "cancel", "cancel an execution and remove its throttles")
    cancel.add_argument("--state", required=True, type=Path, help="the execution's state file")
    cancel.add_argument("--bootstrap-server", required=True, help="host:port[,host:port...]")
    cancel.add_argument("--command-config", type=Path, help="client properties (security, SASL, SSL)")
    _add_duration(
        cancel,
        "--timeout",
        CANCEL_TIMEOUT_S,
        "the whole cancel may take, waiting for the executor and Kafka's answers included",
    )
    _add_kafka_log(cancel)
    cancel.set_defaults(handler=_cancel)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafka-balancer", description="Keeps Apache Kafka clusters balanced.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    plan = _command(commands, "plan", "plan partition moves for a snapshot and goals")
    plan.add_argument("--snapshot", required=True, type=Path, help="cluster snapshot JSON")
    plan.add_argument("--goals", required=True, type=Path, help="BalancerGoal manifests (YAML or JSON)")
    plan.add_argument(
        "--output", required=True, type=Path, help="where to write the plan (reassignment JSON)"
    )
    plan.add_argument("--report", type=Path, help="also write a JSON report of the plan")
    plan.set_defaults(handler=_plan)

    snapshot = _command(commands, "snapshot", "sample load through the Admin API, write a snapshot")
    snapshot.add_argument("--bootstrap-server", required=True, help="host:port[,host:port...]")
    snapshot.add_argument("--command-config", type=Path, help="client properties (security, SASL, SSL)")
    snapshot.add_argument("--window", default="5m", help="how long to sample (e.g. 5m, 90s)")
    snapshot.add_argument("--interval", default="10s", help="time between sampling passes")
    snapshot.add_argument("--capacity-file", type=Path, help="broker capacities (JSON)")
    snapshot.add_argument("--disk-capacity", type=float, help="bytes per broker")
    snapshot.add_argument("--network-capacity", type=float, help="bytes/s per broker, in and out")
    snapshot.add_argument("--cpu-capacity", type=float, help="cores per broker")
    snapshot.add_argument("--store", type=Path, help="durable sample store directory (default: temporary)")
    snapshot.add_argument(
        "--prometheus-url", help="Prometheus (query API) with broker cpu and network; optional"
    )
    snapshot.add_argument(
        "--prometheus-config", type=Path, help="Prometheus source settings (JSON: label, queries, TLS)"
    )
    snapshot.add_argument("--output", required=True, type=Path, help="where to write the snapshot JSON")
    _add_kafka_log(snapshot)
    snapshot.set_defaults(handler=_snapshot)
    _add_execution_commands(commands)

    run = _command(commands, "run", "run the operator (BrokerPool and BalancerGoal resources)")
    add_run_arguments(run)
    run.set_defaults(handler=_run)

    score = _command(commands, "score", "score the cluster model from a sample store (Spark)")
    add_score_arguments(score)
    score.set_defaults(handler=_score)

    report = _command(commands, "report", "picture of a plan: per-broker load before/after")
    report.add_argument("--snapshot", required=True, type=Path, help="cluster snapshot JSON")
    report.add_argument("--plan", required=True, type=Path, help="plan (Kafka reassignment JSON)")
    report.add_argument("--goals", type=Path, help="BalancerGoal manifests (default: the default goal set)")
    report.add_argument("--output", required=True, type=Path, help="where to write it: .png or .html")
    report.set_defaults(handler=_report)

    pool = _command(commands, "pool", "get, describe, approve, pause, resume or cancel pools in a cluster")
    add_pool_arguments(pool)
    pool.set_defaults(handler=_pool)

    demo = _command(commands, "demo", "local Kafka + API server + operator: balance, scale up, drain")
    add_demo_arguments(demo)
    demo.set_defaults(handler=_demo)

    completion = _command(commands, "completion", "print a shell completion script (bash or zsh)")
    add_completion_arguments(completion)
    completion.set_defaults(handler=_completion)
    return parser


def _kafka_log(args: argparse.Namespace) -> AbstractContextManager[None]:
    """The Kafka clients' log lines into the command's --kafka-log file (or the default one); the
    operator (``run``) logs them with its own lines."""
    if "kafka_log" not in args:
        return nullcontext()
    if args.kafka_log is not None:
        try:
            handler = log_handler(args.kafka_log)
        except OSError as err:
            raise InputError(f"--kafka-log {args.kafka_log}: cannot be written: {err.strerror}") from None
    else:
        try:
            handler = log_handler(default_log_file())
        except OSError:
            # A read-only home (a container): the lines are dropped rather than printed.
            handler = log_handler(None)
    return clients_logging_to(handler)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        with _kafka_log(args):
            return handler(args)
    except InputError as exc:
        print(f"kafka-balancer {args.command}: bad input: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except InfeasibleError as exc:
        print(f"kafka-balancer {args.command}: infeasible: {exc}", file=sys.stderr)
        return EXIT_INFEASIBLE
    except KafkaBalancerError as exc:
        print(f"kafka-balancer {args.command}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
