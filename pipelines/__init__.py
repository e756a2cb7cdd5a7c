"""The reference data pipeline on Franz: user-activity tracking with PySpark.

- ``pipelines.events``: the event generator (realistic JSON activity events, some late, some
  malformed) and its producer CLI, ``python -m pipelines.events``.
- ``pipelines.oracle``: what the pipeline must output for a generated stream, computed in
  plain Python (no Spark): the independent check the tests and the demo use.
- ``pipelines.activity_stream``: the Structured Streaming job (parse, dead-letter topic,
  per-minute counts with a watermark to Parquet and to the ``page-stats`` topic).
- ``pipelines.history_batch``: the batch job (a topic's retained history into Parquet).
- ``pipelines.demo``: the whole thing against an embedded broker in one command.
- ``pipelines.common``: topic names, the watermark, the local SparkSession, topic creation.

The jobs read and write topics through the ``franz`` Spark data source (``franz.spark``),
which has the options and schema of Spark's Kafka connector. See ``pipelines/README.md``.
"""
