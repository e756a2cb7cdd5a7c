"""Run the web console (``franz.console``) for a Kafka-compatible cluster.

    franz console --bootstrap-server HOST:PORT [--command-config FILE]
                  [--host 127.0.0.1] [--port 9021] [--metrics-url URL ...]

Serves the console on http://HOST:PORT/ (127.0.0.1 by default: the console has no login of
its own and acts with the client settings of ``--command-config``: ``security.protocol``,
``ssl.*``, ``sasl.*``, as librdkafka reads them). ``--metrics-url`` (repeatable) names
Prometheus endpoints to chart from (Franz's ``metrics.listener``, or a JMX exporter in
front of Kafka). Prints one line with the URL when it is serving; Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Final

from franz.admin.options import add_connection_options, client_config

__all__ = ["DEFAULT_PORT", "add_arguments", "run"]

#: 9021: Confluent Control Center's port, free of Kafka's and Franz's own.
DEFAULT_PORT: Final = 9021


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser, timeout_ms=15000)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any)"
    )
    parser.add_argument(
        "--metrics-url",
        action="append",
        default=[],
        metavar="URL",
        help="a Prometheus endpoint of the cluster to chart from (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from franz.console.app import ConsoleSettings, create_app
    from franz.console.cluster import ConsoleCluster

    cluster = ConsoleCluster(client_config(args), timeout_s=args.timeout_ms / 1000)
    app = create_app(cluster, ConsoleSettings(metrics_urls=list(args.metrics_url)))
    config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)

    async def serve() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started:
            host, port = server.servers[0].sockets[0].getsockname()[:2]
            print(f"franz console serving http://{host}:{port}/ for {cluster.bootstrap}",
                  flush=True)  # fmt: skip
        await task

    asyncio.run(serve())
    return 0 if server.started else 1
