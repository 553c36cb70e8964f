"""Typed access to decoded JSON objects: every refusal names the file and the field."""

from __future__ import annotations

import enum
from typing import Any, TypeVar

from evaltape.recorder import VERSION

from ._records import RecordError

E = TypeVar("E", bound=enum.Enum)


class Fields:
    """Typed access to one decoded JSON object; every refusal names ``where`` and the field."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected a JSON object, got {type_name(data)}")
        self.data: dict[str, Any] = data
        self.where = where

    def _get(self, name: str, types: tuple[type, ...], what: str, optional: bool) -> Any:
        if name not in self.data:
            raise RecordError(f'{self.where}: missing field "{name}"')
        value = self.data[name]
        if value is None and optional:
            return None
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            got = type_name(value)
            raise RecordError(f'{self.where}: field "{name}": expected {what}, got {got}')
        return value

    def text(self, name: str) -> str:
        """A string field."""
        value: str = self._get(name, (str,), "a string", False)
        return value

    def whole(self, name: str) -> int:
        """A whole-number field."""
        value: int = self._get(name, (int,), "a whole number", False)
        return value

    def number(self, name: str, *, optional: bool = False) -> float | None:
        """A number field (``None`` allowed when ``optional``)."""
        value = self._get(name, (int, float), "a number", optional)
        return None if value is None else float(value)

    def flag(self, name: str) -> bool:
        """A boolean field."""
        value: bool = self._get(name, (bool,), "true or false", False)
        return value

    def texts(self, name: str) -> tuple[str, ...]:
        """An array of strings."""
        items: list[Any] = self._get(name, (list,), "an array", False)
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise RecordError(
                    f'{self.where}: field "{name}[{i}]": expected a string, got {type_name(item)}'
                )
        return tuple(items)

    def array(self, name: str) -> list[Any]:
        """An array, items unchecked."""
        items: list[Any] = self._get(name, (list,), "an array", False)
        return items

    def member(self, name: str, cls: type[E], *, optional: bool = False) -> E | None:
        """A string naming a member of ``cls``."""
        value = self._get(name, (str,), "a string", optional)
        if value is None:
            return None
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(str(m.value) for m in cls)
            raise RecordError(
                f'{self.where}: field "{name}": expected one of {choices}, got "{value}"'
            ) from None

    def schema(self, newest: int, what: str) -> None:
        """Refuse a missing, malformed or newer schema version."""
        version = self.whole("schema")
        if version > newest:
            raise RecordError(
                f"{self.where}: {what} schema {version} is newer than this evaltape "
                f"({VERSION}) reads (up to {newest}); upgrade evaltape"
            )
        if version < 1:
            raise RecordError(f'{self.where}: field "schema": must be at least 1, got {version}')


def type_name(value: object) -> str:
    if value is None:
        return "null"
    names: dict[type, str] = {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }
    return names.get(type(value), "value")
