"""The GPU's SM clock, power and temperature while benchmarks run: nvidia-smi
samples them every 50 ms into a file, and each timed window (a name and its
start and end on this host's clock) gets the mean clock and power of the
samples inside it.  Under the card's power cap the clock follows the work, so
two kernels' times compare only with their clocks beside them.

    with ClockLog() as log:
        t0 = time.time(); ...; log.window("tilec", t0, time.time())
    log.summary()   # {name: {"mhz": ..., "watts": ..., "max_temp_c": ..., "samples": n}}
"""
from __future__ import annotations

import datetime
import os
import subprocess
import tempfile
import time
from typing import Any, Callable


class ClockLog:
    """Samples nvidia-smi while it is entered; `window()` labels time spans."""

    def __init__(self, period_ms: int = 50) -> None:
        self.period_ms = period_ms
        self.windows: list[tuple[str, float, float]] = []
        self.samples: list[tuple[float, float, float, float]] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._path = os.path.join(tempfile.mkdtemp(), "smi.csv")

    def __enter__(self) -> "ClockLog":
        try:
            self._proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu",
                 "--format=csv,noheader,nounits", "-lms", str(self.period_ms), "-f", self._path])
        except OSError:
            self._proc = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is None:
            return
        time.sleep(0.2)
        self._proc.terminate()
        self._proc.wait()
        self.samples = _read(self._path)

    def window(self, name: str, t0: float, t1: float) -> None:
        self.windows.append((name, t0, t1))

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per window name: the mean SM clock (MHz) and power (W), the highest
        temperature, the number of samples, over all windows of that name."""
        out: dict[str, dict[str, Any]] = {}
        for name in dict.fromkeys(w[0] for w in self.windows):
            got = [s for n, t0, t1 in self.windows if n == name
                   for s in self.samples if t0 <= s[0] <= t1]
            if got:
                out[name] = {"mhz": round(sum(s[1] for s in got) / len(got)),
                             "watts": round(sum(s[2] for s in got) / len(got), 1),
                             "max_temp_c": max(s[3] for s in got), "samples": len(got)}
        return out


def alternated(sides: dict[str, Callable[[], None]], rounds: int, flops: float,
               do_bench: Callable[..., float], label: str = "") -> dict[str, dict[str, Any]]:
    """Time every side in alternated rounds (ABC CBA ...: a drifting clock
    hits each alike) with do_bench's median; each side's rate (TFLOP/s of
    `flops` per call, the median over rounds) with its mean SM clock and power,
    each printed as a line after `label`."""
    import statistics
    times: dict[str, list[float]] = {s: [] for s in sides}
    order = list(sides)
    with ClockLog() as clock:
        for rnd in range(rounds):
            for s in (order if rnd % 2 == 0 else order[::-1]):
                t0 = time.time()
                times[s].append(do_bench(sides[s], warmup=10, rep=100, return_mode="median"))
                clock.window(s, t0, time.time())
    clocks = clock.summary()
    out = {s: {"tflops": round(flops / statistics.median(ts) / 1e9, 1), **clocks.get(s, {})}
           for s, ts in times.items()}
    for s, r in out.items():
        print(f"{label}{s:16} {r['tflops']:8.1f} TFLOP/s  {r.get('mhz', '?')} MHz  "
              f"{r.get('watts', '?')} W", flush=True)
    return out


def _read(path: str) -> list[tuple[float, float, float, float]]:
    # nvidia-smi's timestamps are this host's local time, as strptime reads them.
    samples: list[tuple[float, float, float, float]] = []
    if not os.path.exists(path):
        return samples
    for line in open(path):
        f = [x.strip() for x in line.split(",")]
        try:
            ts = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((ts, float(f[1]), float(f[2]), float(f[3])))
        except (ValueError, IndexError):
            continue
    return samples
