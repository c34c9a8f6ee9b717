"""Write tests/reference/zulip-schemas.json: Zulip 8.0's OpenAPI document without its prose.

    python tools/derive_schemas.py                  # (re)write the derived file
    python tools/derive_schemas.py --check          # exit 1 when the committed file differs
    python tools/derive_schemas.py --spec PATH      # derive from another copy of the document

The tests validate hubbub's responses against Zulip's document, and tools/api_coverage.py
lists its operations; neither reads the prose. The derived file keeps the whole structure
(paths, methods, operationId, parameters, request bodies, responses, components and every
schema keyword that constrains a value) and drops only what is written for people:
``description``, ``summary``, ``example``, ``examples`` and the ``x-*`` extension keys that
Zulip's documentation renderer reads (curl and Python example hints, prose for parameters
and responses, the administrator badge). OpenAPI's ``nullable`` stays as it is: the test
loader (tests/openapi.py) turns it into JSON Schema, so the file remains an OpenAPI 3.0
document that the additions in tests/reference/additions/ are written against.

Output is deterministic: sorted keys, one-space indentation, UTF-8, a final newline.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped,unused-ignore]

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = Path("/work/shared/reference/zulip-openapi.yaml")
OUTPUT = ROOT / "tests" / "reference" / "zulip-schemas.json"

# Keys that hold text or samples for a reader, never a constraint.
PROSE_KEYS = frozenset({"description", "summary", "example", "examples"})

# Keys whose value maps names chosen by the document's authors (property names, paths,
# status codes, media types, component names) to objects. Such a name is never dropped,
# even when it is "description" (a stream's description is a property of its schema).
NAME_MAPS = frozenset(
    {
        "properties",
        "patternProperties",
        "paths",
        "responses",
        "content",
        "schemas",
        "parameters",
        "requestBodies",
        "headers",
        "securitySchemes",
        "links",
        "callbacks",
        "encoding",
        "variables",
        "mapping",
    }
)

# Keys whose value is data (a literal a value may take), copied without looking inside.
LITERAL_KEYS = frozenset({"default", "enum", "const"})


def _is_prose(key: str) -> bool:
    return key in PROSE_KEYS or key.startswith("x-")


def strip_object(node: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI object (operation, parameter, schema, ...) without its prose keys."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if _is_prose(key):
            continue
        if key in LITERAL_KEYS:
            out[key] = value
        elif key in NAME_MAPS and isinstance(value, dict):
            out[key] = {name: strip_value(item) for name, item in value.items()}
        else:
            out[key] = strip_value(value)
    return out


def strip_value(node: Any) -> Any:
    if isinstance(node, dict):
        return strip_object(node)
    if isinstance(node, list):
        return [strip_value(item) for item in node]
    return node


def derive(source: Path) -> str:
    """The text of the derived file for the OpenAPI document at ``source``."""
    with source.open(encoding="utf-8") as handle:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        document = yaml.load(handle, Loader=loader)
    if not isinstance(document, dict) or not isinstance(document.get("paths"), dict):
        raise ValueError(f"{source} is not an OpenAPI document (no 'paths')")
    stripped = strip_object(document)
    return json.dumps(stripped, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the output file is out of date"
    )
    parser.add_argument(
        "--spec", type=Path, default=DEFAULT_SOURCE, help="Zulip 8.0's OpenAPI document (YAML)"
    )
    parser.add_argument("--output", type=Path, default=OUTPUT, help="the derived JSON file")
    args = parser.parse_args(argv)
    source: Path = args.spec
    output: Path = args.output
    if not source.is_file():
        print(f"derive_schemas: no OpenAPI document at {source}", file=sys.stderr)
        return 2
    text = derive(source)
    current = output.read_text(encoding="utf-8") if output.is_file() else None
    if args.check:
        if current != text:
            print(
                f"derive_schemas: {output} differs from what {source} gives; "
                "run: python tools/derive_schemas.py",
                file=sys.stderr,
            )
            return 1
        return 0
    if current != text:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        print(f"wrote {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
