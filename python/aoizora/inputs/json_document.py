"""What a JSON document is, in a few words, for a refusal that found another kind of file
where it wanted one of ours: "a Perfetto/Chrome trace (traceEvents)", "a file of schema
'aoizora.prices/1'", "a JSON object without a 'schema' key (keys: a, b, c)".

    describe(value) -> str    the parsed document (json.loads); never raises
"""

from __future__ import annotations

_KEYS_SHOWN = 5


def _keys(d: dict) -> str:
    keys = list(d)
    shown = ", ".join(str(k) for k in keys[:_KEYS_SHOWN])
    return shown + (f", ... ({len(keys)} in all)" if len(keys) > _KEYS_SHOWN else "")


def describe(value) -> str:
    if isinstance(value, dict):
        schema = value.get("schema")
        if "traceEvents" in value:
            return "a Perfetto/Chrome trace (traceEvents)"
        if schema is None:
            return ("an empty JSON object" if not value
                    else f"a JSON object without a 'schema' key (keys: {_keys(value)})")
        return f"a file of schema {schema!r}"
    if isinstance(value, list):
        if value and all(isinstance(e, dict) and "ph" in e for e in value[:10]):
            return "a Perfetto/Chrome trace (an array of events)"
        return f"a JSON array of {len(value)} item{'s' if len(value) != 1 else ''}"
    if value is None:
        return "JSON null"
    if isinstance(value, bool):
        return "a JSON boolean"
    if isinstance(value, (int, float)):
        return "a JSON number"
    return "a JSON string"
