"""MLIR dialects defined by tilec (installed as tilec.dialects)."""
import sys
import types

# MLIR's Python bindings look up op classes by importing `mlir.dialects.<namespace>`
# for every op they wrap and remember only the imports that succeed: without a
# module for `tile` they tried it again for each op (2,954 failed imports in one
# sm90 matmul compile).  An empty module answers them: `tile` ops are generic
# OpViews, built by the helpers in tilec.dialects.tile.
sys.modules.setdefault("mlir.dialects.tile", types.ModuleType(
    "mlir.dialects.tile", "tilec's tile dialect is IRDL-defined: no Python op classes"))
