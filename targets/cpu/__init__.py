"""CPU back end: LLVM dialect -> LLVM IR -> llvmlite object -> cc shared object (backend.py)."""
