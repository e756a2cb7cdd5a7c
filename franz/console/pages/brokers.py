"""A broker (``/brokers/{id}``, linked from the overview): its address, rack, controller
role, version guess and log dirs, and its configs as DescribeConfigs(BROKER) answers them
(value and source: ``STATIC_BROKER_CONFIG`` from server.properties,
``DYNAMIC_BROKER_CONFIG`` / ``DYNAMIC_DEFAULT_BROKER_CONFIG`` set with
``kafka-configs --alter``, ``DEFAULT_CONFIG``), non-default ones first. Read-only:
``franz configs --entity-type brokers --alter`` changes them."""

from __future__ import annotations

from typing import Final

from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.admin._resource import ResourceType
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from franz.console import topics_data as data
from franz.console.app import render

__all__ = ["NAV", "routes"]

#: No entry of its own: the overview's broker rows link here.
NAV: Final[list[tuple[str, str]]] = []


async def _configs(request: Request, broker: int) -> list[data.ConfigRow] | str:
    resource = ConfigResource(ResourceType.BROKER, str(broker))
    try:
        return await data.describe_configs(request.app.state.cluster, resource)
    except data.ActionFailed as exc:
        return str(exc)


async def broker(request: Request) -> Response:
    broker_id = int(request.path_params["id"])
    # The overview first: DescribeConfigs(BROKER) goes to that broker, so an id the
    # cluster does not have would only time out.
    overview = await request.app.state.cluster.overview()
    found = [b for b in overview.brokers if b.id == broker_id]
    if not found:
        return render(request, "brokers/missing.html", status_code=404, broker_id=broker_id)
    configs = await _configs(request, broker_id)
    return render(
        request,
        "brokers/detail.html",
        broker=found[0],
        configs=configs if not isinstance(configs, str) else [],
        config_error=configs if isinstance(configs, str) else None,
    )


def routes() -> list[BaseRoute]:
    return [Route("/brokers/{id:int}", broker, name="broker")]
