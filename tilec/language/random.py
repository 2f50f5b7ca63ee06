"""Triton's random numbers (`tl.rand`, `tl.randn`, `tl.randint`, `tl.randint4x`,
`tl.rand4x`, `tl.randn4x`, `tl.philox`, `tl.uint_to_uniform_float`,
`tl.pair_uniform_to_normal`): counter-based Philox-4x32, the same bits as
Triton for the same seed and offsets.  Stubs only: the frontend's rules in
tilec/frontend/builtins_random.py generate the IR."""
from __future__ import annotations

from typing import Any, Callable

N_ROUNDS_DEFAULT = 10


def _stub(name: str, doc: str) -> Callable[..., Any]:
    def outside_kernel(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"tl.{name} can only be called inside a @tilec.kernel function")
    outside_kernel.__name__ = name
    outside_kernel.__doc__ = doc
    outside_kernel.__tilec_builtin__ = name  # type: ignore[attr-defined]
    return outside_kernel


randint4x = _stub("randint4x", "randint4x(seed, offset, n_rounds=10): four uint32 tiles of "
                  "Philox-4x32 output for counter (offset, 0, 0, 0) and key seed.")
randint = _stub("randint", "randint(seed, offset, n_rounds=10): the first of randint4x.")
rand = _stub("rand", "rand(seed, offset, n_rounds=10): float32 uniform in [0, 1).")
rand4x = _stub("rand4x", "rand4x(seed, offset, n_rounds=10): four float32 uniform tiles.")
randn = _stub("randn", "randn(seed, offset, n_rounds=10): float32 standard normal "
              "(Box-Muller of the first two Philox words).")
randn4x = _stub("randn4x", "randn4x(seed, offset, n_rounds=10): four float32 normal tiles.")
philox = _stub("philox", "philox(seed, c0, c1, c2, c3, n_rounds=10): Philox-4x32 of four "
               "32-bit counters with the 64-bit seed as key.")
uint_to_uniform_float = _stub("uint_to_uniform_float",
                              "A random 32-bit integer to a float32 in [0, 1).")
pair_uniform_to_normal = _stub("pair_uniform_to_normal",
                               "Box-Muller: two uniform tiles to two standard normal tiles.")

NAMES = ("randint4x", "randint", "rand", "rand4x", "randn", "randn4x", "philox",
         "uint_to_uniform_float", "pair_uniform_to_normal")
