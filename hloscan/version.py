"""hloscan's version, in its own module so every layer can read it without importing the public API."""

__version__ = "0.1.0"
