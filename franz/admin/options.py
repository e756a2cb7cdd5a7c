"""The options every client tool shares, as Kafka's tools spell them, and the client config
they build.

* ``--bootstrap-server host:port[,host:port]`` (required, as in Kafka 3.x tools).
* ``--command-config FILE``: a client ``.properties`` file (librdkafka / Java client keys:
  ``security.protocol``, ``client.id``, ...), passed to the client as is.
* ``--timeout MS`` (Kafka's tools call it ``--timeout`` or ``--command-timeout``; both are
  accepted where a tool has it): how long to wait for the cluster before giving up with a
  one-line error.

``ToolError`` is the one-line failure every tool raises (exit code 1 via
``franz.cli.main``); its message says what went wrong and what to do.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from franz.config.properties import load_properties
from franz.errors import FranzError

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "ToolError",
    "add_connection_options",
    "client_config",
    "parse_key_values",
    "properties_file",
]

DEFAULT_TIMEOUT_MS = 30_000


class ToolError(FranzError):
    """A tool failed; the message is printed as ``franz <tool>: error: <message>``."""


def add_connection_options(
    parser: argparse.ArgumentParser, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> None:
    parser.add_argument(
        "--bootstrap-server",
        required=True,
        metavar="HOST:PORT",
        help="the broker(s) to connect to, comma-separated (REQUIRED)",
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="a properties file of client configs (security.protocol, client.id, ...)",
    )
    parser.add_argument(
        "--timeout",
        "--command-timeout",
        dest="timeout_ms",
        type=int,
        default=timeout_ms,
        metavar="MS",
        help=f"how long to wait for the cluster, in ms (default {timeout_ms})",
    )


def parse_key_values(items: list[str] | None, what: str) -> dict[str, str]:
    """``k=v`` items (repeatable flags, or one comma-separated item) as a dict."""
    out: dict[str, str] = {}
    for item in items or []:
        for part in item.split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise ToolError(f"{what} expects key=value, got {part!r}")
            out[key.strip()] = value.strip()
    return out


def client_config(
    args: argparse.Namespace, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The librdkafka config of a tool: ``--command-config`` entries, then ``extra``, then
    ``bootstrap.servers`` from ``--bootstrap-server``."""
    path = getattr(args, "command_config", None)
    config: dict[str, Any] = properties_file(path, "--command-config")
    config.update(extra or {})
    config["bootstrap.servers"] = args.bootstrap_server
    return config


def properties_file(path: str | Path | None, flag: str) -> dict[str, str]:
    """The entries of a Java properties file named by ``flag`` (``{}`` for None); a missing
    file is the ``ToolError`` ``<flag> <path>: no such file``."""
    if not path:
        return {}
    if not Path(path).is_file():
        raise ToolError(f"{flag} {path}: no such file")
    return load_properties(path)
