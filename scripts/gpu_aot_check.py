"""AOT check on the GPU machine: load `tilec compile` output with no compiler and launch it.

    # here
    .venv/bin/tilec compile examples/vector_add.py --target sm90 \
        --signature "*fp32,*fp32,*fp32,i32:16" --constexpr BLOCK=1024 -o .carry/aot
    # on the GPU machine (no MLIR there)
    PYTHONPATH=$PWD python3 scripts/gpu_aot_check.py
"""
import sys, time, torch, tilec
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
for _ in range(3):  # later launches of the same grid go through the C launcher
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    o = torch.full_like(x, float("nan"))
    k[(n // 1024,)](x, y, o, n)
    torch.cuda.synchronize()
    assert torch.equal(o, x + y)
print("launcher for a static grid:", type(k[(n // 1024,)]).__name__)
xs, ys, os_ = (torch.ones(16, device="cuda") for _ in range(3))
k[(1,)](xs, ys, os_, 16)
torch.cuda.synchronize()
total, reps = 0.0, 200
for _ in range(50):
    t0 = time.perf_counter()
    for _ in range(reps):
        k[(1,)](xs, ys, os_, 16)
    total += time.perf_counter() - t0
    torch.cuda.synchronize()
print(f"AOT launch, host time per launch: {total / (50 * reps) * 1e6:.2f} us")
print("AOT load on the GPU without the compiler: ok", "mlir" in sys.modules)
