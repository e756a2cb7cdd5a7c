"""The controller's I/O shell: the event task, the broker channel, ZooKeeper reads and writes.

The only part of ``franz.controller`` allowed to import ``franz.network`` and the ZooKeeper
client (import-linter contract in ``pyproject.toml``); it drives the pure core (context, state
machines, request batch) and applies its outputs.
"""
