"""`tl.extra.cuda`: `libdevice` (the same portable functions on every target)."""
from tilec.language.extra.cuda import libdevice  # noqa: F401
