"""The pool's execution lease against the real apiserver: one holder, takeover after silence, fencing."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_balancer.errors import ExecutionFenced
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.lease import PoolLease, cluster_lease, cluster_lease_name, holder_pool
from kafka_balancer.k8s.port import PoolId
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.procs import wait_until

NAMESPACE = "kb-test-lease"
POOL = PoolId(NAMESPACE, "main", "0b1c9a52-5a53-4c4e-9d1c-000000000003")
DURATION_S = 4


@pytest.fixture(scope="module")
def client(kube_bed: kube.KubeBed) -> Iterator[Kube]:
    """One namespace for the module: the bed has no namespace controller, so a deleted one stays
    terminating and cannot be made again."""
    created = kube_bed.kubectl("create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    yield Kube(str(kube_bed.kubeconfig))
    kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def test_one_holder_at_a_time_a_silent_holder_is_taken_over_and_fenced(client: Kube) -> None:
    holder = PoolLease(client, POOL, identity="holder", duration_s=DURATION_S)
    standby = PoolLease(client, POOL, identity="standby", duration_s=DURATION_S)
    assert holder.try_acquire()
    holder.check()
    # While the holder renews, the standby never gets it.
    refused_until = time.monotonic() + 2 * DURATION_S
    while time.monotonic() < refused_until:
        assert not standby.try_acquire()
        time.sleep(0.5)
    holder._stop.set()  # the holder goes silent (frozen): no renewal any more
    took = wait_until(standby.try_acquire, timeout_s=4 * DURATION_S, what="the standby to take over")
    assert took
    with pytest.raises(ExecutionFenced, match="lost the execution lease"):
        holder.check()
    standby.check()
    standby.release()
    # Handed back: anyone takes it at once.
    assert holder.try_acquire()
    holder.release()


def test_pools_of_two_namespaces_on_one_kafka_cluster_hold_its_lease_one_at_a_time(client: Kube) -> None:
    orders = PoolId("team-a", "orders", "0b1c9a52-5a53-4c4e-9d1c-000000000004")
    ledger = PoolId("team-b", "ledger", "0b1c9a52-5a53-4c4e-9d1c-000000000005")
    first = cluster_lease(client, orders, "MkU3OEVBNTcwNTJENDM2Qk", NAMESPACE, duration_s=DURATION_S)
    second = cluster_lease(client, ledger, "MkU3OEVBNTcwNTJENDM2Qk", NAMESPACE, duration_s=DURATION_S)
    elsewhere = cluster_lease(client, ledger, "another-cluster-id", NAMESPACE, duration_s=DURATION_S)

    assert first.try_acquire()
    assert not second.try_acquire()
    assert holder_pool(second.holder()) == "team-a/orders"
    assert elsewhere.try_acquire()  # another Kafka cluster: its own lease
    # One Lease in the operator's namespace, owned by no pool (it outlives them).
    assert client.read_lease(NAMESPACE, cluster_lease_name("MkU3OEVBNTcwNTJENDM2Qk")) is not None

    first.release()
    assert second.try_acquire()
    second.check()
    second.release()
    elsewhere.release()
