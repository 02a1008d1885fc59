"""A rich progress display for the planner's phases (to stderr, so --json stdout stays clean)."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from aoizora.planning.planner import Progress as PlannerProgress


class RichProgress(PlannerProgress):
    def __init__(self, enabled: bool = True):
        self.console = Console(file=sys.stderr, quiet=not enabled)
        self.bar = Progress(TextColumn("{task.description:<28}"), BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("[dim]{task.fields[detail]}"), console=self.console,
                            transient=False)
        self.task = None
        self.started = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # Started only at the first phase, so an error before any work prints just its line.
        if self.started:
            self._finish()
            self.bar.stop()

    def _finish(self):
        if self.task is not None:
            t = self.bar.tasks[self.task]
            self.bar.update(self.task, completed=t.total or 1, total=t.total or 1, detail="")

    def phase(self, name, total=None):
        if not self.started:
            self.bar.start()
            self.started = True
        self._finish()
        self.task = self.bar.add_task(name, total=total or 1, detail="")

    def advance(self, detail=""):
        if self.task is not None:
            self.bar.update(self.task, advance=1, detail=detail[:50])

    def note(self, text):
        self.bar.console.print(f"[dim]  {text}")
