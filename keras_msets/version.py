"""The keras_msets version, one place for the package and its metadata."""

__version__ = "0.1.0"
