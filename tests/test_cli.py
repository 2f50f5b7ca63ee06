"""Tests of the `tilec` command line (the tilec/cli package).

Most tests call `tilec.cli.main([...])` in-process (fast); a few run
`python -m tilec.cli` in a subprocess to check the real entry point and its
exit status.
"""
from __future__ import annotations

import ctypes
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tilec import cli
from tilec.cli import kernels as cli_kernels, opt as cli_opt
from tilec.errors import TilecError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SAXPY_SIG = "*fp32,*fp32,*fp32,fp32,i32"
ALL_TARGETS = ["sm80", "sm90", "sm100", "gfx90a", "gfx942", "gfx950", "gfx1100", "cpu"]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `tilec ARGV...` run in-process."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write_kernel_file(tmp_path: Path, source: str, name: str = "kern.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def line_of(path: Path, text: str) -> int:
    """1-based number of the first line of `path` containing `text`."""
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if text in line:
            return i
    raise AssertionError(f"{text!r} not in {path}")


# ---------------------------------------------------------------- targets

def test_targets_lists_every_target(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "targets")
    assert code == 0
    rows = [line.split()[0] for line in out.splitlines()[1:] if line.strip()]
    assert rows == ALL_TARGETS
    assert out.splitlines()[0].split()[:3] == ["name", "vendor", "chip"]


def test_entry_point_in_a_subprocess(tmp_path: Path) -> None:
    ok = subprocess.run([sys.executable, "-m", "tilec.cli", "targets"], capture_output=True,
                        text=True, cwd=tmp_path)
    assert ok.returncode == 0 and "gfx1100" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "tilec.cli", "compile", str(EXAMPLES / "saxpy.py"),
                          "--target", "sm42"], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 1
    assert "unknown target 'sm42'" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert not (tmp_path / "tilec-out").exists()


# ---------------------------------------------------------------- compile

def test_compile_saxpy_writes_artifacts_and_manifest(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    code, out, err = run_cli(capsys, "compile", EXAMPLES / "saxpy.py", "--target", "cpu",
                             "--constexpr", "BLOCK=256", "--signature", SAXPY_SIG, "-o", out_dir)
    assert code == 0, err
    folder = out_dir / "saxpy"
    assert str(folder) in out
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["kernel"] == "saxpy"
    assert manifest["target"] == "cpu"
    assert manifest["num_warps"] == 4
    assert [(p["name"], p["type"]) for p in manifest["params"]] == [
        ("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out_ptr", "*fp32"), ("a", "fp32"), ("n", "i32")]
    assert manifest["constexprs"] == {"BLOCK": 256}
    assert manifest["shared"] == 0
    assert manifest["tilec_version"]
    artifacts = manifest["artifacts"]
    assert set(artifacts) >= {"tile", "tile-opt", "cpu", "llir", "asm", "so"}
    for stage, name in artifacts.items():
        assert (folder / name).is_file() and (folder / name).stat().st_size > 0, stage
    assert "tile.program_id" in (folder / artifacts["tile"]).read_text()
    assert "define" in (folder / artifacts["llir"]).read_text()
    lib = ctypes.CDLL(str(folder / artifacts["so"]))
    assert hasattr(lib, "tilec_saxpy")


def test_compile_annotated_file_needs_no_signature(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "compile", EXAMPLES / "kernels_annotated.py", "--target", "cpu",
                           "-o", tmp_path)
    assert code == 0, err
    for kernel in ("scale", "relu"):          # every kernel of the file, defaults for constexprs
        manifest = json.loads((tmp_path / kernel / "manifest.json").read_text())
        assert manifest["kernel"] == kernel
        assert manifest["constexprs"] == {"BLOCK": 256}
        assert (tmp_path / kernel / manifest["artifacts"]["so"]).is_file()


def test_compile_one_named_kernel(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "compile", EXAMPLES / "kernels_annotated.py", "--target", "cpu",
                           "--kernel", "relu", "--constexpr", "BLOCK=64", "-o", tmp_path)
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["relu"]
    manifest = json.loads((tmp_path / "relu" / "manifest.json").read_text())
    assert manifest["constexprs"] == {"BLOCK": 64}


def test_compile_default_output_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "compile", EXAMPLES / "kernels_annotated.py", "--target", "cpu",
                           "--kernel", "scale")
    assert code == 0, err
    assert (tmp_path / "tilec-out" / "scale" / "manifest.json").is_file()


def test_unknown_target_lists_valid_ones(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    code, out, err = run_cli(capsys, "compile", EXAMPLES / "saxpy.py", "--target", "sm42",
                             "--signature", SAXPY_SIG, "-o", tmp_path)
    assert code == 1
    assert "unknown target 'sm42'" in err
    assert "valid targets are: " + ", ".join(ALL_TARGETS) in err
    assert out == ""


def test_unknown_target_raises_tilec_error() -> None:
    from tilec.targets import get_target
    with pytest.raises(TilecError, match="unknown target 'x'.*sm80.*cpu"):
        get_target("x")


def test_missing_signature_is_a_clear_error(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "compile", EXAMPLES / "saxpy.py", "--target", "cpu",
                           "--constexpr", "BLOCK=256", "-o", tmp_path)
    assert code == 1
    assert "kernel 'saxpy'" in err and "x_ptr" in err and "--signature" in err
    assert "Traceback" not in err
    assert not (tmp_path / "saxpy").exists()


def test_signature_with_wrong_count(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "compile", EXAMPLES / "saxpy.py", "--target", "cpu",
                           "--signature", "*fp32,i32", "-o", tmp_path)
    assert code == 1
    assert "2 types" in err and "5 runtime parameters" in err


def test_signature_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "ir", EXAMPLES / "saxpy.py", "--target", "cpu",
                             "--constexpr", "BLOCK=16", "--signature",
                             "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,a=fp16,n=i64")
    assert code == 0, err
    assert "%arg3: f16" in out and "%arg4: i64" in out


def test_kernel_user_error_reports_file_and_line(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    path = write_kernel_file(tmp_path, """\
        import tilec
        import tilec.language as tl


        @tilec.kernel
        def broken(x_ptr: "*fp32", n: "i32", BLOCK: tl.constexpr = 16):
            offs = tl.arange(0, BLOCK)
            y = undefined_name + offs
            tl.store(x_ptr + offs, y)
        """)
    code, _, err = run_cli(capsys, "compile", path, "--target", "cpu", "-o", tmp_path / "out")
    assert code == 1
    assert f"{path}:{line_of(path, 'undefined_name')}:" in err
    assert "undefined_name" in err
    assert "internal" not in err and "Traceback" not in err


def test_file_that_fails_to_import_reports_file_and_line(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    path = write_kernel_file(tmp_path, """\
        import tilec

        x = 1
        raise ValueError("boom at import")
        """)
    code, _, err = run_cli(capsys, "ir", path, "--target", "cpu")
    assert code == 1
    assert f"{path}:4:" in err and "ValueError: boom at import" in err


def test_python_syntax_error_in_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_kernel_file(tmp_path, "def f(:\n    pass\n")
    code, _, err = run_cli(capsys, "ir", path, "--target", "cpu")
    assert code == 1
    assert f"{path}:1:" in err and "not valid Python" in err


def test_file_without_kernels(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_kernel_file(tmp_path, "x = 1\n")
    code, _, err = run_cli(capsys, "compile", path, "--target", "cpu", "-o", tmp_path / "o")
    assert code == 1 and "defines no @tilec.kernel functions" in err


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "ir", tmp_path / "nope.py", "--target", "cpu")
    assert code == 1 and "no such file" in err


def test_kernel_file_sees_its_own_folder(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    write_kernel_file(tmp_path, "BLOCK_SIZE = 32\n", name="helper_consts_for_cli_test.py")
    path = write_kernel_file(tmp_path, """\
        import tilec
        import tilec.language as tl
        from helper_consts_for_cli_test import BLOCK_SIZE


        @tilec.kernel
        def fill(x_ptr: "*fp32", BLOCK: tl.constexpr = BLOCK_SIZE):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, offs * 1.0)
        """)
    code, out, err = run_cli(capsys, "ir", path, "--target", "cpu")
    assert code == 0, err
    assert "tensor<32xi32>" in out
    assert str(tmp_path) not in sys.path


# ---------------------------------------------------------------- ir

def test_ir_default_prints_frontend_tile_ir(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "ir", EXAMPLES / "saxpy.py", "--target", "cpu",
                             "--constexpr", "BLOCK=16", "--signature", SAXPY_SIG)
    assert code == 0, err
    assert out.startswith("module {")
    assert "func.func @saxpy(" in out and "tile.kernel" in out
    for op in ("tile.program_id", "tile.range", "tile.addptr", "tile.load", "tile.store"):
        assert op in out
    assert "llvm." not in out and "loc(" not in out


def test_ir_debug_info_prints_user_locations(capsys: pytest.CaptureFixture[str]) -> None:
    path = EXAMPLES / "saxpy.py"
    code, out, err = run_cli(capsys, "ir", path, "--target", "cpu", "--constexpr", "BLOCK=16",
                             "--signature", SAXPY_SIG, "--debug-info")
    assert code == 0, err
    load_line = next(line for line in out.splitlines() if '"tile.load"' in line)
    assert f'loc("{path}":{line_of(path, "x = tl.load")}:' in load_line


def test_ir_print_after_all_names_every_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "ir", EXAMPLES / "saxpy.py", "--target", "cpu",
                             "--constexpr", "BLOCK=16", "--signature", SAXPY_SIG,
                             "--print-after-all")
    assert code == 0, err
    headers = [line for line in out.splitlines() if line.startswith("// -----// IR Dump After ")]
    names = [h[len("// -----// IR Dump After "):-len(" //----- //")] for h in headers]
    assert names[0] == "frontend"
    for name in ("tile-verify", "tile-dce", "convert-tile-to-cpu"):
        assert name in names
    assert names.index("tile-verify") < names.index("tile-dce") < names.index("convert-tile-to-cpu")


def test_ir_stage_llir_prints_llvm_ir(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "ir", EXAMPLES / "saxpy.py", "--target", "cpu",
                             "--constexpr", "BLOCK=16", "--signature", SAXPY_SIG,
                             "--stage", "llir")
    assert code == 0, err
    assert "define void @tilec_saxpy(" in out
    assert "tile." not in out


def test_ir_stage_binary_prints_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "ir", EXAMPLES / "kernels_annotated.py", "--target", "cpu",
                             "--kernel", "relu", "--stage", "so")
    assert code == 0, err
    assert "binary" in out and "bytes" in out and len(out) < 200


@pytest.mark.parametrize("target", [t for t in ALL_TARGETS if t != "cpu"])
def test_ir_gpu_stages_need_no_gpu(capsys: pytest.CaptureFixture[str], target: str) -> None:
    """The GPU stages before the back end print like any other (no toolchain needed)."""
    args = ["ir", EXAMPLES / "elementwise_2d.py", "--target", target, "--signature",
            "*fp32,*fp32,*fp32,fp32,i32,i32,i32,i32", "--constexpr", "BLOCK_M=4", "BLOCK_N=32"]
    code, out, err = run_cli(capsys, *args, "--stage", "tiled")
    assert code == 0, err
    assert "#tile.blocked" in out
    code, out, err = run_cli(capsys, *args, "--stage", "gpu")
    assert code == 0, err
    assert "gpu.func" in out
    code, _, err = run_cli(capsys, *args, "--stage", "so")
    assert code == 1 and "unknown stage 'so'" in err and "tiled, gpu, llir" in err


def test_ir_unknown_stage_lists_stages(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "ir", EXAMPLES / "kernels_annotated.py", "--target", "cpu",
                           "--kernel", "relu", "--stage", "ptx")
    assert code == 1
    assert "unknown stage 'ptx'" in err and "tile, tile-opt, cpu, llir, asm, so" in err


def test_ir_needs_kernel_when_the_file_has_several(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "ir", EXAMPLES / "kernels_annotated.py", "--target", "cpu")
    assert code == 1
    assert "--kernel" in err and "scale, relu" in err


def test_ir_unknown_kernel_lists_kernels(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "ir", EXAMPLES / "kernels_annotated.py", "--target", "cpu",
                           "--kernel", "nope")
    assert code == 1
    assert "no kernel 'nope'" in err and "scale, relu" in err


def test_stage_and_print_after_all_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["ir", str(EXAMPLES / "saxpy.py"), "--target", "cpu", "--stage", "llir",
                  "--print-after-all"])
    assert info.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


# ---------------------------------------------------------------- option values

def test_constexpr_values() -> None:
    import tilec.language as tl
    parsed = cli_kernels.parse_constexprs(["A=16", "B=1.5", "C=True", "D=tl.float16", "E=fp32",
                                   "F=-3"])
    assert parsed == {"A": 16, "B": 1.5, "C": True, "D": tl.float16, "E": tl.float32, "F": -3}
    with pytest.raises(TilecError, match="NAME=VALUE"):
        cli_kernels.parse_constexprs(["BLOCK"])
    with pytest.raises(TilecError, match="cannot read constexpr value"):
        cli_kernels.parse_constexprs(["BLOCK=sixteen"])


def test_unknown_constexpr_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "ir", EXAMPLES / "kernels_annotated.py", "--target", "cpu",
                           "--kernel", "relu", "--constexpr", "BLOK=16")
    assert code == 1 and "no constexpr parameter 'BLOK'" in err and "BLOCK" in err
    code, _, err = run_cli(capsys, "ir", EXAMPLES / "kernels_annotated.py", "--target", "cpu",
                           "--kernel", "relu", "--constexpr", "n=16")
    assert code == 1 and "runtime parameter" in err


def test_constexpr_without_default_must_be_given(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "ir", EXAMPLES / "saxpy.py", "--target", "cpu",
                           "--signature", SAXPY_SIG)
    assert code == 1 and "BLOCK" in err


def test_num_warps_must_be_a_power_of_two(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "ir", EXAMPLES / "kernels_annotated.py", "--target", "cpu",
                           "--kernel", "relu", "--num-warps", "3")
    assert code == 1 and "--num-warps" in err


def test_signature_forms() -> None:
    assert cli_kernels.parse_signature(None) is None
    assert cli_kernels.parse_signature("*fp32, i32") == "*fp32, i32"
    assert cli_kernels.parse_signature("x=*fp32,n=i32:16") == {"x": "*fp32", "n": "i32:16"}
    with pytest.raises(TilecError, match="mixes"):
        cli_kernels.parse_signature("x=*fp32,i32")


# ---------------------------------------------------------------- errors

def test_internal_error_exit_status(capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(args: Any) -> int:
        raise RuntimeError("something broke")
    monkeypatch.setattr(cli, "cmd_targets", boom)
    code, _, err = run_cli(capsys, "targets")
    assert code == 2
    assert "internal error" in err and "something broke" in err


def test_compiler_bug_error_exit_status(capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from tilec.errors import CompilerBugError

    def boom(args: Any) -> int:
        raise CompilerBugError("step 'x' failed", "/tmp/repro.mlir")
    monkeypatch.setattr(cli, "cmd_targets", boom)
    code, _, err = run_cli(capsys, "targets")
    assert code == 2 and "internal compiler error" in err and "/tmp/repro.mlir" in err


# ---------------------------------------------------------------- opt

def test_split_pipeline() -> None:
    assert cli_opt.split_pipeline("a,b{x=1,y=2},func.func(c,d),e") == \
        ["a", "b{x=1,y=2}", "func.func(c,d)", "e"]
    assert cli_opt.split_pipeline(" a , ,b ") == ["a", "b"]


def test_opt_runs_passes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "opt", ROOT / "tests/lit/convert-tile-to-cpu/saxpy.mlir", "--pass",
                             "tile-verify,canonicalize,tile-dce,convert-tile-to-cpu")
    assert code == 0, err
    assert "llvm.intr.masked.load" in out and "tile." not in out


def test_opt_unknown_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "opt", ROOT / "tests/lit/convert-tile-to-cpu/saxpy.mlir", "--pass",
                           "tile-verify,tile-nope")
    assert code == 1
    assert "tile-nope" in err and "tilec passes:" in err and "tile-dce" in err


def test_cache_command_shows_and_clears(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    import tilec
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "c"))
    src = tmp_path / "k.py"
    src.write_text(textwrap.dedent("""
        import tilec, tilec.language as tl
        @tilec.kernel
        def inc(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        import k  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    x = np.zeros(8, np.float32)
    tuned = tilec.autotune([tilec.Config({"BLOCK": 8}), tilec.Config({"BLOCK": 16})], key=["n"],
                           warmup=1, rep=2)(k.inc)
    tuned[(1,)](x, 8)
    assert cli.main(["cache"]) == 0
    out = capsys.readouterr().out
    assert "compiled kernels: 2" in out and "autotune results: 1" in out
    assert cli.main(["cache", "--clear"]) == 0
    assert cli.main(["cache"]) == 0
    out = capsys.readouterr().out
    assert "compiled kernels: 0" in out and "autotune results: 0" in out


def test_signature_value_spelling_is_not_a_name() -> None:
    assert cli_kernels.parse_signature("*fp32,i32=1") == "*fp32,i32=1"
    assert cli_kernels.parse_signature("x=*fp32, n=i32=1") == {"x": "*fp32", "n": "i32=1"}
    with pytest.raises(TilecError, match="mixes"):
        cli_kernels.parse_signature("x=*fp32,i32")


def test_num_stages_is_accepted_and_explained(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["ir", "--help"])
    out = capsys.readouterr().out
    assert "--num-stages" in out and "pipeliner" in out
    code, out, err = run_cli(capsys, "ir", EXAMPLES / "kernels_annotated.py", "--target", "cpu",
                             "--kernel", "relu", "--num-stages", "2", "--stage", "tile-opt")
    assert code == 0, err
    assert "func.func" in out
