"""lit support for tilec's test suite (imported by lit.cfg.py; not a test).

A test format must be importable by name so lit can send it to its worker
processes, hence this module.
"""
import lit.formats


class ShTestWithRunLines(lit.formats.ShTest):
    """ShTest that skips `.py` files without a RUN line (helper modules)."""

    def getTestsForPath(self, testSuite, path_in_suite, litConfig, localConfig):
        for test in super().getTestsForPath(testSuite, path_in_suite, litConfig, localConfig):
            path = test.getSourcePath()
            if path.endswith(".py") and not _has_run_line(path):
                continue
            yield test


def _has_run_line(path):
    marker = "RUN" + ":"
    with open(path, encoding="utf-8", errors="replace") as f:
        return any(marker in line for line in f)
