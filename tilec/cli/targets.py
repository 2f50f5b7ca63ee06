"""`tilec targets`: the target table."""
from __future__ import annotations

import argparse


def cmd_targets(args: argparse.Namespace) -> int:
    from tilec.targets import TARGETS
    print(f"{'name':8} {'vendor':7} {'chip':8} {'warp':>4} {'vec B':>5} {'shared':>7} "
          "features")
    for t in TARGETS.values():
        print(f"{t.name:8} {t.vendor:7} {t.chip:8} {t.warp_size:>4} {t.vector_bytes:>5} "
              f"{t.shared_bytes:>7} {','.join(sorted(f.value for f in t.features))}")
    return 0
