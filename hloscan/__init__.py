"""hloscan: a static analyzer for XLA HLO text dumps."""

__version__ = "0.1.0"
