"""A rack whose load fits its brokers' bands keeps its moves inside, exchanges included, before
any crosses to another rack: its room is judged by the bands the plan is held to, not by the
narrower target bands a broker being fixed aims at."""

from __future__ import annotations

from dataclasses import replace

from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.planner.optimizer import plan
from kafka_balancer_dev.synthetic import SyntheticSpec, generate


def test_racks_of_brokers_warming_up_copy_little_more_across_than_forced() -> None:
    # 30 brokers on 5 racks at replication factor 2, brokers 28 and 29 warming up at 30 %. The
    # racks of the two are over what their brokers' bands hold by 435 GB; judged by the target
    # bands, their brokers sent whole replicas across for the last tenth of each band: 1,031 GB
    # across (2.4 times the forced bytes), and the leader band was missed by 18 %.
    spec = SyntheticSpec.filled(
        30, 2500, fill=0.3, racks=5, replication_factor=2, hot_brokers=1, empty_brokers=1, seed=14
    )
    cluster = generate(spec)
    cluster = replace(
        cluster,
        brokers=tuple(replace(b, warm_up_share=0.3) if b.id in (28, 29) else b for b in cluster.brokers),
    )
    result = plan(cluster, default_goal_set())
    assert [g.label for g in result.goals if not g.after.satisfied] == []
    figures = result.figures
    assert figures.cross_rack_lower_bound > 0
    assert figures.cross_rack_bytes <= 2.0 * figures.cross_rack_lower_bound
