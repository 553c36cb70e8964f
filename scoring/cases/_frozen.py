"""Immutable JSON values: the read-only mapping a case's free-form fields are held in."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Generic, TypeAlias, TypeVar

import attrs

V = TypeVar("V")


@attrs.frozen(eq=False)
class FrozenMap(Mapping[str, V], Generic[V]):
    """A read-only mapping kept as a tuple of pairs, in the order the file gave them.

    Equality and hashing ignore order, as for a dict.
    """

    pairs: tuple[tuple[str, V], ...]
    """The entries, in file order."""

    @classmethod
    def of(cls, mapping: Mapping[str, V]) -> FrozenMap[V]:
        """Copy a mapping."""
        return cls(tuple(mapping.items()))

    def __getitem__(self, key: str) -> V:
        for k, v in self.pairs:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return dict(self.pairs) == dict(other.items())

    def __hash__(self) -> int:
        return hash(frozenset(self.pairs))

    def __repr__(self) -> str:
        return f"FrozenMap({dict(self.pairs)!r})"


JsonValue: TypeAlias = "str | int | float | bool | tuple[JsonValue, ...] | FrozenMap[JsonValue]"
"""An expected argument value: JSON arrays become tuples, objects FrozenMaps."""


def freeze(value: object) -> JsonValue:
    """Turn decoded JSON (lists, dicts) into immutable ``JsonValue``s."""
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return FrozenMap(tuple((str(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"not an expected-argument value: {value!r}")


def thaw(value: JsonValue) -> object:
    """The plain JSON form of a frozen value (tuples to lists, FrozenMaps to dicts)."""
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    if isinstance(value, FrozenMap):
        return {k: thaw(v) for k, v in value.pairs}
    return value
