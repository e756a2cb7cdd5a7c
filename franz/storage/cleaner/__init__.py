"""Log compaction (Kafka's log cleaner) for topics with ``cleanup.policy`` ``compact``.

- ``offset_map``: the key -> latest offset map of one round (``OffsetMap``).
- ``segment_io``: reading source segments and writing ``.cleaned`` segment files.
- ``cleaner``: one round of one partition (``Cleaner``, ``CleaningJob``), thread side.
- ``manager``: choosing the filthiest log, checkpoints, pausing (``LogCleanerManager``),
  loop side; ``CleanerConfig`` (the broker's ``log.cleaner.*`` keys).
- ``thread``: ``LogCleaner``, the worker threads and the loop-side swap.

``LogManager`` owns one ``LogCleaner``: started and stopped with it, driven by its tick.
"""

from franz.storage.cleaner.manager import CleanerConfig, CleanerLogStatus
from franz.storage.cleaner.thread import LogCleaner

__all__ = ["CleanerConfig", "CleanerLogStatus", "LogCleaner"]
