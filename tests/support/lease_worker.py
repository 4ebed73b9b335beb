"""One process contending for a pool's execution lease, for the lease's freeze test.

Run as ``python -m tests.support.lease_worker KUBECONFIG NAMESPACE POOL UID IDENTITY DURATION SECONDS
SEED OUT``. It acquires the lease, checks it every 20 ms for a random while, releases it and starts
again, until SECONDS have passed. Every check that passed is one line of OUT: the wall time taken just
BEFORE the check, the identity and this process's acquisition number. A freeze between the time and
the check makes the check fail (the deadline passed), so a line is an instant at which this process was
entitled to act.
"""

from __future__ import annotations

import random
import sys
import time

from kafka_balancer.errors import ExecutionFenced
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.lease import PoolLease
from kafka_balancer.k8s.port import PoolId


def main(argv: list[str]) -> None:
    kubeconfig, namespace, pool, uid, identity, duration, seconds, seed, out = argv
    lease = PoolLease(
        Kube(kubeconfig), PoolId(namespace, pool, uid), duration_s=int(duration), identity=identity
    )
    rng = random.Random(int(seed))
    end = time.monotonic() + float(seconds)
    acquisitions = 0
    with open(out, "a", buffering=1, encoding="utf-8") as lines:
        while time.monotonic() < end:
            if not lease.acquire(lambda: time.monotonic() > end, poll_s=0.2):
                break
            acquisitions += 1
            hold_until = time.monotonic() + rng.uniform(1.0, 3.0 * int(duration))
            while time.monotonic() < hold_until:
                at = time.time()
                try:
                    lease.check()
                except ExecutionFenced:
                    break
                lines.write(f"{at:.6f} {identity} {acquisitions}\n")
                time.sleep(0.02)
            lease.release()
            time.sleep(rng.uniform(0.0, 0.5))


if __name__ == "__main__":
    main(sys.argv[1:])
