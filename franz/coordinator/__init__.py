"""Coordinators: the group coordinator (classic consumer groups, committed offsets) and the
transaction coordinator's pure core (issue 19: states, metadata, ``__transaction_state``)."""
