"""Fixtures of the cluster unit tests: the storage tests' log managers."""

from tests.unit.storage.conftest import clock, open_manager

__all__ = ["clock", "open_manager"]
