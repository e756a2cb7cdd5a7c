"""Client-side helpers shared by the CLI tools, tests and benchmarks (``DESIGN.md``)."""
