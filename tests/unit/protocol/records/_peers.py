"""Third-party Kafka clients' record codecs, imported once for the interop tests.

kafka-python 3.0 emits ``DeprecationWarning`` s (``importlib.resources.read_text`` and
``open_text``) when its package is first imported; the test suite turns warnings into errors,
so the import is done here with deprecation warnings silenced.
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.codec as kafka_python_codec
    from kafka.record.default_records import DefaultRecordBatch as KafkaPythonBatch
    from kafka.record.default_records import (
        DefaultRecordBatchBuilder as KafkaPythonBatchBuilder,
    )
    from kafka.record.util import decode_varint as kafka_python_decode_varint
    from kafka.record.util import encode_varint as kafka_python_encode_varint

import aiokafka.codec as aiokafka_codec
from aiokafka.record.default_records import DefaultRecordBatch as AiokafkaBatch
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AiokafkaBatchBuilder

from franz.protocol.records import CompressionType

__all__ = [
    "AiokafkaBatch",
    "AiokafkaBatchBuilder",
    "KafkaPythonBatch",
    "KafkaPythonBatchBuilder",
    "aiokafka_codec",
    "kafka_python_codec",
    "kafka_python_codecs",
    "kafka_python_decode_varint",
    "kafka_python_encode_varint",
]


def kafka_python_codecs() -> list[CompressionType]:
    """The codecs kafka-python can use in this environment (its optional libraries vary)."""
    available = {
        CompressionType.NONE: True,
        CompressionType.GZIP: kafka_python_codec.has_gzip(),
        CompressionType.SNAPPY: kafka_python_codec.has_snappy(),
        CompressionType.LZ4: kafka_python_codec.has_lz4(),
        CompressionType.ZSTD: kafka_python_codec.has_zstd(),
    }
    return [codec for codec, ok in available.items() if ok]
