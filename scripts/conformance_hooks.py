"""schemathesis hooks for scripts/conformance.sh (loaded through SCHEMATHESIS_HOOKS).

tus PATCH bodies are `application/offset+octet-stream`: raw bytes, serialized like
`application/octet-stream`.
"""
import schemathesis

schemathesis.serializer.alias("application/offset+octet-stream", "application/octet-stream")
