"""The per-broker quantities goals constrain, as columns of one ``[brokers, N_QUANTITIES]`` array.

The four resources come first, in ``Resource`` order, then the replica and leader counts; a
candidate action's delta, a goal's column and the working model's ``quantity(column)`` all index
this one layout.
"""

from __future__ import annotations

REPLICAS = 4
LEADERS = 5
N_QUANTITIES = 6
