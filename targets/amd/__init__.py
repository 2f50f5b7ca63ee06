"""AMD back end: ROCDL -> LLVM IR -> llvmlite -> AMDGCN -> ld.lld (backend.py)."""
