"""tilec's fuzzer (issue 11): generated valid kernels with a NumPy reference,
mutated kernels the way users err, each case in a worker process with a
watchdog; `python -m tests.fuzz --help`."""
