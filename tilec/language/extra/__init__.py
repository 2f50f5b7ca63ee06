"""`tl.extra`: Triton's vendor namespaces (`tl.extra.cuda.libdevice`,
`tl.extra.hip.libdevice`), mapped to tilec's portable functions."""
from tilec.language.extra import cuda, hip  # noqa: F401
from tilec.language.extra.cuda import libdevice  # noqa: F401  (Triton's tl.extra.libdevice)
