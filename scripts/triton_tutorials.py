"""Run Triton's tutorials 01-08 through tilec, changed only in their import lines.

Sources.  This script cannot fetch them (the machines have no network).  Put
Triton's `python/tutorials/0[1-8]-*.py` files, byte-exact, into
`.carry/tutorials/src/` (git-ignored, never committed; `.carry/tutorials/
SOURCES` names the Triton commit of each file).

    python scripts/triton_tutorials.py port .carry/tutorials/src .carry/tutorials/port
        copy each tutorial with only its import lines rewritten (the mapping is
        printed: `import triton` -> `import tilec as triton`, `import
        triton.language as tl` -> `import tilec.language as tl`, `from triton.X
        import Y` -> `from tilec.X import Y`, ...), and print a unified diff of
        each, checked to change import lines only
    python scripts/triton_tutorials.py run .carry/tutorials/port --mode record|run
            [--only 01,03] [--out results.json] [--cache DIR] [--records DIR]
            [--timeout 300] [--no-compiler]
        run each ported tutorial as its own child (`python FILE`, cwd a scratch
        folder next to --out, PYTHONPATH the repository, MPLBACKEND=Agg, a
        timeout each); capture rc, wall time and the tails of stdout/stderr;
        print one line per tutorial and write them all to --out.  Both modes set
        TILEC_RECORD to RECORDS/<tutorial>.jsonl (default RECORDS: a `records`
        folder next to --out), so one run on a machine without the compiler
        both runs what the cache holds and records what it misses; `record`
        differs only in starting each record file afresh.  --cache sets
        TILEC_CACHE_DIR for the children.  --no-compiler sets
        TILEC_NO_COMPILER=1 (this machine then acts as the compiler-less one:
        how the loop is tested here).

The loop on a GPU machine without the compiler (the H200):
    device:  run PORT --mode record --cache .carry/tut/cache --out .carry/tut/r1.json
    here:    for f in .carry/tut/records/*.jsonl; do
                 python -m tilec replay $f --cache .carry/tut/cache --sources PORT; done
    device:  run PORT --mode run --cache .carry/tut/cache --out .carry/tut/r2.json
    (again while the run records new misses: later code paths appear only with
    real results).
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = re.compile(r"^0[1-8]-[\w.-]+\.py$")

# (pattern, replacement) on whole lines; the first that matches is used.
MAPPING: list[tuple[str, str]] = [
    (r"^(\s*)import triton\s*$", r"\1import tilec as triton"),
    (r"^(\s*)import triton\.([\w.]+) as (\w+)\s*$", r"\1import tilec.\2 as \3"),
    (r"^(\s*)from triton\.([\w.]+) import (.+)$", r"\1from tilec.\2 import \3"),
    (r"^(\s*)from triton import (.+)$", r"\1from tilec import \2"),
]
IMPORT_LINE = re.compile(r"^\s*(import|from)\s+\S")


def port_text(text: str) -> tuple[str, list[str]]:
    """The tutorial with its import lines mapped; also the triton imports left as
    they were (no mapping fits them)."""
    out, unmapped = [], []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        end = line[len(body):]
        for pat, rep in MAPPING:
            new, n = re.subn(pat, rep, body)
            if n:
                body = new
                break
        else:
            if re.match(r"^\s*(import|from)\s+triton\b", body):
                unmapped.append(body.strip())
        out.append(body + end)
    return "".join(out), unmapped


def cmd_port(args: argparse.Namespace) -> int:
    src, dst = Path(args.src), Path(args.out)
    files = sorted(p for p in src.iterdir() if TUTORIAL.match(p.name))
    if not files:
        print(f"no tutorials (0[1-8]-*.py) in {src}", file=sys.stderr)
        return 1
    dst.mkdir(parents=True, exist_ok=True)
    print("import mapping (regular expressions on whole lines):")
    for pat, rep in MAPPING:
        print(f"  {pat}  ->  {rep}")
    bad = 0
    for f in files:
        text = f.read_text(encoding="utf-8")
        ported, unmapped = port_text(text)
        (dst / f.name).write_text(ported, encoding="utf-8")
        diff = list(difflib.unified_diff(text.splitlines(), ported.splitlines(),
                                         f"a/{f.name}", f"b/{f.name}", lineterm="", n=0))
        changed = [d for d in diff if d[:1] in "+-" and not d.startswith(("+++", "---"))]
        non_import = [d for d in changed if not IMPORT_LINE.match(d[1:])]
        print(f"\n{f.name}: {sum(d.startswith('-') for d in changed)} lines changed, "
              f"{'all of them import lines' if not non_import else 'NOT ONLY IMPORT LINES'}")
        for d in diff:
            print("  " + d)
        for u in unmapped:
            print(f"  note: left as it was (no mapping): {u}")
        bad += bool(non_import)
    return 1 if bad else 0


def _tail(text: str, n: int = 4000) -> str:
    return text if len(text) <= n else "..." + text[-n:]


def _count_lines(path: Path) -> int:
    try:
        return sum(1 for line in path.read_text().splitlines() if line.strip())
    except OSError:
        return 0


def run_one(file: Path, mode: str, work: Path, records: Path, timeout: float,
            cache: str | None, no_compiler: bool) -> dict[str, object]:
    """Run one ported tutorial as a child; its result row."""
    work.mkdir(parents=True, exist_ok=True)
    records.mkdir(parents=True, exist_ok=True)
    rec = records / (file.stem + ".jsonl")
    before = _count_lines(rec) if mode == "run" else 0
    if mode == "record" and rec.exists():
        rec.unlink()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]]
                                                      if env.get("PYTHONPATH") else []))
    env["TILEC_RECORD"] = str(rec)
    env.setdefault("MPLBACKEND", "Agg")
    if cache:
        env["TILEC_CACHE_DIR"] = str(Path(cache).resolve())
    if no_compiler:
        env["TILEC_NO_COMPILER"] = "1"
    t0 = time.monotonic()
    try:
        p = subprocess.run([sys.executable, str(file.resolve())], cwd=work, env=env,
                           capture_output=True, text=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = -9
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = (e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes)
               else (e.stderr or "")) + f"\n[timed out after {timeout:.0f} s]"
    wall = time.monotonic() - t0
    # the error (or last message), not record mode's exit warning
    last = [ln for ln in err.strip().splitlines()
            if ln.strip() and not ln.startswith("tilec: recording ")]
    return {"tutorial": file.stem, "mode": mode, "rc": rc, "wall_s": round(wall, 1),
            "new_records": _count_lines(rec) - before, "records_file": str(rec),
            "last_stderr_line": last[-1] if last else "",
            "stdout_tail": _tail(out), "stderr_tail": _tail(err)}


def cmd_run(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    files = sorted(p for p in folder.iterdir() if TUTORIAL.match(p.name))
    if args.only:
        wanted = {w.strip() for w in args.only.split(",") if w.strip()}
        files = [f for f in files if f.name[:2] in wanted or f.stem in wanted]
    if not files:
        print(f"no tutorials to run in {folder}", file=sys.stderr)
        return 1
    out = Path(args.out).resolve()
    records = Path(args.records).resolve() if args.records else out.parent / "records"
    work_root = out.parent / "work"
    rows = []
    for f in files:
        row = run_one(f, args.mode, work_root / f.stem, records, args.timeout, args.cache,
                      args.no_compiler)
        rows.append(row)
        print(f"{row['tutorial']:28} rc={row['rc']:<4} {row['wall_s']:7.1f} s  "
              f"new records {row['new_records']:<4} {str(row['last_stderr_line'])[:90]}",
              flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(rows, indent=1) + "\n")   # kept after each tutorial
    print(f"\n{'tutorial':28} {'rc':>4} {'wall s':>8} {'records':>8}")
    for row in rows:
        print(f"{row['tutorial']:28} {row['rc']:>4} {row['wall_s']:>8} {row['new_records']:>8}")
    print(f"results: {out}; records: {records}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    po = sub.add_parser("port", help="copy tutorials with only their import lines changed")
    po.add_argument("src")
    po.add_argument("out")
    po.set_defaults(fn=cmd_port)
    r = sub.add_parser("run", help="run ported tutorials, each as its own child")
    r.add_argument("dir")
    r.add_argument("--mode", choices=("record", "run"), default="run")
    r.add_argument("--only", help="comma-separated numbers or names (01,03)")
    r.add_argument("--out", default="tutorial-results.json")
    r.add_argument("--cache", help="TILEC_CACHE_DIR for the children")
    r.add_argument("--records", help="folder of the record files (default: next to --out)")
    r.add_argument("--timeout", type=float, default=300.0, help="seconds per tutorial")
    r.add_argument("--no-compiler", action="store_true",
                   help="TILEC_NO_COMPILER=1: act as the machine without the compiler")
    r.set_defaults(fn=cmd_run)
    args = p.parse_args(argv)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
