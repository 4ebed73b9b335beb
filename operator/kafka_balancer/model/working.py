"""The working model: a cluster as numpy arrays that moves update in O(1).

The planner mutates it, goals measure it, and the report and the usage check read per-broker loads
from it, so it lives with the cluster model rather than inside the planner. A plan is the diff
between its original and current replica assignment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafka_balancer.model import math
from kafka_balancer.model.candidate_moves import leader_changes, slot_moves, slot_of
from kafka_balancer.model.candidates import NO_BROKER, Candidates
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.model.journal import Journal
from kafka_balancer.model.math import BoolArray, FloatArray, IntArray
from kafka_balancer.model.quantities import LEADERS, N_QUANTITIES, REPLICAS


@dataclass(frozen=True, slots=True)
class BrokerLoad:
    """One broker's load at one point: resources in snapshot units, then counts."""

    loads: tuple[float, float, float, float]
    replicas: int
    leaders: int


class WorkingModel:
    """Mutable arrays over brokers (index ``b``) and partitions (index ``p``)."""

    def __init__(self, cluster: Cluster) -> None:
        brokers = cluster.brokers
        self.broker_ids: IntArray = np.array([b.id for b in brokers], dtype=np.int64)
        self.index_of: dict[int, int] = {b.id: i for i, b in enumerate(brokers)}
        self.rack_names: list[str] = sorted({b.rack for b in brokers})
        rack_index = {r: i for i, r in enumerate(self.rack_names)}
        self.rack: IntArray = np.array([rack_index[b.rack] for b in brokers], dtype=np.int64)
        self.active: BoolArray = np.array([b.active for b in brokers], dtype=bool)
        self.capacity: FloatArray = np.array([b.capacity for b in brokers], dtype=np.float64).reshape(-1, 4)
        # A draining broker's share is 0: every distribution goal expects it empty.
        self.share: FloatArray = np.where(
            self.active, np.array([b.warm_up_share for b in brokers], dtype=np.float64), 0.0
        )
        self.effective_capacity: FloatArray = self.capacity * self.share[:, None]
        self.demoted: BoolArray = np.array([b.demoted for b in brokers], dtype=bool)
        self.n_racks = len(set(self.rack[self.active].tolist())) if self.active.any() else 0

        parts = cluster.partitions
        offline_dirs = {b.id: {d.path for d in b.log_dirs if not d.online} for b in brokers}
        self.names: list[tuple[str, int]] = [(p.topic, p.partition) for p in parts]
        self.topic_names: list[str] = sorted({p.topic for p in parts})
        topic_index = {t: i for i, t in enumerate(self.topic_names)}
        self.topic: IntArray = np.array([topic_index[p.topic] for p in parts], dtype=np.int64)
        # Each topic's partitions in partition order, so that what asks of one topic reads its
        # rows instead of scanning every partition; a partition never changes topic.
        order = np.argsort(self.topic, kind="stable")
        bounds = np.searchsorted(self.topic[order], np.arange(len(self.topic_names) + 1))
        self.parts_of_topic: list[IntArray] = [
            order[bounds[t] : bounds[t + 1]] for t in range(len(self.topic_names))
        ]
        self.disk = np.array([p.load.disk for p in parts], dtype=np.float64)
        self.network_in = np.array([p.load.network_in for p in parts], dtype=np.float64)
        self.network_out = np.array([p.load.network_out for p in parts], dtype=np.float64)
        self.cpu = np.array([p.load.cpu for p in parts], dtype=np.float64)
        self.follower_cpu = np.array([p.load.follower_cpu for p in parts], dtype=np.float64)
        self.movable: BoolArray = np.array([p.movable for p in parts], dtype=bool)
        self.all_movable = bool(self.movable.all())
        self.rf: IntArray = np.array([len(p.replicas) for p in parts], dtype=np.int64)
        max_rf = int(self.rf.max()) if len(parts) else 1
        self.replicas: IntArray = np.full((len(parts), max_rf), NO_BROKER, dtype=np.int64)
        self.leader_slot: IntArray = np.zeros(len(parts), dtype=np.int64)
        for i, p in enumerate(parts):
            self.replicas[i, : len(p.replicas)] = [self.index_of[r] for r in p.replicas]
            self.leader_slot[i] = p.replicas.index(p.leader)
        self.original_replicas = self.replicas.copy()
        self.original_leader_slot = self.leader_slot.copy()
        self.moved: BoolArray = np.zeros_like(self.replicas, dtype=bool)
        # A replica drained to its own rack stays in that rack for the rest of the plan.
        self.pinned_rack: IntArray = np.full_like(self.replicas, NO_BROKER)
        self.any_pinned = False
        # A replica on an offline log dir (a failed JBOD disk) must leave its broker, as from a
        # draining one: Kafka can neither read it nor move it to another dir of that broker
        # (AlterReplicaLogDirs answers KAFKA_STORAGE_ERROR), so only a new replica elsewhere
        # restores the partition. (partition, broker index, dir); the partition never returns there.
        # A partition with every replica on an offline dir has no copy left to restore from: a move
        # would never finish, so it stays as it is (the optimizer leaves every partition with no
        # readable replica out of the plan: ``Cluster.stranded``).
        self.offline_replicas: list[tuple[int, int, str]] = [
            (i, self.index_of[b], path)
            for i, p in enumerate(parts)
            if p.log_dirs
            and any(path not in offline_dirs[b] for b, path in zip(p.replicas, p.log_dirs, strict=True))
            for b, path in zip(p.replicas, p.log_dirs, strict=True)
            if path in offline_dirs[b]
        ]
        self.any_banned = bool(self.offline_replicas)
        # [P, B], allocated only when some replica is on an offline dir (a large cluster's P × B).
        shape = (len(parts), len(brokers)) if self.any_banned else (0, 0)
        self.banned: BoolArray = np.zeros(shape, dtype=bool)
        for i, b, _ in self.offline_replicas:
            self.banned[i, b] = True
        # Bytes drained onto each broker, to spread a drain over its rack by capacity.
        self.drained_disk: FloatArray = np.zeros(len(brokers))
        self.rack_limit: IntArray = math.rack_limit(self.rf, self.n_racks)
        # [P, racks]: each partition's replicas per rack, kept up to date by every move (RackAware
        # asks it of every candidate batch, and counting from ``replicas`` each time cost more).
        n_rack_names = len(self.rack_names)
        self.rack_count: IntArray = np.zeros((len(parts), n_rack_names), dtype=np.int64)
        held = self.replicas >= 0
        np.add.at(self.rack_count, (np.nonzero(held)[0], self.rack[self.replicas[held]]), 1)

        # Per-partition contribution of its leader and of one follower, [P, 4].
        self.leader_load = math.replica_contribution(
            self.disk, self.network_in, self.network_out, self.cpu, self.follower_cpu, self.rf, True
        )
        self.follower_load = math.replica_contribution(
            self.disk, self.network_in, self.network_out, self.cpu, self.follower_cpu, self.rf, False
        )
        self.n_brokers = len(brokers)
        self.n_topics = len(self.topic_names)
        self.journal = Journal()
        self._quantities_key = -1
        self._quantities: FloatArray = np.zeros((0, N_QUANTITIES))
        self._parts_on: dict[int, IntArray] = {}
        # Partitions moved on or off a broker since its array above was built.
        self._touched: dict[int, set[int]] = {}
        self._recount()

    def _recount(self) -> None:
        mask = self.replicas >= 0
        p_idx, s_idx = np.nonzero(mask)
        brokers = self.replicas[p_idx, s_idx]
        is_leader = self.leader_slot[p_idx] == s_idx
        contrib = np.where(is_leader[:, None], self.leader_load[p_idx], self.follower_load[p_idx])
        self.load: FloatArray = math.sum_per_broker(brokers, contrib, self.n_brokers)
        self.replica_count: IntArray = np.bincount(brokers, minlength=self.n_brokers).astype(np.int64)
        self.leader_count: IntArray = np.bincount(brokers[is_leader], minlength=self.n_brokers).astype(
            np.int64
        )
        self.topic_count: IntArray = np.zeros((self.n_topics, self.n_brokers), dtype=np.int64)
        np.add.at(self.topic_count, (self.topic[p_idx], brokers), 1)
        self.topic_total: IntArray = np.bincount(self.topic, weights=self.rf, minlength=self.n_topics).astype(
            np.int64
        )
        order = np.argsort(brokers, kind="stable")
        bounds = np.searchsorted(brokers[order], np.arange(self.n_brokers + 1))
        sorted_parts = p_idx[order]
        self.partitions_on: list[set[int]] = [
            set(sorted_parts[bounds[b] : bounds[b + 1]].tolist()) for b in range(self.n_brokers)
        ]

    def parts_on(self, broker: int) -> IntArray:
        """The partitions with a replica on ``broker``, in partition order; kept, and patched when
        replicas moved on or off it (a shed asks for its broker's thousands again after every
        exchange), so callers must not write to it."""
        parts = self._parts_on.get(broker)
        touched = self._touched.pop(broker, None)
        on = self.partitions_on[broker]
        if parts is None or (touched is not None and 8 * len(touched) > len(parts)):
            parts = np.sort(np.fromiter(on, dtype=np.int64, count=len(on)))
        elif touched is not None:
            # A few moved: patched in place of a rebuild, as the set holds thousands at a million
            # replicas and turning it into a sorted array again costs a millisecond.
            changed = np.array(sorted(touched), dtype=np.int64)
            now_on = np.fromiter((p in on for p in changed.tolist()), dtype=bool, count=len(changed))
            at = np.searchsorted(parts, changed)
            was_on = parts[np.minimum(at, len(parts) - 1)] == changed
            kept = np.delete(parts, at[was_on & ~now_on])
            added = changed[now_on & ~was_on]
            parts = np.insert(kept, np.searchsorted(kept, added), added)
        else:
            return parts
        parts.flags.writeable = False
        self._parts_on[broker] = parts
        return parts

    # ---- quantities -------------------------------------------------------------------

    def quantities(self) -> FloatArray:
        """``[B, 6]``: every candidate-delta column per broker (resources, then counts); built
        once per state version and shared, so callers must not write to it."""
        if self._quantities_key != self.journal.version:
            out = np.empty((self.n_brokers, N_QUANTITIES), dtype=np.float64)
            out[:, :REPLICAS] = self.load
            out[:, REPLICAS] = self.replica_count
            out[:, LEADERS] = self.leader_count
            out.flags.writeable = False
            self._quantities, self._quantities_key = out, self.journal.version
        return self._quantities

    def quantity(self, column: int) -> FloatArray:
        """Per-broker value of a candidate-delta column (a resource, or a count)."""
        if column < REPLICAS:
            return self.load[:, column]
        counts = self.replica_count if column == REPLICAS else self.leader_count
        return counts.astype(np.float64)

    def broker_loads(self) -> tuple[BrokerLoad, ...]:
        """Every broker's load as it stands, in broker order."""
        return tuple(
            BrokerLoad(
                (float(row[0]), float(row[1]), float(row[2]), float(row[3])),
                int(self.replica_count[b]),
                int(self.leader_count[b]),
            )
            for b, row in enumerate(self.load)
        )

    # ---- applying ---------------------------------------------------------------------

    def apply(self, cands: Candidates, k: int, dest: int) -> None:
        p, slot, src = int(cands.part[k]), int(cands.slot[k]), int(cands.src[k])
        delta = cands.delta[k]
        self.journal.record(p, src, dest)
        self.load[src] -= delta[:4]
        self.load[dest] += delta[:4]
        self.leader_count[src] -= int(delta[LEADERS])
        self.leader_count[dest] += int(delta[LEADERS])
        if cands.dst[k] == NO_BROKER:
            self.replica_count[src] -= 1
            self.replica_count[dest] += 1
            t = self.topic[p]
            self.topic_count[t, src] -= 1
            self.topic_count[t, dest] += 1
            self.partitions_on[src].discard(p)
            self.partitions_on[dest].add(p)
            # Only a kept array needs patching; one not built yet is built from the set.
            for b in (src, dest):
                if b in self._parts_on:
                    self._touched.setdefault(b, set()).add(p)
            self.rack_count[p, self.rack[src]] -= 1
            self.rack_count[p, self.rack[dest]] += 1
            self.replicas[p, slot] = dest
            self.moved[p, slot] = dest != self.original_replicas[p, slot]
        else:
            self.leader_slot[p] = slot

    def pin_to_rack(self, p: int, slot: int) -> None:
        """Keep replica ``slot`` of ``p``, drained into its broker's rack, in that rack for the rest
        of the plan, and count its bytes as drained onto that broker."""
        broker = self.replicas[p, slot]
        self.pinned_rack[p, slot] = self.rack[broker]
        self.any_pinned = True
        self.drained_disk[broker] += self.disk[p]

    def undo(self) -> None:
        """Take back every action applied since the journal's ``begin``, newest first (each as an
        action of its own)."""
        for p, src, dest in reversed(self.journal.end()):
            one = np.array([p], dtype=np.int64)
            if (self.replicas[p] == src).any():
                # The source still holds the partition: the action handed over its leadership.
                self.apply(leader_changes(self, one, np.array([src], dtype=np.int64)), 0, src)
            else:
                self.apply(slot_moves(self, one, slot_of(self, one, dest)), 0, src)

    # ---- the plan ---------------------------------------------------------------------

    def changed_partitions(self) -> IntArray:
        """Partitions whose replicas or leader change, and those whose preferred leader (``replicas[0]``)
        is demoted while another broker leads: the reordered list keeps Kafka's automatic leader
        rebalance (and the next restart) from handing leadership back to the demoted broker."""
        rows = np.arange(len(self.rf))
        replica_changed = (self.replicas != self.original_replicas).any(axis=1)
        leader_now = self.replicas[rows, self.leader_slot]
        leader_before = self.original_replicas[rows, self.original_leader_slot]
        preferred = self.original_replicas[rows, 0]
        reorder = self.demoted[preferred] & ~self.demoted[leader_now]
        return np.nonzero(replica_changed | (leader_now != leader_before) | reorder)[0]

    def demoted_leaders(self) -> IntArray:
        """Partitions a demoted broker leads."""
        if not self.demoted.any():
            return np.zeros(0, dtype=np.int64)
        leaders = self.replicas[np.arange(len(self.rf)), self.leader_slot]
        return np.nonzero(self.demoted[leaders])[0]

    def leader_of(self, p: int) -> int:
        return int(self.replicas[p, self.leader_slot[p]])
