"""The asyncio edge: the Kafka listener and one connection object per client.

Only this package (and the Spark connector's client) touches sockets; everything it carries
is parsed and built by the sans-IO ``franz.protocol``.
"""

from franz.network.connection import KafkaConnection, RequestHandler, Response
from franz.network.server import SocketServer, SocketServerConfig

__all__ = ["KafkaConnection", "RequestHandler", "Response", "SocketServer", "SocketServerConfig"]
