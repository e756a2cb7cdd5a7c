"""Generate ``franz/protocol/inter_broker/`` and ``tests/support/old_versions/`` from Kafka
3.9's JSON message schemas.

kio 0.6 is generated from Kafka 4's schemas, which dropped the ZooKeeper-era inter-broker
APIs and the pre-KIP-896 versions of the client APIs. This script writes, for each
inter-broker API and every version (``franz/protocol/inter_broker/``), and for the client
API versions below kio's floors that Kafka 3.9 still serves (``tests/support/old_versions/``:
Produce v0-2, Fetch v0-3, ListOffsets v0, OffsetCommit v0-1, CreateTopics v0,
DescribeConfigs v0, OffsetForLeaderEpoch v0-1, which the differential tests write and read
with them, straight from Kafka's schemas and independent of the broker's hand-written
codecs), frozen slotted dataclasses in the shape kio's generic codec
(``kio.serial.entity_reader`` / ``entity_writer``) introspects: class variables
``__type__``, ``__version__``, ``__flexible__``, ``__api_key__``, ``__header_schema__``,
and per-field ``kafka_type`` metadata. kio then encodes and decodes
them like its own classes.

Usage, with a Kafka 3.9 checkout, or the schemas unpacked from ``kafka-clients-3.9.2.jar``
(``unzip kafka-clients-3.9.2.jar 'common/message/*.json'``; not vendored)::

    python tools/gen_inter_broker.py ~/kafka/clients/src/main/resources/common/message [package]
    ruff check --fix franz/protocol/inter_broker tests/support/old_versions
    ruff format franz/protocol/inter_broker tests/support/old_versions

Schema rules followed (Kafka's ``generator/`` semantics):

* ``versions`` / ``nullableVersions`` / ``flexibleVersions`` are ``"N"``, ``"N-M"`` or
  ``"N+"``; a field exists in a version only if its range contains it, and a struct is
  emitted for a version only if a field present in that version reaches it;
* ``[]T`` is an array (int32 count, or uvarint count+1 when flexible); ``T`` names a struct
  declared inline (``fields``) or in ``commonStructs``;
* an ``int16`` field named ``ErrorCode`` is kio's ``error_code`` type (``ErrorCode`` enum);
  ``uuid`` is ``uuid.UUID | None`` as in kio (the zero UUID reads as ``None``);
* ``default`` becomes the dataclass default; fields without one are required.
* tagged fields do not occur in the versions generated; the script refuses them rather
  than guess;
* a nested struct of the response named like one of the request (AlterPartition's
  ``TopicData`` and ``PartitionData``) is emitted as ``Response<Name>``: both live in one
  module, and kio's codec introspects types, never their names.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Target:
    """One generated package: ``apis`` are (schema stem, module name, versions; None: all)."""

    package: str
    apis: tuple[tuple[str, str, tuple[int, int] | None], ...]
    title: str

    @property
    def out(self) -> Path:
        return ROOT.joinpath(*self.package.split("."))


TARGETS = (
    Target(
        "franz.protocol.inter_broker",
        (
            ("LeaderAndIsr", "leader_and_isr", None),
            ("StopReplica", "stop_replica", None),
            ("UpdateMetadata", "update_metadata", None),
            ("ControlledShutdown", "controlled_shutdown", None),
            ("AlterPartition", "alter_partition", None),
        ),
        "inter-broker entities",
    ),
    Target(
        "tests.support.old_versions",
        (
            ("Produce", "produce", (0, 2)),
            ("Fetch", "fetch", (0, 3)),
            ("ListOffsets", "list_offsets", (0, 0)),
            ("OffsetCommit", "offset_commit", (0, 1)),
            ("CreateTopics", "create_topics", (0, 0)),
            ("DescribeConfigs", "describe_configs", (0, 0)),
            ("OffsetForLeaderEpoch", "offset_for_leader_epoch", (0, 1)),
        ),
        "pre-KIP-896 client API entities",
    ),
)

_INT_TYPES = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64"}


def load_schema(path: Path) -> dict[str, Any]:
    """Kafka's schema files are JSON with ``//`` comment lines."""
    lines = [line for line in path.read_text().splitlines() if not line.strip().startswith("//")]
    schema: dict[str, Any] = json.loads("\n".join(lines))
    return schema


def parse_versions(spec: str | None) -> tuple[int, int]:
    """``"N"``, ``"N-M"``, ``"N+"`` or ``"none"`` as an inclusive range (empty: (1, 0))."""
    if spec is None or spec == "none":
        return 1, 0
    if spec.endswith("+"):
        return int(spec[:-1]), 2**15
    if "-" in spec:
        low, high = spec.split("-")
        return int(low), int(high)
    return int(spec), int(spec)


def in_range(spec: str | None, version: int) -> bool:
    low, high = parse_versions(spec)
    return low <= version <= high


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


@dataclass
class Context:
    schema: dict[str, Any]
    version: int
    flexible: bool
    header: str
    structs: dict[str, list[dict[str, Any]]]
    emitted: list[str]
    imports: set[str]
    #: struct name in the schema -> class name emitted (collisions with the request's).
    renames: dict[str, str]

    def class_name(self, struct: str) -> str:
        return self.renames.get(struct, struct)


def struct_index(schema: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every struct name -> its fields: inline ``[]T`` fields with ``fields``, and commons."""
    index: dict[str, list[dict[str, Any]]] = {}

    def walk(fields: list[dict[str, Any]]) -> None:
        for field in fields:
            if "fields" in field:
                name = field["type"].removeprefix("[]")
                if name in index and index[name] != field["fields"]:
                    raise SystemExit(f"struct {name} declared twice, differently")
                index[name] = field["fields"]
                walk(field["fields"])

    walk(schema["fields"])
    for common in schema.get("commonStructs", []):
        index[common["name"]] = common["fields"]
        walk(common["fields"])
    return index


def field_line(ctx: Context, field: dict[str, Any]) -> str:
    if "tag" in field or "taggedVersions" in field:
        raise SystemExit(f"tagged field {field['name']}: not supported by this generator")
    name = snake(field["name"])
    kind: str = field["type"]
    nullable = in_range(field.get("nullableVersions"), ctx.version)
    is_array = kind.startswith("[]")
    inner = kind.removeprefix("[]")
    entity = field.get("entityType")
    default = field.get("default")
    if inner in ctx.structs:
        emit_struct(ctx, inner)
        cls = ctx.class_name(inner)
        annotation = f"tuple[{cls}, ...]" if is_array else cls
        if nullable:
            annotation += " | None"
        return f"    {name}: {annotation}"
    if inner == "int16" and field["name"] == "ErrorCode" and not is_array:
        ctx.imports.add("from kio.schema.errors import ErrorCode")
        python, kafka_type = "ErrorCode", "error_code"
    elif inner == "int32" and entity == "brokerId":
        ctx.imports.add("from kio.schema.types import BrokerId")
        python, kafka_type = "BrokerId", "int32"
    elif inner in _INT_TYPES:
        python, kafka_type = _INT_TYPES[inner], inner
        ctx.imports.add(f"from kio.static.primitive import {python}")
    elif inner == "bool":
        python, kafka_type = "bool", "bool"
    elif inner == "string" and entity == "topicName":
        ctx.imports.add("from kio.schema.types import TopicName")
        python, kafka_type = "TopicName", "string"
    elif inner == "string":
        python, kafka_type = "str", "string"
    elif inner == "uuid":
        ctx.imports.add("import uuid")
        python, kafka_type = "uuid.UUID", "uuid"
        nullable = True  # kio reads the zero UUID as None
    elif inner == "records":
        ctx.imports.add("from kio.static.primitive import Records")
        python, kafka_type = "Records", "records"
    else:
        raise SystemExit(f"type {kind} of {field['name']}: not supported by this generator")
    annotation = f"tuple[{python}, ...]" if is_array else python
    if nullable:
        annotation += " | None"
    spec = f'field(metadata={{"kafka_type": "{kafka_type}"}}'
    if default is not None and not is_array:
        spec += f", default={render_default(python, default)}"
    return f"    {name}: {annotation} = {spec})"


def render_default(python: str, default: str) -> str:
    if python == "bool":
        return {"true": "True", "false": "False"}[default]
    if python in ("str", "TopicName"):
        return "None" if default == "null" else repr(default)
    if python == "ErrorCode":
        return f"ErrorCode({int(default, 0)})"
    return f"{python}({int(default, 0)})"


def class_block(ctx: Context, name: str, kind: str, fields: list[dict[str, Any]]) -> str:
    lines = [field_line(ctx, f) for f in fields if in_range(f["versions"], ctx.version)]
    head = [
        "",
        "",
        "@dataclass(frozen=True, slots=True, kw_only=True)",
        f"class {name}:",
        f"    __type__: ClassVar = EntityType.{kind}",
        f"    __version__: ClassVar[i16] = i16({ctx.version})",
        f"    __flexible__: ClassVar[bool] = {ctx.flexible}",
        f"    __api_key__: ClassVar[i16] = i16({ctx.schema['apiKey']})",
        f"    __header_schema__: ClassVar[type[{ctx.header}]] = {ctx.header}",
    ]
    return "\n".join(head + lines)


def emit_struct(ctx: Context, name: str) -> None:
    marker = f"class {ctx.class_name(name)}:"
    if any(marker in block for block in ctx.emitted):
        return
    # Children are emitted first: kio introspects real types, not string annotations.
    block = class_block(ctx, ctx.class_name(name), "nested", ctx.structs[name])
    ctx.emitted.append(block)


def generate_message(
    schema: dict[str, Any], version: int, renames: dict[str, str] | None = None
) -> tuple[str, set[str]]:
    is_request = schema["type"] == "request"
    flexible = in_range(schema["flexibleVersions"], version)
    header = "RequestHeader" if is_request else "ResponseHeader"
    ctx = Context(
        schema, version, flexible, header, struct_index(schema), [], set(), dict(renames or {})
    )
    if is_request:
        ctx.imports.add(
            f"from kio.schema.request_header.v{2 if flexible else 1}.header import RequestHeader"
        )
    else:
        ctx.imports.add(
            f"from kio.schema.response_header.v{1 if flexible else 0}.header import ResponseHeader"
        )
    top = class_block(
        ctx, schema["name"], "request" if is_request else "response", schema["fields"]
    )
    ctx.emitted.append(top)
    return "\n".join(ctx.emitted), ctx.imports


MODULE_DOC = '''"""{stem} v{version}: request and response as kio-style entities.

Generated by ``tools/gen_inter_broker.py`` from Kafka 3.9's ``{stem}Request.json`` and
``{stem}Response.json``; do not edit. Request {req_flex}, response {resp_flex}.
"""
'''


def generate_module(
    stem: str, request: dict[str, Any], response: dict[str, Any], version: int
) -> str:
    req_body, req_imports = generate_message(request, version)
    shared = set(struct_index(request)) & set(struct_index(response))
    resp_body, resp_imports = generate_message(
        response, version, {name: f"Response{name}" for name in shared}
    )
    imports = req_imports | resp_imports
    imports |= {
        "from dataclasses import dataclass, field",
        "from typing import ClassVar",
        "from kio.static.constants import EntityType",
        "from kio.static.primitive import i16",
    }
    req_flex = "flexible" if request_is_flexible(request, version) else "not flexible"
    resp_flex = "flexible" if request_is_flexible(response, version) else "not flexible"
    names_req = set(re.findall(r"^class (\w+):", req_body, re.M))
    names_resp = set(re.findall(r"^class (\w+):", resp_body, re.M))
    if names_req & names_resp:
        raise SystemExit(f"{stem} v{version}: request and response share {names_req & names_resp}")
    doc = MODULE_DOC.format(stem=stem, version=version, req_flex=req_flex, resp_flex=resp_flex)
    return doc + "\n" + "\n".join(sorted(imports)) + "\n" + req_body + "\n" + resp_body + "\n"


def request_is_flexible(schema: dict[str, Any], version: int) -> bool:
    return in_range(schema["flexibleVersions"], version)


INDEX_DOC = '''"""Index of the generated {title}: (api key, version) -> class.

Generated by ``tools/gen_inter_broker.py``; do not edit.
"""
'''


def main(source: Path, packages: list[str]) -> None:
    """Generate every target, or those whose package is in ``packages``."""
    for target in TARGETS:
        if not packages or target.package in packages:
            generate_target(source, target)


def generate_target(source: Path, target: Target) -> None:
    index_imports: list[str] = []
    request_rows: list[str] = []
    response_rows: list[str] = []
    flexible_rows: list[str] = []
    for stem, package, versions in target.apis:
        request = load_schema(source / f"{stem}Request.json")
        response = load_schema(source / f"{stem}Response.json")
        if request["validVersions"] != response["validVersions"]:
            raise SystemExit(f"{stem}: request and response versions differ")
        low, high = versions or parse_versions(request["validVersions"])
        pkg_dir = target.out / package
        pkg_dir.mkdir(parents=True, exist_ok=True)
        (pkg_dir / "__init__.py").write_text(f'"""{stem} (API key {request["apiKey"]})."""\n')
        for version in range(low, high + 1):
            text = generate_module(stem, request, response, version)
            (pkg_dir / f"v{version}.py").write_text(text)
            alias = f"{package}_v{version}"
            index_imports.append(f"from {target.package}.{package} import v{version} as {alias}")
            key = request["apiKey"]
            request_rows.append(f"    ({key}, {version}): {alias}.{stem}Request,")
            response_rows.append(f"    ({key}, {version}): {alias}.{stem}Response,")
        first_flexible, _ = parse_versions(request["flexibleVersions"])
        flexible_rows.append(f"    {request['apiKey']}: ({low}, {high}, {first_flexible}),")
    index = (
        INDEX_DOC.format(title=target.title)
        + "\nfrom typing import Any, Final\n\n"
        + "\n".join(index_imports)
        + "\n\n#: API key -> (lowest version, highest version, first flexible version).\n"
        + "VERSIONS: Final[dict[int, tuple[int, int, int]]] = {\n"
        + "\n".join(flexible_rows)
        + "\n}\n\nREQUESTS: Final[dict[tuple[int, int], type[Any]]] = {\n"
        + "\n".join(request_rows)
        + "\n}\n\nRESPONSES: Final[dict[tuple[int, int], type[Any]]] = {\n"
        + "\n".join(response_rows)
        + "\n}\n"
    )
    (target.out / "_index.py").write_text(index)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]), sys.argv[2:])
