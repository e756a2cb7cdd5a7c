"""The transaction coordinator: states, metadata and the ``__transaction_state`` records."""
