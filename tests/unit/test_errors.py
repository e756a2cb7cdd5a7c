"""Tests for franz.errors: Kafka's error codes and the exception -> code mapping."""

from __future__ import annotations

import pytest

from franz import errors
from franz.errors import (
    ApiError,
    CorruptRecordError,
    DuplicateSequenceError,
    ErrorCode,
    FranzError,
    InconsistentBrokerMetadataError,
    InvalidConfigurationError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidRequestError,
    InvalidTimestampError,
    InvalidTopicError,
    KafkaStorageError,
    LogDirLockedError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    PolicyViolationError,
    ProducerFencedError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    TopicAlreadyExistsError,
    UnknownProducerIdError,
    UnknownTopicOrPartitionError,
    UnsupportedCompressionTypeError,
    UnsupportedVersionError,
    error_code_for,
)

# (name, Kafka's number, Kafka's retriable flag), checked against Kafka's protocol guide
# ("Error Codes" table) and the RetriableException hierarchy of Kafka 4.x.
KAFKA_SPOT_CHECKS = [
    ("UNKNOWN_SERVER_ERROR", -1, False),
    ("NONE", 0, False),
    ("OFFSET_OUT_OF_RANGE", 1, False),
    ("CORRUPT_MESSAGE", 2, True),
    ("UNKNOWN_TOPIC_OR_PARTITION", 3, True),
    ("LEADER_NOT_AVAILABLE", 5, True),
    ("NOT_LEADER_OR_FOLLOWER", 6, True),
    ("REQUEST_TIMED_OUT", 7, True),
    ("BROKER_NOT_AVAILABLE", 8, False),
    ("REPLICA_NOT_AVAILABLE", 9, True),
    ("MESSAGE_TOO_LARGE", 10, False),
    ("INVALID_TOPIC_EXCEPTION", 17, False),
    ("RECORD_LIST_TOO_LARGE", 18, False),
    ("NOT_ENOUGH_REPLICAS", 19, True),
    ("REBALANCE_IN_PROGRESS", 27, False),
    ("INVALID_TIMESTAMP", 32, False),
    ("UNSUPPORTED_VERSION", 35, False),
    ("TOPIC_ALREADY_EXISTS", 36, False),
    ("INVALID_CONFIG", 40, False),
    ("NOT_CONTROLLER", 41, True),
    ("INVALID_REQUEST", 42, False),
    ("POLICY_VIOLATION", 44, False),
    ("OUT_OF_ORDER_SEQUENCE_NUMBER", 45, False),
    ("DUPLICATE_SEQUENCE_NUMBER", 46, False),
    ("INVALID_PRODUCER_EPOCH", 47, False),
    ("CONCURRENT_TRANSACTIONS", 51, True),
    ("KAFKA_STORAGE_ERROR", 56, True),
    ("UNKNOWN_PRODUCER_ID", 59, False),
    ("FENCED_LEADER_EPOCH", 74, True),
    ("UNSUPPORTED_COMPRESSION_TYPE", 76, False),
    ("ELECTION_NOT_NEEDED", 84, True),
    ("INVALID_RECORD", 87, False),
    ("THROTTLING_QUOTA_EXCEEDED", 89, True),
    ("PRODUCER_FENCED", 90, False),
    ("UNKNOWN_TOPIC_ID", 100, True),
    ("INCONSISTENT_TOPIC_ID", 103, True),
    ("FETCH_SESSION_TOPIC_ID_ERROR", 106, True),
    ("OFFSET_MOVED_TO_TIERED_STORAGE", 109, False),
    ("TRANSACTION_ABORTABLE", 120, False),
    ("SHARE_SESSION_NOT_FOUND", 122, True),
    ("REBOOTSTRAP_REQUIRED", 129, False),
    ("STREAMS_TOPOLOGY_FENCED", 132, False),
    ("SHARE_SESSION_LIMIT_REACHED", 133, True),
]

# Every exception the task defines and the code it must map to.
EXCEPTION_CODES: list[tuple[type[ApiError], ErrorCode]] = [
    (CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
    (InvalidRecordError, ErrorCode.INVALID_RECORD),
    (RecordTooLargeError, ErrorCode.MESSAGE_TOO_LARGE),
    (RecordBatchTooLargeError, ErrorCode.RECORD_LIST_TOO_LARGE),
    (KafkaStorageError, ErrorCode.KAFKA_STORAGE_ERROR),
    (OffsetOutOfRangeError, ErrorCode.OFFSET_OUT_OF_RANGE),
    (UnknownTopicOrPartitionError, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    (InvalidTopicError, ErrorCode.INVALID_TOPIC_EXCEPTION),
    (TopicAlreadyExistsError, ErrorCode.TOPIC_ALREADY_EXISTS),
    (InvalidConfigurationError, ErrorCode.INVALID_CONFIG),
    (UnsupportedVersionError, ErrorCode.UNSUPPORTED_VERSION),
    (UnsupportedCompressionTypeError, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
    (InvalidTimestampError, ErrorCode.INVALID_TIMESTAMP),
    (NotLeaderOrFollowerError, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    (PolicyViolationError, ErrorCode.POLICY_VIOLATION),
    (InvalidRequestError, ErrorCode.INVALID_REQUEST),
    (OutOfOrderSequenceError, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
    (DuplicateSequenceError, ErrorCode.DUPLICATE_SEQUENCE_NUMBER),
    (UnknownProducerIdError, ErrorCode.UNKNOWN_PRODUCER_ID),
    (InvalidProducerEpochError, ErrorCode.INVALID_PRODUCER_EPOCH),
    (ProducerFencedError, ErrorCode.PRODUCER_FENCED),
]


def _all_subclasses(cls: type[ApiError]) -> set[type[ApiError]]:
    found: set[type[ApiError]] = set()
    for sub in cls.__subclasses__():
        found.add(sub)
        found |= _all_subclasses(sub)
    return found


# --- ErrorCode ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value", "retriable"), KAFKA_SPOT_CHECKS)
def test_code_matches_kafka(name: str, value: int, retriable: bool) -> None:
    code = ErrorCode[name]
    assert code == value
    assert code.value == value
    assert code.retriable is retriable
    assert ErrorCode(value) is code
    assert code.name == name


def test_lookup_by_wire_value() -> None:
    assert ErrorCode(6) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable is True
    assert ErrorCode(-1) is ErrorCode.UNKNOWN_SERVER_ERROR
    with pytest.raises(ValueError):
        ErrorCode(134)
    with pytest.raises(ValueError):
        ErrorCode(-2)


def test_codes_are_ints_for_encoding() -> None:
    assert isinstance(ErrorCode.OFFSET_OUT_OF_RANGE, int)
    assert int(ErrorCode.KAFKA_STORAGE_ERROR) == 56
    assert ErrorCode.INVALID_RECORD + 0 == 87


def test_values_unique_no_aliases() -> None:
    # An alias (two names, one value) would silently hide a member.
    assert len(ErrorCode.__members__) == len(ErrorCode)
    values = [c.value for c in ErrorCode]
    assert len(values) == len(set(values))


def test_values_contiguous_like_kafka() -> None:
    # Kafka's codes run without gaps from -1 (UNKNOWN_SERVER_ERROR) to the highest one.
    values = sorted(c.value for c in ErrorCode)
    assert values == list(range(-1, values[-1] + 1))
    assert values[-1] >= 133
    assert ErrorCode(133) is ErrorCode.SHARE_SESSION_LIMIT_REACHED


def test_members_in_value_order() -> None:
    values = [c.value for c in ErrorCode]
    assert values == sorted(values)


def test_messages() -> None:
    assert ErrorCode.NONE.message == ""
    for code in ErrorCode:
        assert isinstance(code.message, str)
        assert isinstance(code.retriable, bool)
        if code is not ErrorCode.NONE:
            assert code.message, code.name
            assert code.message == code.message.strip()
    assert ErrorCode.UNSUPPORTED_VERSION.message == "The version of API is not supported."
    assert "CRC" in ErrorCode.CORRUPT_MESSAGE.message


def test_names_are_kafka_style() -> None:
    for code in ErrorCode:
        assert code.name == code.name.upper()
        assert " " not in code.name


def test_retriable_set_matches_kafka() -> None:
    # Codes whose Kafka exception extends RetriableException (Kafka 4.x).
    expected = {
        2, 3, 5, 6, 7, 9, 13, 14, 15, 16, 19, 20, 41, 51, 56, 70, 71, 72, 74, 75, 78, 80, 83,
        84, 88, 89, 100, 103, 106, 122, 123, 133,
    }  # fmt: skip
    assert {c.value for c in ErrorCode if c.retriable} == expected


# --- exceptions --------------------------------------------------------------------------------


@pytest.mark.parametrize(("exc_type", "code"), EXCEPTION_CODES)
def test_exception_maps_to_its_code(exc_type: type[ApiError], code: ErrorCode) -> None:
    assert exc_type.code is code
    exc = exc_type()
    assert error_code_for(exc) is code
    assert isinstance(exc, ApiError)
    assert isinstance(exc, FranzError)
    assert exc.retriable is code.retriable


@pytest.mark.parametrize(("exc_type", "code"), EXCEPTION_CODES)
def test_default_message_is_kafka_description(exc_type: type[ApiError], code: ErrorCode) -> None:
    exc = exc_type()
    assert str(exc) == code.message
    assert exc.message == code.message


def test_custom_message_kept() -> None:
    exc = CorruptRecordError("batch crc mismatch at offset 42")
    assert str(exc) == "batch crc mismatch at offset 42"
    assert exc.message == "batch crc mismatch at offset 42"
    assert error_code_for(exc) is ErrorCode.CORRUPT_MESSAGE


def test_every_api_error_subclass_maps_through_error_code_for() -> None:
    subclasses = _all_subclasses(ApiError)
    assert {t for t, _ in EXCEPTION_CODES} <= subclasses
    for sub in subclasses:
        assert isinstance(sub.code, ErrorCode)
        assert error_code_for(sub()) is sub.code


def test_distinct_codes_per_named_exception() -> None:
    codes = [code for _, code in EXCEPTION_CODES]
    assert len(codes) == len(set(codes))


def test_base_api_error_is_unknown_server_error() -> None:
    assert ApiError.code is ErrorCode.UNKNOWN_SERVER_ERROR
    assert error_code_for(ApiError()) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert str(ApiError()) == ErrorCode.UNKNOWN_SERVER_ERROR.message


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("boom"),
        KeyError("k"),
        RuntimeError(),
        OSError(5, "I/O error"),
        FranzError("local"),
        KeyboardInterrupt(),
    ],
)
def test_non_api_errors_map_to_unknown_server_error(exc: BaseException) -> None:
    assert error_code_for(exc) is ErrorCode.UNKNOWN_SERVER_ERROR


def test_raised_and_caught_as_franz_error() -> None:
    with pytest.raises(FranzError) as info:
        raise NotLeaderOrFollowerError()
    assert error_code_for(info.value) is ErrorCode.NOT_LEADER_OR_FOLLOWER


@pytest.mark.parametrize("exc_type", [LogDirLockedError, InconsistentBrokerMetadataError])
def test_local_errors_are_not_api_errors(exc_type: type[FranzError]) -> None:
    assert issubclass(exc_type, FranzError)
    assert not issubclass(exc_type, ApiError)
    assert exc_type.__doc__
    exc = exc_type("details")
    assert str(exc) == "details"
    assert error_code_for(exc) is ErrorCode.UNKNOWN_SERVER_ERROR


def test_public_names_exported() -> None:
    for name in errors.__all__:
        assert hasattr(errors, name), name
