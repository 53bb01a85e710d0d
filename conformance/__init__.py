"""cdc-conformance: a protocol conformance test suite for change-data-capture encoders."""

__all__ = ["__version__"]
__version__ = "0.1.0.dev0"
