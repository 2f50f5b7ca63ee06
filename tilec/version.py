"""The one version string of tilec (the package metadata reads it too)."""
__version__ = "0.1.0"
