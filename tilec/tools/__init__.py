"""Triton's `triton.tools` names that ported host code imports."""
