"""The controller's pure core (Kafka's ``kafka.controller`` in ZooKeeper mode).

``assignment`` (replica placement), ``election`` (leader election), ``context``
(``ControllerContext``), ``states`` (partition and replica state machines), ``batch`` (the
per-broker LeaderAndIsr/UpdateMetadata/StopReplica batch), ``events`` (the event queue's
events). No I/O: the asyncio/ZooKeeper shell that drives them lives elsewhere.
"""
