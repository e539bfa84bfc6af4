"""The type walk: one hint (and everything it contains) → a :class:`~.hint_nodes._Node`.

Iterative: each mapping step is a generator that yields an ``_Ask`` for a child hint and receives
its node, driven by :func:`_run` with an explicit stack, so deeply nested ``TypedDict``\\ s never hit
the interpreter's recursion limit. A recursion guard and a per-class cache are shared by all the
hints of one function.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ForwardRef, Literal, TypeVar, Union, get_args, get_origin

from toolrt.schema._converters import (
    Converter,
    _dataclass_converter,
    _dataclass_out,
    _generic_out,
    _is_class,
    _is_pydantic_model,
    _list_converter,
    _mapping_converter,
    _model_converter,
    _model_out,
    _sequence_out,
    _to_int,
    _tuple_converter,
)
from toolrt.schema._docstrings import parse_docstring
from toolrt.schema._hint_nodes import (
    _ALL_KINDS,
    _EMPTY,
    _MAPPING_ORIGINS,
    _MISSING,
    _SEQUENCE_ORIGINS,
    _UNSUPPORTED_HINT,
    _any,
    _Ask,
    _class_hints,
    _enum,
    _evaluate,
    _explicit_requiredness,
    _Field,
    _field_hint,
    _fmt,
    _fmt_literal,
    _is_requiredness,
    _is_root_model,
    _is_typeddict,
    _json_or_missing,
    _literal,
    _merge_numbers,
    _module_ns,
    _Node,
    _Notes,
    _object,
    _one_of,
    _open_object,
    _overlap,
    _plain,
    _pydantic_field_info_type,
    _splice,
    _unenforced,
    _Unsupported,
    _Walker,
    is_injected_context,
)

__all__ = []


def _run(root: _Walker, walk: _Walk) -> _Node:
    """Drive the walk with an explicit stack: each ``yield`` of an ``_Ask`` maps a child hint."""
    stack: list[_Walker] = [root]
    value: Any = None
    while True:
        try:
            ask = stack[-1].send(value)
        except StopIteration as done:
            stack.pop()
            if not stack:
                return done.value  # type: ignore[no-any-return]
            value = done.value
            continue
        stack.append(walk.map(ask))
        value = None


@dataclass(slots=True)
class _Walk:
    """State shared by all hints of one function: recursion guard and per-class cache."""

    active: set[type] = field(default_factory=set)
    cache: dict[tuple[type, bool], _Node] = field(default_factory=dict)

    def map(self, ask: _Ask) -> _Walker:
        notes = _Notes()
        hint = self._strip(ask.hint, notes, ask)
        node = yield from self._dispatch(hint, ask)
        description = notes.description or ask.doc
        extra: dict[str, Any] = {}
        if description:
            extra["description"] = description
        if notes.title is not None:
            extra["title"] = notes.title
        if notes.examples is not _MISSING:
            extra["examples"] = notes.examples
        if extra:
            # Copy, never mutate: cached class schemas are shared between properties.
            node = dataclasses.replace(node, schema={**node.schema, **extra})
        return node

    # -- unwrapping -----------------------------------------------------------------------------

    def _strip(self, hint: Any, notes: _Notes, ask: _Ask) -> Any:
        """Peel ``Annotated`` (collecting descriptions), requiredness markers, NewType and aliases."""
        while True:
            if isinstance(hint, str | ForwardRef):
                hint = _evaluate(hint, ask)
                continue
            origin = get_origin(hint)
            if origin is typing.Annotated:
                # The first description found wins (nested Annotated flattens inner-first).
                for meta in hint.__metadata__:
                    self._note(meta, notes, ask)
                hint = hint.__origin__
                continue
            if origin is not None and _is_requiredness(origin):
                hint = get_args(hint)[0]
                continue
            supertype = getattr(hint, "__supertype__", None)
            if supertype is not None and callable(hint):  # typing.NewType
                hint = supertype
                continue
            if type(hint).__name__ == "TypeAliasType":  # PEP 695 ``type X = ...`` (3.12+)
                hint = hint.__value__
                continue
            return hint

    def _note(self, meta: Any, notes: _Notes, ask: _Ask) -> None:
        if isinstance(meta, str):
            if notes.description is None:
                notes.description = meta
            return
        if type(meta).__name__ == "Doc" and isinstance(getattr(meta, "documentation", None), str):
            if notes.description is None:  # typing_extensions.Doc (PEP 727)
                notes.description = meta.documentation
            return
        field_info = _pydantic_field_info_type()
        if field_info is not None and isinstance(meta, field_info):
            meta = typing.cast(Any, meta)
            if meta.description is not None and notes.description is None:
                notes.description = meta.description
            if meta.title is not None and notes.title is None:
                notes.title = meta.title
            if meta.examples is not None and notes.examples is _MISSING:
                notes.examples = _json_or_missing(meta.examples)
            if meta.metadata and not ask.in_model:
                raise _Unsupported(_unenforced(meta.metadata), ask.path)
            return
        if type(meta).__module__.split(".")[0] == "annotated_types" and not ask.in_model:
            raise _Unsupported(_unenforced([meta]), ask.path)

    # -- dispatch -------------------------------------------------------------------------------

    def _dispatch(self, hint: Any, ask: _Ask) -> _Walker:
        if hint is Any or hint is object or hint is _EMPTY:
            return _any()
        if hint is None or hint is type(None):
            return _Node({"type": "null"}, frozenset({"null"}), "None")
        if hint is bool:
            return _Node({"type": "boolean"}, frozenset({"boolean"}), "bool")
        if hint is int:
            return _Node({"type": "integer"}, frozenset({"integer"}), "int", to_python=_to_int)
        if hint is float:
            return _Node({"type": "number"}, frozenset({"number"}), "float")
        if hint is str:
            return _Node({"type": "string"}, frozenset({"string"}), "str")
        origin = get_origin(hint)
        args = get_args(hint)
        if origin is Literal:
            return _literal(args, hint, ask)
        if origin is Union or origin is types.UnionType:
            return (yield from self._union(hint, ask))
        if isinstance(hint, TypeVar):
            if hint.__bound__ is not None:
                return (yield _Ask(hint.__bound__, ask.path, ask.in_model, ask.ns))
            raise _Unsupported(
                f"type variable {hint.__name__} has no bound; a JSON schema needs a concrete type", ask.path
            )
        base = origin if origin is not None else hint
        if _is_class(hint):
            if issubclass(hint, enum.Enum):
                return _enum(hint, ask)
            if _is_typeddict(hint):
                return (yield from self._typeddict(hint, ask))
            if dataclasses.is_dataclass(hint):
                assert isinstance(hint, type)
                return (yield from self._dataclass(hint, ask))
            if _is_pydantic_model(hint):
                return (yield from self._model(hint, ask))
        if base in _SEQUENCE_ORIGINS or base is tuple:
            return (yield from self._array(hint, base, args, ask))
        if base in _MAPPING_ORIGINS:
            return _open_object(hint, args, ask)
        if origin is not None and (_is_typeddict(origin) or dataclasses.is_dataclass(origin)):
            raise _Unsupported(
                f"generic {_fmt(hint)} is not supported; use a concrete (non-generic) type", ask.path
            )
        if is_injected_context(hint):
            raise _Unsupported(
                f"{_fmt(hint)} is injected only into a parameter annotated exactly ToolRunContext or "
                "ToolExecution (not Optional, not nested); it is not JSON",
                ask.path,
            )
        raise _Unsupported(f"{_fmt(hint)} {_UNSUPPORTED_HINT}", ask.path)

    # -- unions ---------------------------------------------------------------------------------

    def _union(self, hint: Any, ask: _Ask) -> _Walker:
        # Literal branches merge into one Literal first: ``Literal["a"] | Literal["b"]`` is one enum.
        literal_values: list[Any] = []
        items: list[Any] = []
        for arg in get_args(hint):
            if get_origin(arg) is Literal:
                if not literal_values:
                    items.append(Literal)
                literal_values.extend(get_args(arg))
            else:
                items.append(arg)
        nodes: list[_Node] = []
        for item in items:
            if item is Literal:
                node = _literal(tuple(literal_values), _fmt_literal(literal_values), ask)
            else:
                node = yield _Ask(item, ask.path, ask.in_model, ask.ns)
            for branch in _splice(node):
                # The same plain schema twice (``X | None`` where X already allows null) is one
                # branch; the same schema with different conversions is a real overlap, caught below.
                if not any(
                    _plain(seen) and _plain(branch) and seen.schema == branch.schema for seen in nodes
                ):
                    nodes.append(branch)
        if any(node.kinds == _ALL_KINDS for node in nodes):
            # ``Any | None`` is just Any. Keeping a oneOf would match a value twice.
            # (int's 2.0 → 2 normalisation is no real conversion: Any passes 2.0 through.)
            converting = [_fmt(node.label) for node in nodes if not _plain(node)]
            if converting:
                raise _Unsupported(
                    f"{_fmt(hint)} mixes Any with {converting[0]}, which needs conversion; a value "
                    "matching Any cannot be told apart from it",
                    ask.path,
                )
            return _any()
        nodes = _merge_numbers(nodes)
        for position, first in enumerate(nodes):
            for second in nodes[position + 1 :]:
                shared = _overlap(first.kinds, second.kinds)
                if shared:
                    raise _Unsupported(
                        f"union {_fmt(hint)}: branches {_fmt(first.label)} and {_fmt(second.label)} "
                        f"can match the same JSON value (both accept JSON {shared}), but oneOf requires "
                        "exactly one branch to match, so a value both accept would be rejected; use "
                        "branches of distinct JSON types (string/number/boolean/null/array/object)",
                        ask.path,
                    )
        if len(nodes) == 1:
            return nodes[0]
        return _one_of(nodes, hint)

    # -- containers -----------------------------------------------------------------------------

    def _array(self, hint: Any, base: Any, args: tuple[Any, ...], ask: _Ask) -> _Walker:
        as_tuple = base is tuple
        if as_tuple and not args and repr(hint).endswith("[()]"):
            args = ((),)  # tuple[()], the empty fixed-length tuple, has no args to tell it apart
        if as_tuple and args:
            if len(args) != 2 or args[1] is not Ellipsis:
                raise _Unsupported(
                    f"fixed-length tuple {_fmt(hint)} cannot be expressed (the subset has no "
                    "prefixItems); use tuple[T, ...], list[T], or a TypedDict/dataclass with named fields",
                    ask.path,
                )
            args = args[:1]
        schema: dict[str, Any] = {"type": "array"}
        item: _Node | None = None
        if args:
            item = yield _Ask(args[0], ask.path + "[]", ask.in_model, ask.ns)
            schema["items"] = item.schema
        item_in = item.to_python if item is not None else None
        item_out = item.to_json if item is not None else None
        keeps_json = item is None or item.keeps_json
        if as_tuple:
            to_python: Converter | None = _tuple_converter(item_in)
        else:
            to_python = _list_converter(item_in, frozen=keeps_json) if item_in else None
        to_json = _sequence_out(item_out) if (item_out or as_tuple) else None
        return _Node(
            schema,
            frozenset({"array"}),
            hint,
            to_python=to_python,
            to_json=to_json,
            keeps_json=keeps_json and not as_tuple,
            out_classes=(list, tuple) if to_json else (),
        )

    def _enter(self, cls: type, ask: _Ask) -> None:
        if cls in self.active:
            raise _Unsupported(
                f"{_fmt(cls)} is recursive (it contains itself); the subset has no $ref, every schema "
                "is inlined, so a self-referential type cannot be expressed",
                ask.path,
            )
        self.active.add(cls)

    def _typeddict(self, cls: type, ask: _Ask) -> _Walker:
        cached = self.cache.get((cls, ask.in_model))
        if cached is not None:
            return cached
        self._enter(cls, ask)
        hints = _class_hints(cls, ask)
        doc = parse_docstring(cls.__dict__.get("__doc__"))
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
        ns = _module_ns(cls)
        fields: list[_Field] = []
        for key, hint in hints.items():
            # An explicit Required/NotRequired wins: with ``from __future__ import annotations`` on
            # Python 3.11, ``__required_keys__`` cannot see markers inside string annotations.
            required = _explicit_requiredness(hint)
            fields.append(_Field(key, key, hint, key in required_keys if required is None else required))
        node = yield from _object(fields, ask, ns, doc, additional=False, label=cls)
        pairs = list(zip(fields, node.branches, strict=True))
        converters = [(f.key, n.to_python) for f, n in pairs if n.to_python]
        keeps_json = all(n.keeps_json for _, n in pairs)
        outputs = [(f.key, n.to_json) for f, n in pairs if n.to_json]
        result = _Node(
            node.schema,
            node.kinds,
            node.label,
            to_python=_mapping_converter(converters, frozen=keeps_json) if converters else None,
            to_json=_mapping_converter(outputs, frozen=False) if outputs else None,
            keeps_json=keeps_json,
            out_classes=(dict,) if outputs else (),
        )
        self.active.discard(cls)
        self.cache[(cls, ask.in_model)] = result
        return result

    def _dataclass(self, cls: type, ask: _Ask) -> _Walker:
        cached = self.cache.get((cls, ask.in_model))
        if cached is not None:
            return cached
        self._enter(cls, ask)
        hints = _class_hints(cls, ask)
        init_fields = [f for f in dataclasses.fields(cls) if f.init]
        try:
            init_params = set(inspect.signature(cls).parameters)
        except (TypeError, ValueError):
            init_params = {f.name for f in init_fields}
        pseudo = sorted(init_params - {f.name for f in init_fields})
        if pseudo:
            raise _Unsupported(
                f"dataclass {_fmt(cls)} has init-only parameter(s) {', '.join(pseudo)} (InitVar or a "
                "custom __init__); only dataclass fields can be filled from JSON arguments",
                ask.path,
            )
        raw_doc = cls.__dict__.get("__doc__")
        if isinstance(raw_doc, str) and raw_doc.startswith(f"{cls.__name__}(") and "\n" not in raw_doc:
            raw_doc = None  # the signature text dataclasses generate when there is no docstring
        doc = parse_docstring(raw_doc)
        fields: list[_Field] = []
        for dc_field in init_fields:
            has_default = dc_field.default is not dataclasses.MISSING
            has_factory = dc_field.default_factory is not dataclasses.MISSING
            described = dc_field.metadata.get("description")
            fields.append(
                _Field(
                    dc_field.name,
                    dc_field.name,
                    hints.get(dc_field.name, Any),
                    not (has_default or has_factory),
                    dc_field.default if has_default else _MISSING,
                    described if isinstance(described, str) else None,
                )
            )
        node = yield from _object(fields, ask, _module_ns(cls), doc, additional=False, label=cls)
        plan = tuple((f.key, n.to_python) for f, n in zip(fields, node.branches, strict=True))
        # An Any-typed field may still hold an Enum/dataclass: convert it value-directed.
        out_plan = tuple(
            (f.key, n.to_json or (_generic_out if n.kinds == _ALL_KINDS else None))
            for f, n in zip(fields, node.branches, strict=True)
        )
        result = _Node(
            node.schema,
            node.kinds,
            node.label,
            to_python=_dataclass_converter(cls, plan),
            keeps_json=False,
            to_json=_dataclass_out(cls, out_plan),
            out_classes=(cls,),
        )
        self.active.discard(cls)
        self.cache[(cls, ask.in_model)] = result
        return result

    def _model(self, cls: type, ask: _Ask) -> _Walker:
        cached = self.cache.get((cls, ask.in_model))
        if cached is not None:
            return cached
        self._enter(cls, ask)
        doc = parse_docstring(cls.__dict__.get("__doc__"))
        model_fields: Mapping[str, Any] = cls.model_fields  # type: ignore[attr-defined]
        ns = _module_ns(cls)
        # Inside a model, pydantic itself converts and enforces constraints: annotated_types
        # metadata is fine there, and the nested nodes' converters are never used.
        inner = _Ask(ask.hint, ask.path, True, ns)
        if _is_root_model(cls):
            root = model_fields["root"]
            node = yield _Ask(_field_hint(root), ask.path, True, ns, root.description or doc.summary or None)
            schema = node.schema
            kinds = node.kinds
        else:
            fields: list[_Field] = []
            for name, info in model_fields.items():
                required = info.is_required()
                default = _MISSING if required or info.default_factory is not None else info.default
                fields.append(
                    _Field(
                        info.alias or name,
                        name,
                        _field_hint(info),
                        required,
                        default,
                        info.description,
                        info.title,
                        _json_or_missing(info.examples) if info.examples is not None else _MISSING,
                    )
                )
            extra = getattr(cls, "model_config", {}).get("extra")
            node = yield from _object(fields, inner, ns, doc, additional=extra == "allow", label=cls)
            schema = node.schema
            kinds = node.kinds
        result = _Node(
            schema,
            kinds,
            cls,
            to_python=_model_converter(cls),
            keeps_json=False,
            to_json=_model_out(cls),
            out_classes=(cls,),
        )
        self.active.discard(cls)
        self.cache[(cls, ask.in_model)] = result
        return result
