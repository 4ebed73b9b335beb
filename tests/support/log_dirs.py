"""Failing a log dir (JBOD) of a running broker of the Kafka bed, for the offline-dir tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

# A broker's second dir: its first holds the KRaft metadata log, and a broker whose metadata dir
# fails shuts down (seen on the bed), which is a broker failure, not a log-dir one.
FAILING_DIR = "data-1"


def fail_dir(path: Path) -> Callable[[], None]:
    """Replace ``path`` by a plain file: the broker's next write there (the high-watermark checkpoint,
    every 5 s) fails with an IOException and Kafka takes the dir offline. Returns what puts it back,
    to call once the broker is stopped (Kafka brings a dir back online only at a restart)."""
    kept = path.with_name(path.name + ".failed")
    path.rename(kept)
    path.write_text("a failed disk\n")

    def restore() -> None:
        path.unlink()
        kept.rename(path)

    return restore
