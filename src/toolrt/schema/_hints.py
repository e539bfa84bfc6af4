"""Python type hints and docstrings → the raw JSON-Schema subset, plus argument/return converters.

This is the engine behind :func:`toolrt.tool`. It turns a function signature into

* a **parameters** schema (``{"type": "object", "properties": ..., "required": ...,
  "additionalProperties": false}``) and an **output** schema, both inside the enforced subset
  (``type``/``oneOf``/``properties``/``required``/``additionalProperties``/``items``/``enum``/``const``
  plus ``description``/``title``/``default``/``examples``; no ``$ref``, everything inlined);
* a **description** from the docstring summary, with per-parameter descriptions from ``Args:``;
* per-parameter **converters** (frozen JSON → ``Enum`` members, dataclass and pydantic instances,
  tuples) and a **return converter** (instances → JSON data).

>>> def add(a: int, b: int = 0) -> int:
...     '''Add two integers.
...
...     Args:
...         a: The first addend.
...     '''
...     return a + b
>>> parameters, output, description = schema_from_function(add)
>>> parameters["properties"]["a"], parameters["required"], output, description
({'type': 'integer', 'description': 'The first addend.'}, ['a'], {'type': 'integer'}, 'Add two integers.')

Why so many loud failures: the subset's ``oneOf`` means *exactly one* branch matches, and
``additionalProperties`` is boolean-only. A hint that cannot be expressed faithfully (``str |
Literal["a"]`` overlaps, ``dict[str, int]`` would leave values unchecked, a recursive type would need
``$ref``) raises ``TypeError`` when the tool is defined, naming the parameter, instead of producing a
schema that silently accepts the wrong values or rejects the right ones.

The engine is split by concept: :mod:`.docstrings` (descriptions), :mod:`.hint_walk` (the iterative
type walk), :mod:`.hint_nodes` (the schema nodes it builds and the checks that refuse what the
subset cannot express) and :mod:`.converters` (JSON ↔ Python values); this module is the entry
point and owns the per-function results. Nothing here imports the rest of toolrt: a parameter is
recognised as the injected context by comparing its annotation with ``ToolRunContext`` /
``ToolExecution`` *only if* ``toolrt._execution`` is already imported (it must be, for such an
annotation to exist).
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, get_args, get_origin

from toolrt._json import thaw
from toolrt.schema._converters import Converter, _generic_out
from toolrt.schema._docstrings import Docstring, parse_docstring
from toolrt.schema._hint_nodes import (
    _ALL_KINDS,
    _EMPTY,
    _MISSING,
    _Ask,
    _evaluate,
    _fmt,
    _json_or_missing,
    _Node,
    _Unsupported,
    is_injected_context,
)
from toolrt.schema._hint_walk import _run, _Walk

__all__ = [
    "Converter",
    "Docstring",
    "FunctionSpec",
    "ParameterSpec",
    "analyze_function",
    "is_injected_context",
    "parse_docstring",
    "schema_from_function",
]


_AWAITABLE_ORIGINS: tuple[Any, ...] = (collections.abc.Awaitable, collections.abc.Coroutine)


@dataclass(frozen=True, slots=True)
class ParameterSpec:
    """One parameter of the tool function and how to fill it on a call.

    ``injected`` parameters receive the run context and are not in the schema; the others are read
    from the arguments and passed through ``to_python`` (``None`` = pass the frozen JSON value as is).
    """

    name: str
    kind: inspect._ParameterKind
    injected: bool
    required: bool
    default: Any
    to_python: Converter | None


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """Everything :func:`toolrt.tool` needs from a function, computed once at decoration time.

    >>> spec = analyze_function(lambda text: text)
    >>> spec.parameters
    {'type': 'object', 'properties': {'text': {}}, 'required': ['text'], 'additionalProperties': False}
    """

    qualname: str
    description: str
    parameters: dict[str, Any]
    output: dict[str, Any]
    params: tuple[ParameterSpec, ...]
    var_keyword: str | None
    output_to_json: Converter | None


def analyze_function(
    fn: Callable[..., Any],
    *,
    is_injected: Callable[[Any], bool] = is_injected_context,
    description: str | None = None,
) -> FunctionSpec:
    """Map ``fn``'s signature, type hints and docstring to schemas and converters.

    Raises ``TypeError('@tool <qualname>: parameter "<name>": <why>')`` (or ``return value:``) for
    anything the subset cannot express faithfully.

    >>> analyze_function(lambda *items: None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    TypeError: @tool <lambda>: parameter "items": *items cannot be expressed: ...
    """
    # A functools.partial documents and names itself after the function it wraps.
    source: Any = fn.func if isinstance(fn, functools.partial) else fn
    qualname = str(getattr(source, "__qualname__", None) or getattr(type(source), "__qualname__", repr(fn)))
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as error:
        raise TypeError(f"@tool {qualname}: cannot read the signature: {error}") from None
    hints, ns = _function_hints(fn, signature, qualname)
    doc = parse_docstring(inspect.getdoc(source))
    walk = _Walk()
    properties: dict[str, Any] = {}
    required: list[str] = []
    params: list[ParameterSpec] = []
    var_keyword: str | None = None
    for parameter in signature.parameters.values():
        name = parameter.name
        where = f'@tool {qualname}: parameter "{name}"'
        hint = hints.get(name, Any)
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            raise TypeError(
                f"{where}: *{name} cannot be expressed: tool arguments are one JSON object of named "
                "properties; use a list parameter"
            )
        if is_injected(hint):
            params.append(ParameterSpec(name, parameter.kind, True, False, parameter.default, None))
            continue
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            if hint is not Any and hint is not object:
                raise TypeError(
                    f"{where}: **{name}: {_fmt(hint)} cannot be expressed: undeclared properties are "
                    "unchecked (additionalProperties is boolean-only); annotate it as Any"
                )
            var_keyword = name
            continue
        node = _map_root(walk, _Ask(hint, name, False, ns, doc.params.get(name)), where, name)
        schema = node.schema
        if parameter.default is _EMPTY:
            required.append(name)
        else:
            default = _json_or_missing(parameter.default)
            if default is not _MISSING:
                schema = {**schema, "default": default}
        properties[name] = schema
        params.append(
            ParameterSpec(
                name, parameter.kind, False, parameter.default is _EMPTY, parameter.default, node.to_python
            )
        )
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    # Closed unless **kwargs: an unexpected key comes back to the model as a validation error it can
    # fix, instead of a Python TypeError from the call.
    parameters["additionalProperties"] = var_keyword is not None
    output_hint = _unwrap_awaitable(hints.get("return", Any))
    output = _map_root(
        walk, _Ask(output_hint, "return", False, ns, doc.returns), f"@tool {qualname}: return value", "return"
    )
    output_to_json = output.to_json
    if output.kinds == _ALL_KINDS:
        output_to_json = _generic_out  # an unannotated/Any return: convert instances, keep JSON as is
    return FunctionSpec(
        qualname=qualname,
        description=doc.summary if description is None else description,
        parameters=thaw(parameters),
        output=thaw(output.schema),
        params=tuple(params),
        var_keyword=var_keyword,
        output_to_json=output_to_json,
    )


def schema_from_function(fn: Callable[..., Any]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """``(parameters_schema, output_schema, description)`` for ``fn``, as :func:`toolrt.tool` builds them.

    >>> def greet(name: str) -> str:
    ...     '''Say hello.'''
    ...     return f"hello {name}"
    >>> parameters, output, description = schema_from_function(greet)
    >>> parameters["properties"], parameters["required"], parameters["additionalProperties"]
    ({'name': {'type': 'string'}}, ['name'], False)
    >>> output, description
    ({'type': 'string'}, 'Say hello.')
    """
    spec = analyze_function(fn)
    return spec.parameters, spec.output, spec.description


def _map_root(walk: _Walk, ask: _Ask, where: str, name: str) -> _Node:
    try:
        return _run(walk.map(ask), walk)
    except _Unsupported as error:
        at = "" if error.path == name else f" (at {error.path})"
        raise TypeError(f"{where}: {error.why}{at}") from None


def _unwrap_awaitable(hint: Any) -> Any:
    origin = get_origin(hint)
    if origin in _AWAITABLE_ORIGINS:
        args = get_args(hint)
        return args[-1] if args else Any
    return hint


def _function_hints(
    fn: Callable[..., Any], signature: inspect.Signature, qualname: str
) -> tuple[dict[str, Any], Mapping[str, Any]]:
    """Resolved annotations by parameter name (plus ``return``) and the namespace they came from."""
    target: Any = fn
    if not (inspect.isroutine(fn) or inspect.isclass(fn)) and callable(fn):
        target = getattr(fn, "func", None) or getattr(fn, "__call__", fn)  # noqa: B004 - partial / instance
    ns: Mapping[str, Any] = getattr(inspect.unwrap(target), "__globals__", {})
    try:
        resolved = typing.get_type_hints(target, include_extras=True)
    except Exception:
        resolved = None
    hints: dict[str, Any] = {}
    for name, parameter in signature.parameters.items():
        if resolved is not None and name in resolved:
            hints[name] = resolved[name]
        elif parameter.annotation is not _EMPTY:
            hints[name] = _resolve_one(parameter.annotation, ns, f'@tool {qualname}: parameter "{name}"')
    if resolved is not None and "return" in resolved:
        hints["return"] = resolved["return"]
    elif signature.return_annotation is not _EMPTY:
        hints["return"] = _resolve_one(signature.return_annotation, ns, f"@tool {qualname}: return value")
    return hints, ns


def _resolve_one(annotation: Any, ns: Mapping[str, Any], where: str) -> Any:
    if not isinstance(annotation, str):
        return annotation
    try:
        return _evaluate(annotation, _Ask(annotation, "", False, ns))
    except _Unsupported as error:
        raise TypeError(f"{where}: {error.why}") from None
