"""Analyses over tile IR that passes and rules query; they change no IR.

axis_info: contiguity, divisibility and constancy of integer tiles (Triton's
AxisInfo): the driver, over its lattice (axis_lattice) and its per-op transfer
rules (axis_transfer); layouts: the layout attributes and how a layout
distributes a tile over lanes, warps and registers."""
