"""The classic group coordinator: group states, groups, and the ``__consumer_offsets`` topic."""
