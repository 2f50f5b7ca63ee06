"""AOT check on the GPU machine: load `tilec compile` output with no compiler and launch it.

    # here
    .venv/bin/tilec compile examples/vector_add.py --target sm90 \
        --signature "*fp32,*fp32,*fp32,i32:16" --constexpr BLOCK=1024 -o .carry/aot
    # on the GPU machine (no MLIR there)
    PYTHONPATH=$PWD python3 scripts/gpu_aot_check.py
"""
import sys, torch, tilec
k = tilec.load(".carry/aot/add")
n = 1 << 20
x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
o = torch.full_like(x, float("nan"))
k[(n // 1024,)](x, y, o, n)
torch.cuda.synchronize()
assert torch.equal(o, x + y)
try:
    k[(1,)](x, y, o, 1000)
except tilec.TilecError as e:
    print("rejected as expected:", str(e).splitlines()[-1][:90])
print("AOT load on the GPU without the compiler: ok", "mlir" in sys.modules)
