"""What the real CLI prints on a terminal: its own lines only (the Kafka clients' own log lines go to
their file), a progress bar on a pseudo-terminal (pty.openpty), the same plain lines as ever in a pipe."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

from tests.support.executor_cli import write_plan
from tests.support.kafka_checks import Writer, assert_no_throttle_left, create_topic, delete_topic, partitions

from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.ports import free_ports

CLI = [sys.executable, "-m", "kafka_balancer.cli"]
CAPACITIES = ["--disk-capacity", "1e12", "--network-capacity", "1.25e8", "--cpu-capacity", "8"]
PASS_LINE = re.compile(
    r"^pass (\d+)/5: \d+ partition\(s\), \d+ broker\(s\), \d+ sample\(s\) stored, \d+ admin request\(s\)$"
)
ANSI = re.compile(r"\x1b\[")


def test_the_kafka_clients_lines_go_to_the_default_log_file_not_the_terminal(tmp_path: Path) -> None:
    (closed,) = free_ports(1)  # nothing listens: librdkafka logs a failed connect every few ms
    state_home = tmp_path / "state"
    done = subprocess.run(
        [*CLI, "snapshot", "--bootstrap-server", f"127.0.0.1:{closed}", *CAPACITIES,
         "--output", str(tmp_path / "snapshot.json")],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "XDG_STATE_HOME": str(state_home)},
    )  # fmt: skip

    assert done.returncode == 1
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()  # the command's one line, nothing of librdkafka's
    assert line.startswith(f"kafka-balancer snapshot: cannot reach Kafka at 127.0.0.1:{closed}")
    logged = (state_home / "kafka-balancer" / "kafka-clients.log").read_text()
    assert f"Connect to ipv4#127.0.0.1:{closed} failed" in logged
    # Repeats are summarised: librdkafka retried for 30 s, a line or two says so.
    assert len(logged.splitlines()) < 10


def test_an_unwritable_kafka_log_is_bad_input_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [*CLI, "snapshot", "--bootstrap-server", "127.0.0.1:1", *CAPACITIES,
         "--output", str(tmp_path / "snapshot.json"), "--kafka-log", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith(f"kafka-balancer snapshot: bad input: --kafka-log {tmp_path}: cannot be ")
    assert len(done.stderr.splitlines()) == 1


def _snapshot_argv(bed: KafkaBed, tmp_path: Path, name: str) -> list[str]:
    return [
        *CLI, "snapshot", "--bootstrap-server", bed.bootstrap_servers, "--window", "4s", "--interval", "1s",
        *CAPACITIES, "--output", str(tmp_path / f"{name}.json"), "--kafka-log", str(tmp_path / "kafka.log"),
    ]  # fmt: skip


def test_snapshot_in_a_pipe_prints_the_plain_pass_lines(kafka_bed: KafkaBed, tmp_path: Path) -> None:
    done = subprocess.run(
        _snapshot_argv(kafka_bed, tmp_path, "piped"), capture_output=True, text=True, timeout=180, check=False
    )

    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert [int(m.group(1)) for line in lines if (m := PASS_LINE.match(line))] == [1, 2, 3, 4, 5]
    assert lines[-1].startswith("snapshot: ")
    assert not ANSI.search(done.stderr), "no terminal control sequences in a pipe"


def _run_on_a_terminal(argv: list[str], timeout_s: float) -> tuple[int, str]:
    """``argv`` with stdout and stderr on a pseudo-terminal: its exit code and all it drew."""
    controller, terminal = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    drawn = bytearray()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # EIO: the process exited and closed the terminal
                    break
                if not chunk:
                    break
                drawn += chunk
            elif process.poll() is not None:
                break
        code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    return code, drawn.decode(errors="replace")


def test_snapshot_on_a_terminal_draws_a_progress_bar(kafka_bed: KafkaBed, tmp_path: Path) -> None:
    code, drawn = _run_on_a_terminal(_snapshot_argv(kafka_bed, tmp_path, "terminal"), 180)

    assert code == 0, drawn[-3000:]
    assert (tmp_path / "terminal.json").exists()
    assert ANSI.search(drawn), "a bar is redrawn in place with control sequences"
    assert "sampling" in drawn and "━" in drawn
    assert "5/5" in drawn, "the bar reaches the last pass"
    assert not [line for line in drawn.splitlines() if PASS_LINE.match(line.strip())], "the bar replaces them"
    assert "snapshot: " in drawn  # the summary is still printed after the bar
    assert not [line for line in drawn.splitlines() if line.startswith("%")], "no librdkafka line"


def test_execute_on_a_terminal_draws_the_bytes_copied(kafka_bed: KafkaBed, tmp_path: Path) -> None:
    topic = create_topic(kafka_bed, "terminal", [[1, 2], [1, 2]])
    writer = Writer(kafka_bed, topic)
    writer.write(4_000, 500)  # 2 MB: at 500 kB/s the copy takes seconds, the bar is drawn meanwhile
    plan = write_plan(tmp_path / "plan.json", topic, {0: [3, 1], 1: [2, 3]})
    try:
        code, drawn = _run_on_a_terminal(
            [*CLI, "execute", "--plan", str(plan), "--bootstrap-server", kafka_bed.bootstrap_servers,
             "--throttle", "500000", "--poll-interval", "0.5", "--kafka-log", str(tmp_path / "kafka.log")],
            300,
        )  # fmt: skip

        assert code == 0, drawn[-3000:]
        assert {p: r for p, (r, _, _) in partitions(kafka_bed, topic).items()} == {0: [3, 1], 1: [2, 3]}
        assert_no_throttle_left(kafka_bed, topic)
        assert "executing" in drawn and "━" in drawn and ANSI.search(drawn)
        assert "2/2 moves" in drawn, "the bar counts the moves done"
        assert re.search(r"\d+(\.\d)? MiB", drawn), "and the bytes copied"
        assert "moves: 0 pending, 0 in-flight, 2 done" in drawn  # the summary after the bar, as in a pipe
        assert not [line for line in drawn.splitlines() if line.startswith("%")], "no librdkafka line"
    finally:
        delete_topic(kafka_bed, topic)
        del writer  # its producer goes now, not at the end of the session once the bed is stopped
