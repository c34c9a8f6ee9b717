"""Parameter declarations and their parsing, with Zulip's validation wording.

An endpoint declares each parameter once, as a keyword-only argument of its function:

    async def get_user(req: ApiRequest, *, user_id: PathInt,
                       client_gravatar: bool = True) -> Payload: ...

Types other than ``str`` arrive as JSON text inside the form value (``true``, ``[1,2]``);
a ``str`` arrives raw. ``Annotated[T, Param(aliases=(...))]`` adds legacy names.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import orjson
from pydantic import ConfigDict, TypeAdapter, ValidationError

from hubbub.errors import ConfusingParamsError, JsonableError, MissingArgumentError
from hubbub.json_values import check_json_shape, check_no_nul

_STRICT = ConfigDict(strict=True)


@dataclass(frozen=True)
class Param:
    """Extra facts about a parameter: other accepted names, or that it comes from the path."""

    aliases: tuple[str, ...] = ()
    path: bool = False
    # Force JSON decoding on or off; None decides by type (``str`` is raw, the rest JSON).
    json: bool | None = None
    description: str = ""


PathInt = Annotated[int, Param(path=True)]
PathStr = Annotated[str, Param(path=True)]


@dataclass(frozen=True)
class ParamSpec:
    name: str
    names: tuple[str, ...]  # the wire names, primary first
    annotation: Any
    adapter: TypeAdapter[Any]
    default: Any
    required: bool
    json: bool
    path: bool
    description: str


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """Strip ``Annotated`` and return the bare type and its metadata."""
    metadata: list[Any] = []
    while get_origin(annotation) is Annotated:
        args = get_args(annotation)
        annotation, metadata = args[0], [*metadata, *args[1:]]
    return annotation, metadata


def _is_raw_string(annotation: Any) -> bool:
    """True when the parameter is a plain string on the wire (no JSON decoding)."""
    bare, _ = _unwrap(annotation)
    origin = get_origin(bare)
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(bare) if a is not type(None)]
        return all(_is_raw_string(a) for a in members)
    if origin is Literal:
        return all(isinstance(v, str) for v in get_args(bare))
    return bare is str


def build_specs(func: Any) -> list[ParamSpec]:
    hints = typing.get_type_hints(func, include_extras=True)
    specs = []
    for name, parameter in inspect.signature(func).parameters.items():
        if parameter.kind is not inspect.Parameter.KEYWORD_ONLY:
            continue
        annotation = hints[name]
        _, metadata = _unwrap(annotation)
        param = next((m for m in metadata if isinstance(m, Param)), Param())
        raw = _is_raw_string(annotation)
        json = (not raw) if param.json is None else param.json
        required = parameter.default is inspect.Parameter.empty
        specs.append(
            ParamSpec(
                name=name,
                names=(name, *param.aliases),
                annotation=annotation,
                adapter=TypeAdapter(annotation, config=_STRICT),
                default=None if required else parameter.default,
                required=required,
                json=json and not param.path,
                path=param.path,
                description=param.description,
            )
        )
    return specs


_TYPE_WORDS = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a dict",
    "float_type": "a float",
    "float_parsing": "a float",
}


def _literal_of_ints(annotation: Any) -> bool:
    bare, _ = _unwrap(annotation)
    if get_origin(bare) in (Union, types.UnionType):
        return any(_literal_of_ints(a) for a in get_args(bare) if a is not type(None))
    return get_origin(bare) is Literal and all(
        isinstance(v, int) and not isinstance(v, bool) for v in get_args(bare)
    )


def _error_message(var_name: str, exc: ValidationError, annotation: Any) -> str:
    error = exc.errors()[0]
    # Name the list element that failed, as Zulip does: "emails[1] is not a string".
    for part in error["loc"]:
        if isinstance(part, int):
            var_name += f"[{part}]"
    kind = error["type"]
    if (
        kind == "literal_error"
        and _literal_of_ints(annotation)
        and (not isinstance(error["input"], int) or isinstance(error["input"], bool))
    ):
        # An integer choice given a non-integer: say what Zulip's check_int_in says.
        kind = "int_type"
    if kind in _TYPE_WORDS:
        return f"{var_name} is not {_TYPE_WORDS[kind]}"
    if kind == "string_too_long":
        return f"{var_name} is too long (limit: {error['ctx']['max_length']} characters)"
    if kind == "missing":
        return f"{var_name} key is missing"
    return f"Invalid {var_name}"


def parse_value(spec: ParamSpec, wire_name: str, raw: Any) -> Any:
    """Decode (JSON unless the parameter is a raw string) and validate one value.

    Path values arrive already converted by the route (``{user_id:int}``).
    """
    value: Any = raw
    if spec.json:
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise JsonableError(f"{wire_name} is not valid JSON") from None
        check_json_shape(wire_name, value)
    elif type(raw) is str:
        check_no_nul(wire_name, raw)
    try:
        value = spec.adapter.validate_python(value)
    except ValidationError as exc:
        raise JsonableError(_error_message(wire_name, exc, spec.annotation)) from None
    if not _fits_int64(value):
        # Every integer the server stores or compares is a 64-bit column; a larger one
        # (from a path like /messages/99999999999999999999 or JSON) cannot name anything.
        raise JsonableError(f"Invalid {wire_name}")
    return value


_INT64 = range(-(2**63), 2**63)


def _fits_int64(value: Any) -> bool:
    return _fits(value, _INT64)


_COLLECTIONS = (list, tuple, set, frozenset)


def _fits(value: Any, bounds: range) -> bool:
    if value is None or type(value) is str:  # most values: nothing to look into
        return True
    if isinstance(value, int):
        return value in bounds
    if isinstance(value, _COLLECTIONS):
        return all(_fits(v, bounds) for v in value)
    if isinstance(value, dict):
        return all(_fits(v, bounds) for v in value.values())
    return True


_INT32 = range(-(2**31), 2**31)


def find_int32_overflow(kwargs: Mapping[str, Any]) -> str | None:
    """The first argument holding an integer a 32-bit column cannot store (PostgreSQL's
    ``integer`` ids), to name it in the error when the database refuses the value."""
    return next((name for name, value in kwargs.items() if not _fits(value, _INT32)), None)


def parse_arguments(
    specs: list[ParamSpec], args: Mapping[str, str], path_args: Mapping[str, Any]
) -> dict[str, Any]:
    """Turn the request's raw arguments into the endpoint's keyword arguments, or raise."""
    kwargs: dict[str, Any] = {}
    for spec in specs:
        if spec.path:
            kwargs[spec.name] = parse_value(spec, spec.name, path_args[spec.name])
            continue
        present = [n for n in spec.names if n in args]
        if len(present) > 1:
            raise ConfusingParamsError(present[0], present[1])
        if not present:
            if spec.required:
                raise MissingArgumentError(spec.name)
            kwargs[spec.name] = spec.default
            continue
        kwargs[spec.name] = parse_value(spec, present[0], args[present[0]])
    return kwargs
