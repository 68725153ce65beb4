"""Type hints to JSON Schema (OpenAPI 3.1): how a response shape (a ``TypedDict``, or a
generic envelope of one such as ``Data[FileJson]``) becomes its component.

Why a converter of our own: drf-spectacular's public API (``drf_spectacular.utils``,
``.extensions``, ``.openapi``, ``.hooks``, ``.types``) takes a type hint only as a field's or
a method's annotation, and inlines a TypedDict there; its converter (``resolve_type_hint``)
lives in ``drf_spectacular.plumbing``, which is not part of its documented API, and has no way
to make a nested shape a ``$ref`` to its own component, to name a generic envelope after its
arguments, or to read constraints (``JsonSchema``) off ``Annotated``. So the shapes are turned
into schemas here, and handed to drf-spectacular through its extension (openapi/extensions.py).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal, NotRequired, Required, Union, get_args, get_origin

Schema = dict[str, Any]

# --- Constraints carried by the type ---------------------------------------------------------


class JsonSchema:
    """JSON Schema keywords for an ``Annotated`` type, laid over what the type itself says.

    A value may be a zero-argument callable (``lambda: settings.SERVICE_MAX_FILENAME_LENGTH``),
    called when the document is built, so a setting changed at deploy time changes the
    document too.
    """

    def __init__(self, **keywords: Any) -> None:
        self.keywords = keywords

    def resolve(self) -> Schema:
        return {key: value() if callable(value) else value for key, value in self.keywords.items()}


def id_pattern(prefix: str) -> str:
    """The shape of a public id (storage_service/ids.py): ``<prefix>_`` and 26 base32 chars."""
    return f"^{prefix}_[0-9a-hjkmnp-tv-z]{{26}}$"


def id_schema(prefix: str) -> JsonSchema:
    return JsonSchema(pattern=id_pattern(prefix), example=f"{prefix}_01m80p9qhfbw0rf406y6kr13qe")


# --- Type hints to JSON Schema (OpenAPI 3.1) -------------------------------------------------

_NONE = type(None)
_BASIC: dict[Any, str] = {str: "string", int: "integer", bool: "boolean", float: "number"}


def is_shape(hint: Any) -> bool:
    """A TypedDict class, or a generic TypedDict with its arguments (``Data[FileJson]``)."""
    return typing.is_typeddict(get_origin(hint) or hint)


def shape_name(hint: Any) -> str:
    """The component's name: ``FileJson`` is ``File``; ``Paged[FileJson]`` is ``FilePage``
    (a generic envelope is named after its arguments, then itself)."""
    origin = get_origin(hint)
    if origin is list:
        return shape_name(get_args(hint)[0]) + "List"
    if origin is not None:
        return "".join(shape_name(arg) for arg in get_args(hint)) + shape_name(origin)
    name: str = hint.__name__
    return name.removesuffix("Json")


def shape_ref(shape: Any) -> Schema:
    """A ``$ref`` to a shape's component, for code that has no generator at hand (the
    paginator's response schema); the generator registers the component
    (``AutoSchema.get_operation``)."""
    return {"$ref": f"#/components/schemas/{shape_name(shape)}"}


def nullable(schema: Schema) -> Schema:
    if isinstance(schema.get("type"), str) and "$ref" not in schema:
        result = {**schema, "type": [schema["type"], "null"]}
        if "enum" in schema:
            result["enum"] = [*schema["enum"], None]
        return result
    return {"anyOf": [schema, {"type": "null"}]}


def type_schema(hint: Any, ref: Callable[[Any], Schema]) -> Schema:
    """The JSON Schema of a type hint; ``ref`` turns a shape into a ``$ref`` to its component."""
    origin, args = get_origin(hint), get_args(hint)
    schema: Schema
    if origin is Annotated:
        schema = type_schema(args[0], ref)
        for meta in hint.__metadata__:
            if isinstance(meta, JsonSchema):
                schema = {**schema, **meta.resolve()}
        return schema
    if origin in (NotRequired, Required):
        return type_schema(args[0], ref)
    if is_shape(hint):
        return ref(hint)
    if hint is Any:
        return {}
    if hint is _NONE or hint is None:
        return {"type": "null"}
    if hint in _BASIC:
        return {"type": _BASIC[hint]}
    if origin is Literal:
        schema = {"enum": list(args)}
        kinds = {_BASIC.get(type(arg)) for arg in args}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if origin in (Union, types.UnionType):
        present = [arg for arg in args if arg is not _NONE]
        schema = (
            type_schema(present[0], ref)
            if len(present) == 1
            else {"anyOf": [type_schema(arg, ref) for arg in present]}
        )
        return nullable(schema) if len(present) < len(args) else schema
    if origin is list:
        return {"type": "array", "items": type_schema(args[0], ref)}
    if origin is dict:
        values = type_schema(args[1], ref)
        return {"type": "object", "additionalProperties": values if values else True}
    raise TypeError(f"No JSON Schema for the type hint {hint!r}")


def _substitute(hint: Any, mapping: dict[Any, Any]) -> Any:
    """``hint`` with a generic shape's type variables replaced by its arguments."""
    if hint in mapping:
        return mapping[hint]
    origin, args = get_origin(hint), get_args(hint)
    if not args or not mapping:
        return hint
    replaced = tuple(_substitute(arg, mapping) for arg in args)
    if origin is Annotated:
        return Annotated[(replaced[0], *hint.__metadata__)]
    if origin in (Union, types.UnionType):
        return Union[replaced]  # noqa: UP007
    return origin[replaced]


def _is_required(hint: Any, total: bool) -> bool:
    # Read from the hints, not __required_keys__: with postponed annotations (PEP 563) Python
    # 3.11 cannot see NotRequired[...] when it builds the class, and calls every key required.
    while get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    if get_origin(hint) is NotRequired:
        return False
    return get_origin(hint) is Required or total


def _doc(text: str) -> str:
    """A docstring as one Markdown paragraph (reST ``code`` becomes `code`)."""
    return " ".join(text.split()).replace("``", "`")


def shape_schema(shape: Any, ref: Callable[[Any], Schema]) -> Schema:
    """A shape's component: every key a property, the required ones required, nothing else
    allowed (the rendering function returns exactly these keys: mypy checks it)."""
    origin = get_origin(shape) or shape
    mapping = dict(zip(getattr(origin, "__parameters__", ()), get_args(shape), strict=False))
    hints = typing.get_type_hints(origin, include_extras=True)
    schema: Schema = {
        "type": "object",
        "properties": {
            name: type_schema(_substitute(hint, mapping), ref) for name, hint in hints.items()
        },
        "additionalProperties": False,
    }
    required = [name for name, hint in hints.items() if _is_required(hint, origin.__total__)]
    if required:
        schema["required"] = required
    if origin.__doc__:
        schema["description"] = _doc(origin.__doc__)
    return schema
