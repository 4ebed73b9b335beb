"""The command line takes the CR's units and defaults: a throttle is a Kubernetes quantity, a
duration is written as in the CR (or as seconds), a bad value exits 2 in one line naming the flag,
durations print as kubectl prints ages, and docs/cli.md's defaults table is the parser's."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafka_balancer.api import Execution, WarmUp
from kafka_balancer.cli import build_parser, main
from kafka_balancer.commands import execute
from kafka_balancer.durations import age_text, parse_duration
from kafka_balancer.kafka.executor import ExecuteOptions
from kafka_balancer.kube_quantity import parse_quantity
from tests.support.readme import ROOT

EXECUTE = ["execute", "--plan", "plan.json", "--bootstrap-server", "kafka-0:9092"]
CANCEL = ["cancel", "--state", "plan.json.state.json", "--bootstrap-server", "kafka-0:9092"]
DURATION_FLAGS = [
    (EXECUTE, "--timeout-per-move", "timeout_per_move"),
    (EXECUTE, "--dead-broker-timeout", "dead_broker_timeout"),
    (EXECUTE, "--outage-timeout", "outage_timeout"),
    (EXECUTE, "--health-timeout", "health_timeout"),
    (CANCEL, "--timeout", "timeout"),
]


def _parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


@pytest.mark.parametrize(
    ("text", "rate"),
    [("50Mi", 52_428_800), ("1000000", 1_000_000), ("1.5M", 1_500_000), ("2Ki", 2048), ("1e6", 1_000_000)],
)
def test_the_throttle_is_a_quantity_as_the_cr_takes_it(text: str, rate: int) -> None:
    assert _parse(*EXECUTE, "--throttle", text).throttle == rate


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        ([*EXECUTE, "--throttle", "50MB"], "--throttle"),
        ([*EXECUTE, "--throttle", "-5"], "--throttle"),
        ([*EXECUTE, "--throttle", "500m"], "--throttle"),  # half a byte a second: every move stalls
        ([*EXECUTE, "--throttle", "1000"], "--throttle"),  # below 1Ki, as the CR refuses it
        ([*EXECUTE, "--timeout-per-move", "10 minutes"], "--timeout-per-move"),
        ([*EXECUTE, "--dead-broker-timeout", "1.5m"], "--dead-broker-timeout"),
        ([*EXECUTE, "--outage-timeout", "0s"], "--outage-timeout"),
        ([*EXECUTE, "--health-timeout", "1d"], "--health-timeout"),
        ([*EXECUTE, "--health-timeout", ""], "--health-timeout"),
        ([*CANCEL, "--timeout", "0"], "--timeout"),
        ([*EXECUTE, "--max-moves", "lots"], "--max-moves"),
    ],
)
def test_a_bad_value_exits_2_with_one_line_naming_the_flag(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert f"argument {flag}" in lines[0] and "Traceback" not in err


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            ["--max-moves-per-broker", "1001", "--max-moves", "5000"],
            "--max-moves-per-broker 1001: must be less than",
        ),
        (["--max-moves", "10001"], "--max-moves 10001: must be less than or equal to 10000"),
        (["--timeout-per-move", "5s"], "--timeout-per-move 5s: must be greater than or equal to 10"),
        (["--dead-broker-timeout", "25h"], "--dead-broker-timeout 25h: must be less than or equal to 86400"),
        (["--health-timeout", "9"], "--health-timeout 9s: must be greater than or equal to 10"),
        (["--replicas-at-a-time", "101"], "--replicas-at-a-time 101: must be less than or equal to 100"),
    ],
)
def test_a_value_outside_the_crs_bounds_exits_2_naming_the_flag_before_reading_the_plan(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # No plan file exists: the bounds are checked before anything is read or connected.
    code = main([*EXECUTE, "--state", str(tmp_path / "state.json"), *flags])

    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"kafka-balancer execute: bad input: {said}"), err


@pytest.mark.parametrize(
    "flags",
    [
        ["--max-moves", "1"],
        ["--max-moves-per-broker", "20", "--max-moves", "10"],
        ["--timeout-per-move", "10"],
    ],
)
def test_values_within_the_crs_bounds_go_on_to_read_the_plan(
    flags: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A per-broker bound above the total never binds: not refused, as the CR would.
    code = main([*EXECUTE, "--state", str(tmp_path / "state.json"), *flags])

    assert code == 2
    assert "plan.json" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "flag", "dest"), DURATION_FLAGS)
@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("10m", 600), ("1h30m", 5400), ("45", 45)])
def test_every_duration_flag_takes_the_crs_grammar_or_seconds(
    argv: list[str], flag: str, dest: str, text: str, seconds: int
) -> None:
    assert getattr(_parse(*argv, flag, text), dest) == seconds


def test_the_cr_and_the_flags_read_durations_alike() -> None:
    for text in ("30m", "1h30m", "90s", "2h"):
        assert WarmUp(duration=text).seconds == parse_duration(text)
        assert _parse(*EXECUTE, "--timeout-per-move", text).timeout_per_move == WarmUp(duration=text).seconds


def test_the_execute_defaults_are_the_crs() -> None:
    cr = Execution()
    args = _parse(*EXECUTE)
    assert (args.max_moves_per_broker, args.max_moves) == (cr.max_moves_per_broker, cr.max_moves)
    assert args.timeout_per_move == cr.move_timeout_seconds
    assert args.dead_broker_timeout == cr.dead_broker_timeout_seconds
    assert args.health_timeout == cr.health_timeout_seconds
    # None: a new execution takes the CR's throttle, a resumed one keeps its own (commands/execute.py).
    assert args.throttle is None


def _defaults_table() -> list[list[str]]:
    page = (ROOT / "docs" / "cli.md").read_text()
    section = page.split("## Units, durations and defaults", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def test_the_docs_defaults_table_is_the_parsers_and_the_crs() -> None:
    rows = _defaults_table()
    assert rows
    parsers = {"execute": EXECUTE, "cancel": CANCEL}
    cr = Execution()
    documented = set()
    for flag_cell, takes, default, field in rows:
        command, flag = flag_cell.strip("`").split()
        documented.add((command, flag))
        action = next(a for a in _subparser(command)._actions if flag in a.option_strings)
        value = getattr(_parse(*parsers[command]), action.dest)
        shown = re.match(r"`([^`]+)`", default)
        assert shown is not None, default
        cr_value = None if field == "—" else getattr(cr, _field_name(field.strip("`")))
        if flag == "--throttle":
            assert value is None and shown.group(1) == cr_value
        elif takes == "duration":
            assert shown.group(1) == age_text(value) and parse_duration(shown.group(1)) == value
            assert field == "—" or cr_value == value
        else:
            assert shown.group(1) == str(value) and cr_value == value
    # Every flag that takes a unit or has a CR counterpart is in the table.
    assert {("execute", f) for _, f, _ in DURATION_FLAGS[:4]} | {("cancel", "--timeout")} <= documented
    counts = {("execute", "--max-moves"), ("execute", "--max-moves-per-broker")}
    assert {("execute", "--throttle"), *counts} <= documented


def _subparser(command: str) -> argparse.ArgumentParser:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = action.choices[command]
    return parser


def _field_name(alias: str) -> str:
    return next(name for name, info in Execution.model_fields.items() if info.alias == alias)


class _Started(Exception):
    """Stops `execute` once it has chosen the new execution's options."""


def test_a_new_execution_without_throttle_is_throttled_at_the_crs_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [2, 1]}]})
    )
    chosen: list[ExecuteOptions] = []

    def new_state(admin: object, plan: object, options: ExecuteOptions, now: float) -> None:
        chosen.append(options)
        raise _Started

    monkeypatch.setattr(execute, "_connection", lambda *args: {})
    monkeypatch.setattr(execute, "KafkaAdmin", lambda *args, **kwargs: SimpleNamespace(close=lambda: None))
    monkeypatch.setattr(execute, "new_state", new_state)
    for given, rate in ((None, parse_quantity(Execution().throttle_bytes_per_second)), ("1.5M", 1_500_000)):
        argv = ["execute", "--plan", str(plan), "--bootstrap-server", "kafka-0:9092"]
        with pytest.raises(_Started):
            main(
                [*argv, "--kafka-log", str(tmp_path / "kafka.log"), *(["--throttle", given] if given else [])]
            )
        assert chosen.pop().throttle == rate == (52_428_800 if given is None else 1_500_000)
