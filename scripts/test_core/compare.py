"""Pass rates of two test_core runs over the cases both reached:
`compare.py before.jsonl after.jsonl`."""
import json
import sys


def load(path):
    return {r["id"]: r for r in map(json.loads, open(path)) if "id" in r}


def main(before_path: str, after_path: str) -> None:
    before, after = load(before_path), load(after_path)
    common = sorted(set(before) & set(after))
    print(f"{len(common)} cases in both runs")
    for name, run in (("before", before), ("after", after)):
        counts = {"passed": 0, "failed": 0, "skipped": 0}
        for case in common:
            counts[run[case]["outcome"]] += 1
        ran = counts["passed"] + counts["failed"]
        print(f"{name}: {counts}  pass rate {100 * counts['passed'] / max(ran, 1):.1f}%")


if __name__ == "__main__":
    main(*sys.argv[1:3])
