"""Evented models: small typed state whose fields announce their changes (napari's EventedModel,
on Qt signals), so that the parts of the window observe what they share instead of reading and
writing attributes of the window.

A model declares its fields as class attributes, ``busy = Field(False)``. Reading ``model.busy``
gives the value; assigning it stores it and, when it differs from the value before, emits
``model.events.busy`` with the new value. ``update(busy=True, agent_id=3)`` sets several fields
and announces them only once all are set, so an observer of one never sees the others half done.
An observer connects ``model.events.<field>`` to a slot; Qt disconnects a QObject's slot when the
QObject is destroyed, so a closed panel is never called.

Only the thread the model lives in (the GUI thread) may write it: a worker reports through its
signals and the GUI thread turns that into a write. A write from elsewhere raises, because an
observer (a widget) would otherwise run on the wrong thread.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

from PySide6.QtCore import QObject, QThread, Signal, SignalInstance

T = TypeVar("T")


class Field(Generic[T]):
    """One field of an EventedModel: its default, and its value on each model."""

    def __init__(self, default: T) -> None:
        self.default = default
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, model: None, owner: type) -> Field[T]: ...

    @overload
    def __get__(self, model: EventedModel, owner: type) -> T: ...

    def __get__(self, model: EventedModel | None, owner: type) -> Field[T] | T:
        if model is None:
            return self
        value: T = model._values[self.name]
        return value

    def __set__(self, model: EventedModel, value: T) -> None:
        model.update(**{self.name: value})


class _Carrier(QObject):
    changed = Signal(object)


class Events:
    """One signal per field of a model: ``events.busy.connect(slot)``; each carries the new value."""

    def __init__(self, model: EventedModel, names: list[str]) -> None:
        self._carriers = {name: _Carrier(model) for name in names}

    def __getattr__(self, name: str) -> SignalInstance:
        try:
            return self._carriers[name].changed
        except KeyError:
            raise AttributeError(f"no field {name!r}") from None


class EventedModel(QObject):
    """Fields are the subclass's ``Field`` attributes; ``events.<field>`` announces each change."""

    def __init__(self, parent: QObject | None = None, **values: Any) -> None:
        super().__init__(parent)
        fields = self.fields()
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(unknown)}")
        self._values: dict[str, Any] = {name: values.get(name, field.default) for name, field in fields.items()}
        self.events = Events(self, list(fields))

    @classmethod
    def fields(cls) -> dict[str, Field[Any]]:
        found: dict[str, Field[Any]] = {}
        for klass in reversed(cls.__mro__):
            found.update((name, value) for name, value in vars(klass).items() if isinstance(value, Field))
        return found

    def update(self, **values: Any) -> None:
        """Set the fields given, then announce those whose value changed (in the order given)."""
        if QThread.currentThread() is not self.thread():
            raise RuntimeError(f"{type(self).__name__} is written only in the thread it lives in")
        unknown = sorted(set(values) - set(self._values))
        if unknown:
            raise AttributeError(f"{type(self).__name__} has no field {', '.join(unknown)}")
        changed = [name for name, value in values.items() if self._values[name] != value]
        self._values.update(values)
        for name in changed:
            getattr(self.events, name).emit(self._values[name])

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self._values.items())
        return f"{type(self).__name__}({fields})"
