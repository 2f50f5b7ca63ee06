"""Compile options: everything besides the kernel, its specialization and the
target that changes the generated code.  Imports no MLIR (the runtime builds
cache keys from it)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from tilec.errors import TilecError


@dataclass(frozen=True)
class CompileOptions:
    """num_warps: warps per program (GPU); num_stages: software-pipeline depth of
    loops that feed `tl.dot` (read by the pipeliner; part of the key already);
    num_ctas: programs per thread-block cluster (Triton's option: only 1, the
    check is at compile time where the target is known); maxnreg: the most
    registers per thread ptxas may use (None: ptxas decides; NVIDIA only);
    debug: the debug mode (bounds-checked memory accesses, active
    `tl.device_assert`: passes/tile_debug_checks.py), from
    `@tilec.kernel(debug=True)` or `TILEC_DEBUG=1`.

    Triton's AMD options (its HIPOptions; tutorial 06 passes both at launch
    on HIP), read by the AMD back end only (targets/amd/backend.py) and of no
    effect on the CPU and NVIDIA targets: waves_per_eu: the occupancy the AMD
    compiler should aim at (LLVM's "amdgpu-waves-per-eu" minimum; 0: the
    compiler decides); allow_flush_denorm: f32 denormals may be flushed to
    zero ("denormal-fp-math-f32"="preserve-sign"; False: IEEE denormals, as
    without it).  Flushing is a permission: a target that keeps denormals
    gives the exact IEEE results."""

    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: int | None = None
    debug: bool = False
    waves_per_eu: int = 0
    allow_flush_denorm: bool = False

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "maxnreg" and v is None:
                continue
            if f.name in ("debug", "allow_flush_denorm"):
                if not isinstance(v, bool):
                    raise TilecError(f"{f.name} must be True or False, got {v!r}")
                continue
            if f.name == "waves_per_eu":
                if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                    raise TilecError(f"waves_per_eu must be an int >= 0 (0: the compiler "
                                     f"decides), got {v!r}")
                continue
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise TilecError(f"{f.name} must be a positive int, got {v!r}")

    @classmethod
    def from_launch(cls, options: Mapping[str, Any]) -> CompileOptions:
        """From a launch's keyword options (`num_warps=8, num_stages=3`); others are ignored
        (`debug` is the kernel's, not the launch's)."""
        names = {f.name for f in fields(cls)} - {"debug"}
        given: dict[str, Any] = {
            k: int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
            for k, v in options.items() if k in names}
        return cls(**given)

    def as_dict(self) -> dict[str, Any]:
        """The options; those added after the first release only when not at
        their default, so existing cache keys and manifests stay the same."""
        d = asdict(self)
        for k, default in _LATER_DEFAULTS.items():
            if d[k] == default:
                del d[k]
        return d

    def hash(self) -> str:
        """A stable hash (the same in every process and Python version)."""
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()[:16]


_LATER_DEFAULTS: dict[str, Any] = {"num_ctas": 1, "maxnreg": None, "debug": False,
                                   "waves_per_eu": 0, "allow_flush_denorm": False}
