"""How long commands (``snapshot``'s sampling, ``execute``) show their progress: a bar when their output
goes to a terminal, the plain lines they always printed when it does not.

Scripts, CI logs and the tests parse the plain lines, so off a terminal the output stays exactly what it
was; on a terminal a person gets a bar with the time left (rich, pinned in pyproject.toml). The bar is
drawn on the stream the command's lines go to, so ``2> file`` never fills a file with redraws.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class ProgressDisplay:
    """Lines and a bar's position; off a terminal only the lines, exactly as printed before."""

    def __init__(self, stream: TextIO, progress: Progress | None, task: TaskID | None) -> None:
        self.stream = stream
        self._progress = progress
        self._task = task

    @property
    def on_terminal(self) -> bool:
        return self._progress is not None

    def line(self, text: str) -> None:
        """A line of the command's output: above the bar on a terminal, as it was otherwise."""
        if self._progress is None:
            print(text, file=self.stream, flush=True)
        else:
            self._progress.console.print(Text(text), soft_wrap=True)

    def update(self, completed: float, total: float | None = None, status: str = "") -> None:
        """The bar's position (no output off a terminal)."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=completed, total=total, status=status)


@contextmanager
def progress_display(
    stream: TextIO, description: str, total: float, *, data: bool = False
) -> Iterator[ProgressDisplay]:
    """A display for one long piece of work of ``total`` steps (bytes when ``data``)."""
    if not stream.isatty():
        yield ProgressDisplay(stream, None, None)
        return
    amount = DownloadColumn(binary_units=True) if data else MofNCompleteColumn()
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        amount,
        TimeRemainingColumn(),
        TextColumn("{task.fields[status]}"),
        console=Console(file=stream),
    )
    with progress:
        task = progress.add_task(description, total=total, status="")
        yield ProgressDisplay(stream, progress, task)
