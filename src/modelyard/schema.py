"""One schema layer for the documents people write: the platform spec, the service file and
central rules.

A document's shape is declared once, as pydantic models (``Schema``): no keys but the
declared ones, values of their own type (``"5"`` is not 5, ``true`` is not 1), bounds
as field constraints. ``validated`` checks a located YAML document, or a part of one,
against a model and turns pydantic's first error into the document's own error line:
file:line at the key, what was expected and what was there. What a shape cannot say
(a service name's form, sums across keys, names that must exist elsewhere) stays with
the code that reads the document, with the same ``doc.error``.

pydantic is imported only by modules that parse a document, never on a request's path.
"""

from __future__ import annotations

import dataclasses
import types
from typing import (
    Annotated,
    Any,
    ClassVar,
    Literal,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    create_model,
)

from modelyard.errors import ConfigError, shown
from modelyard.yaml_lines import LocatedDocument

M = TypeVar("M", bound="Schema")
T = TypeVar("T")
Path = tuple[str | int, ...]

PositiveNumber = Annotated[float, Field(gt=0)]
NonNegativeNumber = Annotated[float, Field(ge=0)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]


def _off_only(value: bool) -> bool:
    if value:
        raise ValueError("an attempt timeout is auto, off or seconds, not true")
    return value


# auto, off or seconds; YAML reads a bare off as false, which means off too (never 0)
AttemptTimeout = (
    PositiveNumber | Literal["auto", "off"] | Annotated[StrictBool, AfterValidator(_off_only)]
)


class Schema(BaseModel):
    """A section of a document; ``noun`` names it in errors ("unknown template field")."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    noun: ClassVar[str] = "section"


class DocumentError(ConfigError):
    """A document's refusal by its schema, already at its key's file:line."""


def validated(model: type[M], doc: LocatedDocument, value: Any, path: Path = ()) -> M:
    """``value`` (the document's part at ``path``) as ``model``; the error line otherwise."""
    try:
        return model.model_validate({} if value is None else value)
    except ValidationError as exc:
        raise schema_error(model, doc, value, path, exc) from None


def validated_as(
    cls: type[T],
    doc: LocatedDocument,
    value: dict[str, Any],
    path: Path,
    given: dict[str, Any],
    hidden: frozenset[str] = frozenset(),
) -> T:
    """A dataclass from ``value`` and ``given`` (fields the document does not hold as
    written: a rule's id, its built fallback), checked as a ``Schema`` made from the
    class's own fields, so its fields are declared once; ``hidden``: fields an error's
    list of known ones leaves out (the id, which is the key). The class's own
    ``__post_init__`` checks run, and their errors pass through."""
    schema = _schema_of(cls)
    try:
        parsed = schema.model_validate({**value, **given})
    except ValidationError as exc:
        raise schema_error(schema, doc, value, path, exc, hidden=set(hidden)) from None
    return cls(**{name: getattr(parsed, name) for name in schema.model_fields})


def _schema_of(cls: type) -> type[Schema]:
    """The ``Schema`` of a dataclass: its fields, types and defaults; named by its ``noun``."""
    schema = _SCHEMAS.get(cls)
    if schema is not None:
        return schema
    hints = get_type_hints(cls)
    fields: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING:
            default: Any = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = Field(default_factory=field.default_factory)
        else:
            default = ...
        fields[field.name] = (hints[field.name], default)
    schema = create_model(cls.__name__, __base__=Schema, **fields)
    schema.noun = str(getattr(cls, "noun", cls.__name__))
    _SCHEMAS[cls] = schema
    return schema


_SCHEMAS: dict[type, type[Schema]] = {}


def schema_error(
    model: type,
    doc: LocatedDocument,
    value: Any,
    path: Path,
    exc: ValidationError,
    hidden: set[str] | None = None,
) -> ConfigError:
    """pydantic's error that reaches deepest into the document (the first of those) as the
    document's error line."""
    # a union fails once per member: the error that reaches deepest into the document is
    # the member with the value's shape
    errors = exc.errors(include_url=False)
    placed = [(_in_document(value, tuple(e["loc"])), e) for e in errors]
    (located, rest), error = max(placed, key=lambda item: len(item[0][0]))
    kind = error["type"]
    given = error.get("input")
    if kind == "extra_forbidden":
        parent = _annotation_at(model, value, located[:-1])
        fields = sorted(
            set(_fields(parent)) - (hidden or set()) if not located[:-1] else _fields(parent)
        )
        detail = f"unknown {_noun(parent)} field '{located[-1]}' (known: {', '.join(fields)})"
    elif kind == "missing":
        missing = rest[-1] if rest else "?"  # after any union member's tag
        parent = _annotation_at(model, value, located)
        detail = f"the {_noun(parent)} needs '{missing}'"
    elif kind in _EXPECTED:
        detail = f"expected {_EXPECTED[kind]}, got {_shown(given)}"
    elif kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        detail = _bound(kind, error.get("ctx") or {}, given)
    elif kind in ("too_short", "too_long"):
        ctx = error.get("ctx") or {}
        low, high = ctx.get("min_length"), ctx.get("max_length")
        size = "at least" if kind == "too_short" else "at most"
        count = low if kind == "too_short" else high
        detail = f"expected {size} {count} item(s), got {_shown(given)}"
    elif kind == "literal_error":
        detail = f"expected {error['ctx']['expected']}, got {_shown(given)}"
    else:
        detail = f"{error['msg']}, got {_shown(given)}"
    located_error = doc.error((*path, *located), detail)
    return DocumentError(
        located_error.detail,
        code=located_error.code,
        rule=located_error.rule,
        where=located_error.where,
    )


_EXPECTED = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "tuple_type": "a list",
}


def _bound(kind: str, ctx: dict[str, Any], given: Any) -> str:
    if kind == "greater_than" and ctx.get("gt") == 0:
        return f"must be a positive number, got {_shown(given)}"
    if kind == "greater_than_equal" and ctx.get("ge") == 0:
        return f"cannot be negative, got {_shown(given)}"
    words = {
        "greater_than": ("over", "gt"),
        "greater_than_equal": ("at least", "ge"),
        "less_than": ("under", "lt"),
        "less_than_equal": ("at most", "le"),
    }
    word, key = words[kind]
    return f"must be {word} {ctx.get(key)}, got {_shown(given)}"


def _shown(value: Any) -> str:
    return shown(repr(value), 80)


def _in_document(value: Any, loc: Path) -> tuple[Path, Path]:
    """The part of pydantic's location that names keys and items of the document, and the
    rest (a missing key, the member of a union it tried)."""
    located: list[str | int] = []
    node = value
    index = 0
    while index < len(loc):
        part = loc[index]
        if not _holds(node, part):
            following = loc[index + 1] if index + 1 < len(loc) else None
            if following is None or not _holds(node, following):
                return tuple(located), loc[index:]
            index += 1  # a union member's tag: the document goes on after it
            part = following
        node = node[part]
        located.append(part)
        index += 1
    return tuple(located), ()


def _holds(node: Any, part: str | int) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _annotation_at(model: Any, value: Any, path: Path) -> Any:
    """The declared type of the document's part at ``path``."""
    annotation, node = model, value
    for part in path:
        annotation = _member_for(annotation, node)
        if _is_schema(annotation):
            field = annotation.model_fields.get(str(part))
            annotation = field.annotation if field is not None else None
        elif dataclasses.is_dataclass(annotation):
            found = {f.name: f.type for f in dataclasses.fields(annotation)}
            annotation = found.get(str(part))
        elif get_origin(annotation) is dict:
            annotation = get_args(annotation)[1]
        elif get_origin(annotation) in (list, tuple):
            annotation = get_args(annotation)[0]
        else:
            return None
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int):
            node = node[part]
        else:
            node = None
    return _member_for(annotation, node)


def _member_for(annotation: Any, node: Any) -> Any:
    """Of a union, the member the document's value has the shape of."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) not in (Union, types.UnionType):
        return annotation
    for member in get_args(annotation):
        member = _member_for(member, node)
        mapping = _is_schema(member) or get_origin(member) is dict
        if isinstance(node, dict) and mapping:
            return member
        if isinstance(node, list) and get_origin(member) in (list, tuple):
            return member
    return annotation


def _is_schema(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Schema)


def _fields(annotation: Any) -> list[str]:
    if _is_schema(annotation):
        return list(annotation.model_fields)
    if dataclasses.is_dataclass(annotation):
        return [f.name for f in dataclasses.fields(annotation)]
    return []


def _noun(annotation: Any) -> str:
    """How errors name a section: a schema's ``noun``, a dataclass's ``noun`` class variable."""
    return (
        str(getattr(annotation, "noun", "section")) if isinstance(annotation, type) else "section"
    )
