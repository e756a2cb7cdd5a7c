"""How ``scripts/test.sh`` hands test files to pytest-xdist workers.

``--dist loadfile`` with one change: every test under a path of
:data:`ONE_WORKER_UNITS` is a single work unit, so its costly session fixture starts on one
worker only (a SparkSession is ~16 s of CPU and ~1 GiB of RAM; four of them on a loaded
2-core machine make the Spark tests the slowest part of the run). The Spark unit starts with
``tests/reference/test_spark_kafka.py``, whose session must be the first of its process (the
JVM is launched with Spark's Kafka connector on its class path), as in a serial run, where
``tests/reference`` is collected before ``tests/spark``. Every other file is a unit of its
own, as with ``loadfile``, so a module's broker starts once. Units are handed out in
collection order (``--no-loadscope-reorder``) except that the one-worker units go first:
they are the longest, and the many short files of ``tests/unit`` at the end even out the
finish.

Only imported when xdist runs (``tests/conftest.py``'s ``pytest_xdist_make_scheduler``).
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

#: Work units whose tests all run on one worker, in collection order: unit name -> path
#: prefixes relative to the rootdir (a directory with a trailing ``/``, or a file).
ONE_WORKER_UNITS: dict[str, tuple[str, ...]] = {
    "spark": (
        "tests/reference/test_spark_kafka.py",
        "tests/reference/test_spark_sink_eos.py",
        "tests/spark/",
    ),
}


def scope_of(nodeid: str) -> str:
    """The work unit of ``nodeid``: its unit in :data:`ONE_WORKER_UNITS`, else its file."""
    path = nodeid.split("::", 1)[0]
    for unit, prefixes in ONE_WORKER_UNITS.items():
        if path.startswith(prefixes):
            return unit
    return path


class FileScheduling(LoadFileScheduling):
    """``loadfile``, with :data:`ONE_WORKER_UNITS` as one unit each, handed out first."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)

    def _assign_work_unit(self, node: WorkerController) -> None:
        # The queue is complete before the first unit is handed out: move the one-worker
        # units to its front (a no-op afterwards, when they are gone or handed out).
        for unit in reversed(ONE_WORKER_UNITS):
            if unit in self.workqueue:
                self.workqueue.move_to_end(unit, last=False)
        super()._assign_work_unit(node)
