"""Kafka's ``Uuid``: 16 bytes on the wire, 22-character URL-safe base64 (no padding) as text.

Topic ids (KIP-516) and cluster ids use it. ``random_uuid`` follows Kafka's rule of never
returning the all-zero id, the metadata topic's id (1), or an id whose text starts with
``-`` (it would read as a command-line flag).
"""

from __future__ import annotations

import base64
import uuid

__all__ = ["ZERO_UUID", "random_uuid", "uuid_from_str", "uuid_to_str"]

ZERO_UUID = uuid.UUID(int=0)
_METADATA_TOPIC_ID = uuid.UUID(int=1)


def uuid_to_str(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def uuid_from_str(text: str) -> uuid.UUID:
    if len(text) != 22:
        raise ValueError(f"{text!r} is not a 22-character base64 Kafka Uuid")
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def random_uuid() -> uuid.UUID:
    while True:
        value = uuid.uuid4()
        if value not in (ZERO_UUID, _METADATA_TOPIC_ID) and not uuid_to_str(value).startswith("-"):
            return value
