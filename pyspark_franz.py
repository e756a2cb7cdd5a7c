"""Spark's hook for auto-registering the ``franz`` data source.

Spark registers the ``DefaultSource`` of every top-level ``pyspark_*`` module it finds on the
Python path, so installing ``franz[spark]`` is enough for ``format("franz")`` to work.
"""

from franz.spark.source import FranzDataSource as DefaultSource

__all__ = ["DefaultSource"]
