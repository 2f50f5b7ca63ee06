"""MLIR dialects defined by tilec (installed as tilec.dialects)."""
