"""Read a small regular file without ever blocking or reading without end.

What a linted repository names (an environment's ``pyvenv.cfg`` and ``.pth`` files, a
cache entry, a file a cached result consulted) may be a FIFO, a device or a huge file:
the file is opened non-blocking and read only when its descriptor says it is a regular
file within the limit.
"""

from __future__ import annotations

import os
import stat


def read_small(path: str, limit: int, follow: bool = True) -> bytes | None:
    """The bytes of the regular file at ``path``, or None for anything else (missing,
    unreadable, not a regular file, over ``limit`` bytes); ``follow=False`` refuses a
    symbolic link too."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        with os.fdopen(fd, "rb") as handle:
            fd = -1  # the handle closes it now
            data = handle.read(limit + 1)
        return data if len(data) <= limit else None  # grew while read
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)
