"""scripts/triton_tutorials.py (port: import lines only) and the CUDA face of
`tilec.runtime.driver.active` that Triton's tutorials read (checked here
without a GPU: the CUDA driver calls are replaced by an H200's answers)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("triton_tutorials", ROOT / "scripts" / "triton_tutorials.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_port_changes_import_lines_only() -> None:
    src = ("import torch\nimport triton\nimport triton.language as tl\n"
           "from triton.runtime import driver\n    from triton.tools.tensor_descriptor import "
           "TensorDescriptor\nfrom triton.language.extra import libdevice\nimport triton.profiler\n"
           "x = triton.cdiv(3, 2)  # import triton\n")
    out, unmapped = _script().port_text(src)
    assert out.splitlines() == [
        "import torch", "import tilec as triton", "import tilec.language as tl",
        "from tilec.runtime import driver",
        "    from tilec.tools.tensor_descriptor import TensorDescriptor",
        "from tilec.language.extra import libdevice", "import triton.profiler",
        "x = triton.cdiv(3, 2)  # import triton"]
    assert unmapped == ["import triton.profiler"]


def test_driver_on_an_h200(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    from tilec.runtime import cuda, driver
    d = driver._Driver()
    monkeypatch.setattr(d, "is_cuda", lambda: True)
    monkeypatch.setattr(d, "tilec_target", lambda: "sm90")
    monkeypatch.setattr(cuda, "device_capability", lambda: (9, 0))
    h200 = {"MULTIPROCESSOR_COUNT": 132, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448,
            "MAX_REGISTERS_PER_BLOCK": 65536, "WARP_SIZE": 32,
            "MAX_THREADS_PER_MULTIPROCESSOR": 2048, "CLOCK_RATE": 1980000,
            "MEMORY_CLOCK_RATE": 2619000, "GLOBAL_MEMORY_BUS_WIDTH": 6144}
    monkeypatch.setattr(cuda, "device_attributes", lambda names, device=0: {n: h200[n] for n in names})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    t = d.get_current_target()
    assert (t.backend, t.arch, t.warp_size) == ("cuda", 90, 32)
    dev = d.get_active_torch_device()
    assert dev == torch.device("cuda", 0) and dev.index == 0   # x.device == DEVICE holds
    p = d.utils.get_device_properties(dev.index)
    assert p["multiprocessor_count"] == 132 and p["max_shared_mem"] == 232448
    assert p["max_num_regs"] == 65536 and p["warpSize"] == 32 and p["max_shared_mem"] > 200000


def test_perf_report_save_path(tmp_path: Path) -> None:
    import tilec.testing as tt

    @tt.perf_report(tt.Benchmark(x_names=["n"], x_vals=[1, 2], line_arg="p", line_vals=["a", "b"],
                                 line_names=["A", "B"], plot_name="demo"))
    def bench(n: int, p: str) -> float:
        return float(n * (1 if p == "a" else 2))
    bench.run(print_data=True, show_plots=True, save_path=str(tmp_path))
    assert (tmp_path / "demo.csv").read_text().splitlines() == ["n,A,B", "1,1.0,2.0", "2,2.0,4.0"]
