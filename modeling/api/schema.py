"""The OpenAPI schema and Swagger UI, for researchers only; Swagger's assets come from the sidecar (no CDN)."""

from typing import Any

from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from base.api_strict import StrictQueryParamsMixin
from base.permissions import IsResearcher
from corpus.models import LABELS_PER_PAIR


class ResearcherSchemaView(StrictQueryParamsMixin, SpectacularAPIView):
    permission_classes = [IsResearcher]
    extra_query_params = ("lang",)


class ResearcherSwaggerView(StrictQueryParamsMixin, SpectacularSwaggerSplitView):
    """The split view serves Swagger's set-up script as a file (?script=), not inline: the
    content security policy allows scripts from this site only."""

    permission_classes = [IsResearcher]
    extra_query_params = ("script",)
    empty_query_params = ("script",)


_ERROR = {"type": "object", "properties": {"detail": {"type": "string"}}, "additionalProperties": True}
_ERRORS = {
    "400": "Bad input: the message names each field or parameter (unknown parameters included).",
    "401": "Not authenticated.",
    "403": "Not a researcher.",
    "404": "No such object (a path id, or a dataset, genre, snapshot or worker named in the request), "
    "or an invalid cursor.",
    "429": "Throttled: too many requests.",
}
# What the file download streams, by file kind.
_FILE_TYPES = ("application/x-ndjson", "text/tab-separated-values", "application/json")


def document_real_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the responses the API really gives (every error
    status with its {"detail": ...} body, the download's content types) and page_size's bounds,
    so that a schema-driven client (schemathesis --checks all) meets no undocumented answer."""
    from base.api_strict import StrictCursorPagination

    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            for code, description in _ERRORS.items():
                responses.setdefault(
                    code, {"description": description, "content": {"application/json": {"schema": _ERROR}}}
                )
            for parameter in operation.get("parameters", []):
                if parameter.get("name") == "page_size":
                    parameter["schema"] = {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": StrictCursorPagination.max_page_size,
                    }
                if parameter.get("name") == "min_labels":  # PairFilter's bounds
                    parameter["schema"] = {"type": "integer", "minimum": 0, "maximum": LABELS_PER_PAIR}
                schema = parameter.get("schema", {})
                if "enum" in schema:
                    schema["enum"] = [value for value in schema["enum"] if value not in ("", None)]
                elif schema.get("type") == "string":
                    # An empty value is refused (StrictQueryParamsMixin), and no text may hold NUL.
                    schema.setdefault("minLength", 1)
                    schema.setdefault("pattern", NO_NUL)
            if path.endswith("/files/{name}") and method == "get":
                content = responses.get("200", {}).setdefault("content", {})
                for media_type in _FILE_TYPES:
                    content.setdefault(media_type, {"schema": {"type": "string", "format": "binary"}})
    components = result.get("components", {}).get("schemas", {})
    requests = {"SnapshotFiltersSchema"}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for content in (
                operation.get("requestBody", {}).get("content", {}).values() if isinstance(operation, dict) else ()
            ):
                name = content.get("schema", {}).get("$ref", "").rpartition("/")[2]
                if name in components:  # request bodies refuse unknown fields (KnownFieldsSerializer)
                    components[name]["additionalProperties"] = False
                    requests.add(name)
    if "TrainingRunRequest" in components:
        components["TrainingRunRequest"]["properties"]["config"] = training_config_schema()
    if "SnapshotFiltersSchema" in components:
        components["SnapshotFiltersSchema"]["additionalProperties"] = False  # unknown filters are refused
    if "Finish" in components:
        components["Finish"]["properties"]["results"] = {
            "type": "object",
            "required": ["accuracy"],
            "properties": {"accuracy": {"type": "object", "description": "Split file -> accuracy."}},
        }
    for name in requests & set(components):
        _no_nul_in_strings(components[name])
    return result


# JSON Schema (ECMA 262) pattern: text without NUL, which PostgreSQL text cannot hold (400 otherwise).
NO_NUL = "^[^\\u0000]*$"


# What a free-form value of a request may be: any JSON but text with NUL.
_NUL_FREE_VALUE = {
    "anyOf": [
        {"type": "string", "pattern": NO_NUL},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "array", "items": {"type": "number"}},
    ],
    "nullable": True,
}


def _no_nul_in_strings(schema: object) -> None:
    if not isinstance(schema, dict):
        return
    if schema.get("type") == "string" and "enum" not in schema and "format" not in schema:
        schema.setdefault("pattern", NO_NUL)
    if schema.get("type") == "object":
        # Free-form objects of a request (results, history): keys and values without NUL.
        schema.setdefault("propertyNames", {"pattern": NO_NUL})
        if schema.get("additionalProperties", True) in ({}, True) and schema.get("additionalProperties") is not False:
            schema["additionalProperties"] = _NUL_FREE_VALUE
    for child in schema.get("properties", {}).values():
        _no_nul_in_strings(child)
    for key in ("items", "additionalProperties"):
        _no_nul_in_strings(schema.get(key))
    for key in ("allOf", "oneOf", "anyOf"):
        for child in schema.get(key, []):
            _no_nul_in_strings(child)


def training_config_schema() -> dict[str, Any]:
    """`config` of a launch as modeling.training.config checks it: every key, its type and bounds."""
    from modeling.training.config import _NULLABLE, BOUNDS, DEFAULTS, NAMED_EMBEDDINGS, STEPS, TYPES

    kinds = {int: "integer", float: "number", bool: "boolean"}
    properties: dict[str, dict[str, object]] = {}
    for key in DEFAULTS:
        if key in TYPES:
            prop: dict[str, object] = {"type": kinds[TYPES[key]]}
            if key in BOUNDS:
                prop["minimum"], prop["maximum"] = BOUNDS[key]
        elif key == "device":
            prop = {"type": "string", "pattern": "^(auto|cpu|cuda(:[0-9]{1,2})?)$"}
        elif key == "step":
            prop = {"type": "string", "enum": list(STEPS)}
        elif key == "embeddings":
            prop = {
                "type": "string",
                "enum": list(NAMED_EMBEDDINGS),
                "description": "A named source (or the name of a file under the operator's EMBEDDINGS_DIR).",
            }
        else:  # train_genre, mix_dataset
            prop = {"type": "string", "minLength": 1, "maxLength": 500, "pattern": NO_NUL}
        if key in _NULLABLE or key in ("train_genre", "mix_dataset", "embeddings"):
            prop["nullable"] = True
        properties[key] = prop
    properties["dropout"].update({"minimum": 0.0, "maximum": 1.0, "exclusiveMaximum": True})
    properties["mix_fraction"].update({"minimum": 0.0, "maximum": 1.0})
    return {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "description": "Optional; every key has a default (README, Training the baselines). Unknown keys are refused.",
    }
