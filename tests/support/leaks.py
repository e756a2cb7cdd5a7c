"""kafka-python 3's leaked sockets, released while a test module's warning filter applies.

kafka-python 3 keeps the exception of a failed connection or request (with its traceback)
after the client is closed, and the traceback's ``kafka.net`` frames hold the socket: left
alone, it warns at the session's end (pytest's unraisable check turns the ResourceWarning into
an error) or in whichever test the garbage collector happens to run in. The application never
sees the socket; it is the client's own bookkeeping. Modules whose tests close kafka-python
clients use ``KAFKA_PYTHON_SOCKET_FILTERS`` as their ``pytestmark`` and call
``release_kafka_python_sockets`` after each test (an autouse fixture), so the collector frees
those sockets under the module's filter.
"""

from __future__ import annotations

import contextlib
import gc
import os
import types

import pytest

__all__ = ["KAFKA_PYTHON_SOCKET_FILTERS", "release_kafka_python_sockets"]

#: The module-level filters under which the leaked sockets may be collected.
KAFKA_PYTHON_SOCKET_FILTERS = pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning",
    "ignore:unclosed <socket.socket:ResourceWarning",
)

_KAFKA_NET = os.path.join("kafka", "net") + os.sep


def release_kafka_python_sockets() -> None:
    """Clear kafka-python's finished ``kafka.net`` frames (kept by exception tracebacks) and
    collect what they held."""
    for obj in gc.get_objects():
        # type(), not isinstance(): gc also lists weak proxies, and isinstance() on a dead
        # one raises ReferenceError.
        if type(obj) is types.FrameType and _KAFKA_NET in obj.f_code.co_filename:
            with contextlib.suppress(RuntimeError):  # a frame still running is left alone
                obj.clear()
    for _ in range(5):  # as pytest's own collect_unraisable: cycles may need a few passes
        gc.collect()
