"""The package version: the same as the npm package's (package.json), checked by a test."""

__version__ = "0.1.0"
