"""Passes over tile IR, one per file or package (installed as tilec.passes).

Every pass module has `NAME` (its kebab-case name, as `tilec opt --pass` and
`tilec ir --print-after-all` show it) and
`run(module: ir.Module, target: Target, options: CompileOptions) -> None`.
Lowering rules are declared in rule sets keyed by (op, target feature):
see rules.py.  Analyses that change no IR live in analysis/.
"""
