"""The context policy a job names, as a worker uses it: parsed once per worker process.

``JobSpec.policy`` is a shipped policy's name (``default``, ``strict``) or a path; a path is
read inside the worker's source roots like any other path a job names
(``contracts.path_safety.read_policy``: a regular file, not on ``/proc``, ``/sys`` or
``/dev``, at most ``POLICY_MAX_BYTES``, never through a symbolic link swapped in after the
check; ``PathRefused`` otherwise, non-retryable). Its errors name the file, line and key
but never a value or key the file holds (``context.policy.policy_from_text``), so a policy
path pointing at a credentials file by mistake cannot put them into a workflow failure,
its history or a log.

Parsed policies are kept per worker (YAML parsing was a third of each step): shipped ones
by name, files by their resolved path and identity (device, inode, size, modification
time), so an edited file is read again; the roots check runs on every call.
"""

from __future__ import annotations

import functools
import os
from collections import OrderedDict

from context import ContextPolicy, is_policy_name, load_policy
from contracts.path_safety import PathRoots, locate, read_policy

_Key = tuple[str, tuple[int, int, int, int]]
#: parsed policy files, newest last; bounded
_FILES: OrderedDict[_Key, ContextPolicy] = OrderedDict()
_FILES_KEPT = 32


@functools.lru_cache(maxsize=8)
def _shipped(name: str) -> ContextPolicy:
    return load_policy(name)


def job_policy(name: str, roots: PathRoots) -> ContextPolicy:
    """The policy ``name`` stands for on this worker (``PathRefused`` for a file outside
    ``roots``, ``PolicyError`` for one that is not a valid policy)."""
    if is_policy_name(name):
        return _shipped(name)
    real = str(locate(name, roots, "source", what="policy").real)
    try:
        st = os.stat(real)
    except OSError:
        st = None
    if st is not None:
        key: _Key = (real, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
        if key in _FILES:
            _FILES.move_to_end(key)
            return _FILES[key]
    policy, read = read_policy(name, roots)
    if read is not None:
        _FILES[(real, (read.st_dev, read.st_ino, read.st_size, read.st_mtime_ns))] = policy
        while len(_FILES) > _FILES_KEPT:
            _FILES.popitem(last=False)
    return policy


__all__ = ["job_policy"]
