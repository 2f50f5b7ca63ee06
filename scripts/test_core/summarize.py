"""Summarize a results.jsonl of the test_core runner: counts and failure groups."""
import collections, json, re, sys

def norm(reason):
    lines = [l for l in reason.splitlines() if l.strip()]
    err = [l for l in lines if l.strip().startswith("error:")]
    msg = err[0].strip() if err else (lines[0] if lines else "")
    msg = re.sub(r"/tmp/\S+", "<path>", msg)
    msg = re.sub(r"0x[0-9a-f]+", "<hex>", msg)
    msg = re.sub(r"'[^']*'", "'…'", msg)
    msg = re.sub(r"\b\d+(\.\d+)?(e[-+]?\d+)?\b", "N", msg)
    return msg[:160]

def main(path, out=None):
    rows = [json.loads(l) for l in open(path)]
    meta = rows[0]; rows = [r for r in rows[1:] if "id" in r]
    c = collections.Counter(r["outcome"] for r in rows)
    groups = collections.defaultdict(list)
    for r in rows:
        if r["outcome"] == "failed":
            groups[(r["id"].split("::")[1].split("[")[0], norm(r["reason"]))].append(r["id"])
    bytest = collections.defaultdict(lambda: collections.Counter())
    for r in rows:
        bytest[r["id"].split("::")[1].split("[")[0]][r["outcome"]] += 1
    p, f = c["passed"], c["failed"]
    print(f"passed {p} failed {f} skipped {c['skipped']}  pass rate {100*p/max(p+f,1):.1f}% of {p+f} run")
    for (t, m), ids in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(ids):5d}  {t}: {m}")
    if out:
        json.dump({"placeholders": meta.get("placeholders"), "passed": p, "failed": f, "skipped": c["skipped"],
                   "by_test": {k: dict(v) for k, v in sorted(bytest.items())},
                   "failure_groups": [{"test": t, "reason": m, "cases": len(ids), "example": ids[0]}
                                      for (t, m), ids in sorted(groups.items(), key=lambda kv: -len(kv[1]))]},
                  open(out, "w"), indent=1)

main(*sys.argv[1:])
