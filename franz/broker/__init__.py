"""The broker: wiring, request dispatch, handlers (one module per API), topic management."""
