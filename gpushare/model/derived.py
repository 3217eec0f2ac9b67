"""Facts derived from a validated stack, computed once per stack object.

A `StackConfig` is frozen, so whatever is derived from it stays true for as long as the object lives; but it holds
dicts (catalog entries), so it cannot key a `functools.cache`. `once_per_stack` keys on the object itself and forgets
the value when the stack is garbage-collected.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import TypeVar

from gpushare.model.stack import StackConfig

T = TypeVar("T")


def once_per_stack(derive: Callable[[StackConfig], T]) -> Callable[[StackConfig], T]:
    """`derive(stack)`, computed on the first call for each stack object and returned as is afterwards. What it
    raises is not remembered: the next call derives again."""
    derived: dict[int, tuple[weakref.ref[StackConfig], T]] = {}

    @functools.wraps(derive)
    def cached(stack: StackConfig) -> T:
        key = id(stack)
        entry = derived.get(key)
        if entry is not None and entry[0]() is stack:
            return entry[1]
        value = derive(stack)
        derived[key] = (weakref.ref(stack, lambda _: derived.pop(key, None)), value)
        return value

    return cached
