"""Remembering what was computed from an immutable object, by the object's identity.

A long conversation is sent again on every model call, message by message, and most of the
messages are the very objects of the previous call (the session store keeps its parsed lines,
pruning returns unchanged messages as they are). Converting, pruning and measuring each one
once, instead of once per call, keeps a call's cost from growing with the conversation.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    """`compute(obj)` remembered for the last `size` objects. Thread-safe.

    Only for immutable objects and pure `compute`: a remembered value is returned for the same
    object however long ago it was computed. The memo holds each object it remembers, so its
    id cannot be reused by another object while the entry lives. Values must not be mutated.
    """

    def __init__(self, compute: Callable[[K], V], size: int = 50_000) -> None:
        self._compute = compute
        self._size = size
        self._items: OrderedDict[int, tuple[K, V]] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, obj: K) -> V:
        item = self._items.get(id(obj))
        if item is not None and item[0] is obj:
            return item[1]
        value = self._compute(obj)
        with self._lock:
            self._items[id(obj)] = (obj, value)
            if len(self._items) > self._size:
                self._items.popitem(last=False)
        return value
