"""Passes over tile IR, one per file (installed as tilec.passes)."""
