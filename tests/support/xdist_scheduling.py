"""How ``scripts/test.sh`` hands test files to pytest-xdist workers.

``--dist loadfile`` with one change: every test under a directory in
:data:`ONE_WORKER_DIRS` is a single work unit, so that directory's costly session fixture
starts on one worker only (``tests/spark``: a SparkSession is ~16 s of CPU and ~1 GiB of
RAM; four of them on a loaded 2-core machine make the Spark tests the slowest part of the
run). Every other file is a unit of its own, as with ``loadfile``, so a module's broker
starts once. Units are handed out in collection order (``--no-loadscope-reorder``) except
that the one-worker units go first: they are the longest, and the many short files of
``tests/unit`` at the end even out the finish.

Only imported when xdist runs (``tests/conftest.py``'s ``pytest_xdist_make_scheduler``).
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

#: Directories (relative to the rootdir, with a trailing ``/``) whose tests all run on one
#: worker.
ONE_WORKER_DIRS = ("tests/spark/",)


def scope_of(nodeid: str) -> str:
    """The work unit of ``nodeid``: its directory in :data:`ONE_WORKER_DIRS`, else its file."""
    path = nodeid.split("::", 1)[0]
    for directory in ONE_WORKER_DIRS:
        if path.startswith(directory):
            return directory
    return path


class FileScheduling(LoadFileScheduling):
    """``loadfile``, with :data:`ONE_WORKER_DIRS` as one unit each, handed out first."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)

    def _assign_work_unit(self, node: WorkerController) -> None:
        # The queue is complete before the first unit is handed out: move the one-worker
        # units to its front (a no-op afterwards, when they are gone or handed out).
        for directory in reversed(ONE_WORKER_DIRS):
            if directory in self.workqueue:
                self.workqueue.move_to_end(directory, last=False)
        super()._assign_work_unit(node)
