"""The `conformance` command line."""
