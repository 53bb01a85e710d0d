"""Stand-alone benchmarks (not part of the test suite or CI); see benchmarks/README.md."""
