"""A pure-Python reference of the scheduling core, for tests and benchmarks only."""
