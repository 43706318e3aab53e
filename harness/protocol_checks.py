"""Whether an object has the members of a runtime-checkable protocol, decided once per class.

`isinstance(obj, SomeProtocol)` on Python 3.11 collects the protocol's members again (walking
its classes) and looks each one up on `obj`, at every call: tens of microseconds for a
protocol of many members, paid several times a turn (does this channel draft, repeat its
typing, find what it posted?). `conforms` answers what `isinstance` answered for the first
object of the same class, remembered: right wherever all instances of a class have the same
members, as every channel and provider here does (a class whose instances differ, one given a
protocol's method on the instance alone, must be checked with `isinstance`).
"""

from __future__ import annotations

from typing import Any

_KNOWN: dict[tuple[type, Any], bool] = {}


def conforms(obj: object, protocol: Any) -> bool:
    """`isinstance(obj, protocol)` for a runtime-checkable `protocol`, remembered per class of
    `obj` (see the module)."""
    key = (type(obj), protocol)
    known = _KNOWN.get(key)
    if known is None:
        known = _KNOWN[key] = isinstance(obj, protocol)
    return known
