"""Process-tree helpers for the sandbox tests (read from /proc)."""

from __future__ import annotations

import os


def descendants(pid: int, *, zombies: bool = True) -> list[int]:
    """Every process below ``pid``, depth first; ``zombies=False`` leaves out the dead ones
    not yet reaped."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    state, ppid = fh.read().rsplit(")", 1)[1].split()[:2]
                ppid = int(ppid)
            except (OSError, ValueError):
                continue
            if zombies or state != "Z":
                children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for kid in children.get(todo.pop(), []):
            found.append(kid)
            todo.append(kid)
    return found
