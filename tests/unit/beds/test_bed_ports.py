"""The bed's servers get ports nothing else is handed in the gap before they bind them, and a server
that dies while starting is reported with the line of its log that says why."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed.ports import SLICE_ENV, free_port, free_ports, port_pool
from kafka_balancer_dev.localbed.procs import last_cause


def _kernel_range() -> range:
    low, high = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    return range(low, high + 1)


def test_ports_lie_below_the_kernels_own_range_and_below_node_ports() -> None:
    pool = port_pool()
    assert len(pool) > 1000
    assert pool.stop <= min(_kernel_range().start, 30000)
    for port in free_ports(5):
        assert port in pool


def test_no_port_is_handed_out_twice_even_once_released() -> None:
    # A bed asks for its ports in several calls, all released, before its first server binds one.
    given = [port for _ in range(300) for port in free_ports(3)] + [free_port() for _ in range(100)]
    assert len(set(given)) == len(given)


def test_runs_side_by_side_take_disjoint_slices_of_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    # Ranges only: this test may itself run in a slice, beside a run that binds the other's ports.
    monkeypatch.delenv(SLICE_ENV, raising=False)
    whole = port_pool()
    slices = []
    for share in ("0/2", "1/2"):
        monkeypatch.setenv(SLICE_ENV, share)
        slices.append(port_pool())
    first, second = slices
    assert not set(first) & set(second)
    assert first.start == whole.start and second.stop <= whole.stop
    assert len(first) == len(second) >= len(whole) // 2 - 1


@pytest.mark.parametrize("share", ["2/2", "1", "a/b", "-1/2"])
def test_a_slice_that_names_none_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, share: str
) -> None:
    monkeypatch.setenv(SLICE_ENV, share)
    with pytest.raises(BedError, match=SLICE_ENV):
        port_pool()


def test_a_handed_out_port_is_free_to_bind() -> None:
    (port,) = free_ports(1)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", port))
        server.listen()


def test_the_cause_is_the_last_line_saying_why_and_never_a_stack_frame(tmp_path: Path) -> None:
    server_log = tmp_path / "server.log"
    server_log.write_text(
        "[2026-11-28 10:00:00,000] INFO starting (kafka.server.KafkaServer)\n"
        "[2026-11-28 10:00:01,000] ERROR Fatal error during KafkaServer startup. (kafka.Kafka$)\n"
        "org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:20001\n"
        "\tat kafka.network.Acceptor.openServerSocket(SocketServer.scala:700)\n"
        "Caused by: java.net.BindException: Address already in use\n"
        "\tat java.base/sun.nio.ch.Net.bind0(Native Method)\n"
        "[2026-11-28 10:00:02,000] INFO shut down completed (kafka.server.KafkaServer)\n"
    )
    output = tmp_path / "stdout.log"
    output.write_text("Error occurred during initialization of VM\nToo small maximum heap\n")
    assert last_cause([server_log, output]) == "Caused by: java.net.BindException: Address already in use"
    # The server log is missing (the JVM died before logging): the process's own output tells.
    assert last_cause([tmp_path / "absent.log", output]) == "Error occurred during initialization of VM"
    quiet = tmp_path / "quiet.log"
    quiet.write_text("started\nstopping\n")
    assert last_cause([quiet]) is None


def test_a_long_cause_is_cut_to_a_few_hundred_characters(tmp_path: Path) -> None:
    log = tmp_path / "etcd.log"
    log.write_text('{"level":"fatal","msg":"' + "x" * 2000 + '"}\n')
    cause = last_cause([log])
    assert cause is not None and cause.startswith('{"level":"fatal"') and len(cause) == 300
