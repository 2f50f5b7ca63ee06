#!/usr/bin/env bash
# The CPU stress test (tests/stress_cpu.py: a few hundred distinct kernels
# compiled and launched in one process, guard bands around every array) with
# the C launcher (tilec/runtime/_launch.c) built with AddressSanitizer and
# ASan's allocator preloaded into Python, so a double free, a free of a bad
# pointer or an overflow in the launcher aborts with a report.
#
#   bash scripts/sanitize_cpu.sh [--cases N] [--seed S]
#
# A fresh cache directory keeps the sanitized launcher apart from the normal
# one.  The kernels themselves are LLVM-generated (no C to instrument); their
# writes are checked by the stress test's guard bands.  valgrind cannot run
# them: the host code uses AVX-512, which valgrind 3.19 does not decode.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
ASAN_LIB=$(cc -print-file-name=libasan.so)
CACHE=$(mktemp -d /tmp/tilec-asan-XXXXXX)
trap 'rm -rf "$CACHE"' EXIT
export TILEC_CACHE_DIR="$CACHE"
export CC="cc -fsanitize=address -fno-omit-frame-pointer -g"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1
export PYTHONMALLOC=malloc
# libstdc++ too: ASan intercepts __cxa_throw only when it is loaded at start (MLIR throws).
export LD_PRELOAD="$ASAN_LIB $(cc -print-file-name=libstdc++.so.6)"
"$PY" -c "from tilec.runtime import native; native.launch_module(); print('launcher:', native.status())"
"$PY" tests/stress_cpu.py --require-native "$@"
