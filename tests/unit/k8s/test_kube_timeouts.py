"""Every Kubernetes API call of the operator gives up after its request timeout: against an apiserver
that takes connections and never answers (a hung one, or a dead connection), each call raises
KubernetesUnavailable instead of holding its thread (a lease renewal, another pool's pass)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer.errors import KubernetesUnavailable
from kafka_balancer.k8s import kube
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.port import LeaseWrite, PoolId

POOL = PoolId("kafka", "main", "uid-main")


@pytest.fixture
def silent_apiserver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kube]:
    """A Kube client of a server that accepts every connection and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    acceptor = threading.Thread(target=accept)
    acceptor.start()
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: s, cluster: {{server: 'http://127.0.0.1:{server.getsockname()[1]}'}}}}]\n"
        "contexts: [{name: c, context: {cluster: s, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"
    )
    monkeypatch.setattr(kube, "REQUEST_TIMEOUT_S", 0.3)
    try:
        yield Kube(str(config))
    finally:
        stop.set()
        acceptor.join()
        for connection in held:
            connection.close()
        server.close()


CALLS: list[tuple[str, Callable[[Kube], Any]]] = [
    ("read_config_map", lambda k: k.read_config_map("kafka", "main-plan")),
    ("write_config_map", lambda k: k.write_config_map("kafka", "main-plan", POOL, {"a": "b"})),
    ("write_config_map_if", lambda k: k.write_config_map_if("kafka", "main-plan", POOL, {}, None, "1")),
    ("delete_config_map", lambda k: k.delete_config_map("kafka", "main-plan")),
    ("patch_status", lambda k: k.patch_status("brokerpools", "kafka", "main", {"a": 1})),
    ("read_secret", lambda k: k.read_secret("kafka", "credentials")),
    ("read_custom_object", lambda k: k.read_custom_object("g", "v1", "things", "kafka", "x")),
    ("delete_custom_object", lambda k: k.delete_custom_object("g", "v1", "things", "kafka", "x")),
    (
        "create_custom_object",
        lambda k: k.create_custom_object(
            "g", "v1", "things", "kafka", {"kind": "T", "metadata": {"name": "x"}}
        ),
    ),
    ("read_pod", lambda k: k.read_pod("kafka", "driver")),
    ("list_pods", lambda k: k.list_pods("kafka", "a=b")),
    ("delete_pod", lambda k: k.delete_pod("kafka", "driver")),
    ("read_lease", lambda k: k.read_lease("kafka", "main-execution")),
    (
        "write_lease",
        lambda k: k.write_lease(LeaseWrite("kafka", "main-execution", POOL, "me", 15, 0, None)),
    ),
]


@pytest.mark.parametrize(("name", "call"), CALLS, ids=[name for name, _ in CALLS])
def test_a_call_to_an_apiserver_that_never_answers_gives_up(
    silent_apiserver: Kube, name: str, call: Callable[[Kube], Any]
) -> None:
    raised: list[BaseException] = []

    def attempt() -> None:
        try:
            call(silent_apiserver)
        except BaseException as err:
            raised.append(err)

    # Without a timeout the call never returns: the test waits for it in a thread, boundedly.
    caller = threading.Thread(target=attempt, daemon=True)
    caller.start()
    caller.join(timeout=30)
    assert not caller.is_alive(), f"{name} still waits for the apiserver after 30 s"
    assert len(raised) == 1 and isinstance(raised[0], KubernetesUnavailable), raised
    assert "the Kubernetes API is unreachable" in str(raised[0])
