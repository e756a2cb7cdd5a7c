"""Fencing shared by the controller's requests to a broker (LeaderAndIsr, UpdateMetadata,
StopReplica), as Kafka 3.9's ``KafkaApis`` and ``ReplicaManager`` check them, in this order:

1. Broker epoch (KIP-380, ``KafkaApis.isBrokerEpochStale``): a request carrying a broker
   epoch older than this broker's current registration (the czxid of ``/brokers/ids/<id>``)
   was meant for this broker's previous ZooKeeper session: STALE_BROKER_EPOCH. -1 (an old
   request version, or the embedded mode's own step) is never stale; a newer one is accepted
   (the controller saw a registration this broker has not finished yet).
2. Controller epoch (``ReplicaManager.controllerEpoch``): a request from a controller older
   than the newest one heard from: STALE_CONTROLLER_EPOCH, the whole request refused.

Every version Kafka 3.9's ZooKeeper-mode broker serves is applied: LeaderAndIsr v0-7,
UpdateMetadata v0-8, StopReplica v0-4, the older ones read as the newest with Kafka's
defaults for what they lack (``franz.controller.old_versions``; their broker epoch is -1,
never stale).
"""

from __future__ import annotations

import logging
from typing import Any, Final

from franz.broker.authz import authorize_cluster
from franz.broker.context import RequestContext
from franz.controller.requests import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from franz.controller.wire import from_wire
from franz.errors import ErrorCode
from franz.security.acl import AclOperation

__all__ = ["NO_BROKER_EPOCH", "ControllerRequest", "controller_request_error", "to_value"]

log = logging.getLogger(__name__)

#: Kafka's ``AbstractControlRequest.UNKNOWN_BROKER_EPOCH``.
NO_BROKER_EPOCH: Final = -1

ControllerRequest = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest


def to_value(ctx: RequestContext, request: Any) -> ControllerRequest | None:
    """The ``franz.controller.requests`` value of a decoded request, or None for a request
    no controller value describes (refused as UNSUPPORTED_VERSION)."""
    try:
        return from_wire(request)
    except ValueError:
        ctx.refused(
            f"{type(request).__name__} v{ctx.api_version}",
            "no controller request of this version is applied; UNSUPPORTED_VERSION",
        )
        return None


def controller_request_error(ctx: RequestContext, request: ControllerRequest) -> ErrorCode:
    """STALE_BROKER_EPOCH, STALE_CONTROLLER_EPOCH or NONE (module docstring); NONE records
    the request's controller epoch as the newest. First, as Kafka's ``KafkaApis``
    (``authorizeClusterOperation``), CLUSTER_ACTION on the cluster: else
    CLUSTER_AUTHORIZATION_FAILED."""
    if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    services = ctx.services
    current = services.broker_epoch
    if request.broker_epoch != NO_BROKER_EPOCH and request.broker_epoch < current:
        log.info(
            "refusing %s from controller %d: broker epoch %d is older than the current %d",
            type(request).__name__,
            request.controller_id,
            request.broker_epoch,
            current,
        )
        return ErrorCode.STALE_BROKER_EPOCH
    if not services.replica_manager.accept_controller_epoch(request.controller_epoch):
        log.warning(
            "refusing %s from controller %d with epoch %d: the latest known controller epoch is %d",
            type(request).__name__,
            request.controller_id,
            request.controller_epoch,
            services.replica_manager.controller_epoch,
        )
        return ErrorCode.STALE_CONTROLLER_EPOCH
    return ErrorCode.NONE
