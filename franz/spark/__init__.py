"""The PySpark connector: Franz topics as batch and streaming DataFrames.

A Python data source (``pyspark.sql.datasource``, pyspark >= 4.2) with the short name
``franz`` and the options and schema of Spark's built-in Kafka source and sink, so a pipeline
written for ``format("kafka")`` only changes the format::

    spark.readStream.format("franz")
        .option("kafka.bootstrap.servers", "127.0.0.1:9092")
        .option("subscribe", "user-activity")
        .load()

It registers itself on any Spark whose Python has ``franz[spark]`` installed (the top-level
module ``pyspark_franz``); ``spark.dataSource.register(FranzDataSource)`` does the same by hand.

The connector talks to brokers through librdkafka (confluent-kafka), never through Franz's
broker code: executors import only this package, and it works against any Kafka cluster.
"""

from __future__ import annotations

from franz.spark.source import FranzDataSource

__all__ = ["FranzDataSource"]
