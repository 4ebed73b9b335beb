"""End to end on a Kafka cluster that enforces ACLs, reached through the pools' own Secrets.

The operator process serves two pools of one namespace on a bed with KRaft's StandardAuthorizer
(nothing allowed without an ACL): an Auto pool that logs in with SCRAM-SHA-512 over TLS, and a
DryRun pool that logs in with a client certificate (mutual TLS). Each principal holds exactly the
operator's ACLs of docs/security.md. The Auto pool balances a skewed topic under traffic; the mTLS
pool plans. Then a deny ACL hides one topic from the SCRAM principal: the pool says which topic it
cannot see, and plans nothing on part of the cluster.
"""

from __future__ import annotations

from typing import Any

from kafka_balancer.k8s.pool_secrets import POOLS_ANNOTATION
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import Acl, KafkaBed
from tests.support.acls import CERTIFICATE_PRINCIPAL, documented, granted
from tests.support.kafka_checks import (
    create_topic,
    delete_topic,
    ongoing_reassignments,
    partitions,
    throttles_left,
)

from .conftest import OperatorProcess, wait_for
from .objects import apply, condition, events, get, goal, pool
from .test_lifecycle import (
    BALANCE_TIMEOUT_S,
    GOALS,
    assert_clean,
    balanced,
    rack_aware,
    replica_counts,
    traffic,
)


def _secret(kube_bed: kube.KubeBed, namespace: str, name: str, **files: str) -> None:
    made = kube_bed.kubectl(
        "-n",
        namespace,
        "create",
        "secret",
        "generic",
        name,
        *(f"--from-file={k}={v}" for k, v in files.items()),
    )
    assert made.returncode == 0, made.stderr
    # The Secrets' writer opts them in for the namespace's pools (the operator uses no other).
    opted_in = kube_bed.kubectl("-n", namespace, "annotate", "secret", name, f"{POOLS_ANNOTATION}=*")
    assert opted_in.returncode == 0, opted_in.stderr


def _login(kube_bed: kube.KubeBed, namespace: str, username: str, password: str) -> None:
    made = kube_bed.kubectl(
        "-n", namespace, "create", "secret", "generic", "kafka-login",
        f"--from-literal=username={username}", f"--from-literal=password={password}",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    opted_in = kube_bed.kubectl("-n", namespace, "annotate", "secret", "kafka-login", f"{POOLS_ANNOTATION}=*")
    assert opted_in.returncode == 0, opted_in.stderr


def _reachable(kube_bed: kube.KubeBed, namespace: str, name: str) -> dict[str, Any]:
    return condition(get(kube_bed, namespace, "bp", name), "KafkaReachable")


def test_pools_reach_an_acl_cluster_with_their_secrets_and_say_which_topic_is_hidden(
    kube_bed: kube.KubeBed, acl_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    scram = acl_bed.secured_access("SASL_SSL")
    mtls = acl_bed.secured_access("SSL")
    ca = scram.properties["ssl.ca.location"]
    _secret(kube_bed, namespace, "kafka-ca", **{"ca.crt": ca})
    _login(kube_bed, namespace, scram.properties["sasl.username"], scram.properties["sasl.password"])
    _secret(
        kube_bed,
        namespace,
        "kafka-client-cert",
        **{
            "ca.crt": ca,
            "tls.crt": mtls.properties["ssl.certificate.location"],
            "tls.key": mtls.properties["ssl.key.location"],
        },
    )
    # 8 partitions, RF 2, all on brokers 1 and 2: broker 3 (rack c) is empty.
    topic = create_topic(acl_bed, "e2e-acl", [[1, 2] if p % 2 else [2, 1] for p in range(8)])
    operator_acls = documented("The operator")
    try:
        with (
            granted(acl_bed, operator_acls),
            granted(acl_bed, operator_acls, CERTIFICATE_PRINCIPAL),
            traffic(acl_bed, topic),
        ):
            sasl_ssl = {
                "bootstrapServers": scram.bootstrap_servers,
                "securityProtocol": "SASL_SSL",
                "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "kafka-login"}},
                "tls": {"secretRef": {"name": "kafka-ca"}},
            }
            mutual_tls = {
                "bootstrapServers": mtls.bootstrap_servers,
                "securityProtocol": "SSL",
                "tls": {"secretRef": {"name": "kafka-client-cert"}},
            }
            main = pool("main", scram.bootstrap_servers, "Auto", topic)
            main["spec"]["kafka"] = sasl_ssl
            planner = pool("mtls", mtls.bootstrap_servers, "DryRun", topic)
            planner["spec"]["kafka"] = mutual_tls
            apply(
                kube_bed,
                namespace,
                main,
                planner,
                *(goal(name, "main", **g) for name, g in GOALS),
                *(goal(f"mtls-{name}", "mtls", **g) for name, g in GOALS),
            )

            def mtls_planned() -> bool:
                status = get(kube_bed, namespace, "bp", "mtls").get("status", {})
                return bool((status.get("plan") or {}).get("id"))

            wait_for(mtls_planned, BALANCE_TIMEOUT_S, "the mTLS pool to plan", operator)
            assert _reachable(kube_bed, namespace, "mtls")["status"] == "True"
            wait_for(
                balanced(kube_bed, namespace), BALANCE_TIMEOUT_S, "the SASL_SSL pool to be Balanced", operator
            )
            # 16 replicas over 3 brokers, 16/3 each ±10 % in whole replicas: 4..6 (broker 3 was empty).
            counts = replica_counts(acl_bed, topic)
            assert all(4 <= n <= 6 for n in counts.values()), counts
            assert rack_aware(acl_bed, topic)
            assert get(kube_bed, namespace, "bp", "main")["status"]["execution"]["phase"] == "Succeeded"
            assert {"ExecutionStarted", "ExecutionFinished"} <= {
                e["reason"] for e in events(kube_bed, namespace)
            }

            # A deny ACL hides one more topic from the SCRAM principal: Kafka leaves it out of every
            # answer, and the pool must not plan as if it were not there.
            hidden = create_topic(acl_bed, "e2e-acl-hidden", [[1, 2]])
            try:
                with granted(acl_bed, [Acl("topic", hidden, "Describe", allow=False)]):

                    def refused() -> dict[str, Any] | None:
                        found = _reachable(kube_bed, namespace, "main")
                        return found if found.get("reason") == "NotAuthorized" else None

                    said = wait_for(refused, 120, "the pool to say a topic is hidden from it", operator)
                    assert said["status"] == "False"
                    assert (
                        hidden in said["message"] and "1 topic(s) it may not describe" in said["message"]
                    ), said
                    assert _reachable(kube_bed, namespace, "mtls")["status"] == "True", (
                        "the other login sees all"
                    )
            finally:
                delete_topic(acl_bed, hidden)
        assert_clean(acl_bed, topic)
    finally:
        kube_bed.kubectl("delete", "brokerpools,balancergoals", "--all", "-n", namespace, "--timeout=60s")
        delete_topic(acl_bed, topic)


def test_a_pool_deleted_with_its_namespace_cancels_its_moves_and_removes_its_throttles(
    kube_bed: kube.KubeBed, acl_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    """A namespace deleted with its pool: the namespace's Secrets may go before the pool, whose
    finalizer then cleans up with the connection the operator last used for it."""
    scram = acl_bed.secured_access("SASL_SSL")
    _secret(kube_bed, namespace, "kafka-ca", **{"ca.crt": scram.properties["ssl.ca.location"]})
    _login(kube_bed, namespace, scram.properties["sasl.username"], scram.properties["sasl.password"])
    before = [[1, 2] if p % 2 else [2, 1] for p in range(8)]
    topic = create_topic(acl_bed, "e2e-acl-deleted", before)
    try:
        # 80 MB over 31 keys: a partition that holds a key holds megabytes, more than the fetches a
        # 1 KiB/s throttle lets through in a burst, so a move copying when the pool goes is still copying.
        bulk = traffic(acl_bed, topic, messages=8_000, size=10_000)
        with granted(acl_bed, documented("The operator")), bulk:
            main = pool("main", scram.bootstrap_servers, "Auto", topic)
            main["spec"]["kafka"] = {
                "bootstrapServers": scram.bootstrap_servers,
                "securityProtocol": "SASL_SSL",
                "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "kafka-login"}},
                "tls": {"secretRef": {"name": "kafka-ca"}},
            }
            # 1 KiB/s: its moves are still copying when the namespace goes.
            main["spec"]["execution"]["throttleBytesPerSecond"] = "1Ki"
            apply(kube_bed, namespace, main, *(goal(name, "main", **g) for name, g in GOALS))
            wait_for(
                lambda: ongoing_reassignments(acl_bed, topic) and throttles_left(acl_bed, topic),
                BALANCE_TIMEOUT_S,
                "the pool's moves to be copying, throttled",
                operator,
            )
            copying = {tp.partition for tp in ongoing_reassignments(acl_bed, topic)}
            # The order a namespace's deletion may take: its Secrets gone, then the pool deleted.
            for secret in ("kafka-login", "kafka-ca"):
                gone = kube_bed.kubectl("-n", namespace, "delete", "secret", secret)
                assert gone.returncode == 0, gone.stderr
            deleted = kube_bed.kubectl("-n", namespace, "delete", "bp", "main", "--wait=false")
            assert deleted.returncode == 0, deleted.stderr
            wait_for(
                lambda: kube_bed.kubectl("-n", namespace, "get", "bp", "main").returncode != 0,
                120,
                "the pool's finalizer to finish",
                operator,
            )
            assert "cleaning up with the connection it last used" in operator.tail(400)
        assert_clean(acl_bed, topic)
        # The moves copying at 1 KiB/s (a partition without a key holds no data and moves at once) were
        # cancelled: back on their replicas, in their order.
        now = {p: replicas for p, (replicas, _, _) in partitions(acl_bed, topic).items()}
        assert copying and {p: now[p] for p in copying} == {p: before[p] for p in copying}, now
    finally:
        delete_topic(acl_bed, topic)
