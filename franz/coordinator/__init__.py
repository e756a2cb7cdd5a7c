"""Coordinators: the group coordinator (classic consumer groups, committed offsets)."""
