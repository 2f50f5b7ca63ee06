"""NVIDIA back end: NVVM -> PTX -> ptxas (backend.py)."""
