"""How the command line shows a `TilecError`."""
from __future__ import annotations

import re

from tilec.errors import TilecError


def error_text(e: TilecError) -> str:
    """The message as shown: located messages as they are, others after 'error: '."""
    text = str(e)
    if e.loc is not None or text.startswith("error:") or re.match(r"\S+:\d+:\d+: error: ", text):
        return text
    return f"error: {text}"
