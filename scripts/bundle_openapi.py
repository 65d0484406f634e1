#!/usr/bin/env python3
"""Writes Schemas/openapi.json as ONE self-contained document: every relative $ref to a
Schemas/*.schema.json file is inlined under components/schemas, so a client that fetches only
`GET /v1/openapi.json` can resolve everything.

    python3 scripts/bundle_openapi.py                 # to stdout
    python3 scripts/bundle_openapi.py -o FILE         # to a file
    python3 scripts/bundle_openapi.py --check FILE    # exit 1 if FILE is not the current bundle

The repository keeps the split documents (Schemas/openapi.json + Schemas/*.schema.json) as the
source; this bundle is derived from them. Standard library only.
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMAS = os.path.join(ROOT, "Schemas")


def component_name(filename):
    stem = filename[: -len(".schema.json")]
    return "".join(part.capitalize() for part in re.split(r"[-_.]", stem))


def bundle():
    with open(os.path.join(SCHEMAS, "openapi.json")) as f:
        doc = json.load(f)
    components = doc.setdefault("components", {}).setdefault("schemas", {})
    # A component that is exactly a whole-file ref (Problem → problem.schema.json) takes the file's
    # content under its own name; every other file gets a name of its own.
    names = {}
    for name, schema in components.items():
        if isinstance(schema, dict) and set(schema) == {"$ref"} and schema["$ref"].endswith(".schema.json"):
            names[schema["$ref"]] = name
    for filename in sorted(os.listdir(SCHEMAS)):
        if filename.endswith(".schema.json") and filename not in names:
            name = component_name(filename)
            if name in components:
                sys.exit(f"bundle: component name {name} for {filename} is taken")
            names[filename] = name

    def target(ref, current_file):
        """The bundled pointer for a $ref found in `current_file` (None: openapi.json itself)."""
        file, _, fragment = ref.partition("#")
        if not file:
            if current_file is None:
                return ref
            file = current_file
        if file not in names:
            sys.exit(f"bundle: unknown $ref {ref}")
        return f"#/components/schemas/{names[file]}" + fragment

    def rewrite(node, current_file):
        if isinstance(node, dict):
            out = {}
            for k, v in node.items():
                if k == "$ref" and isinstance(v, str):
                    out[k] = target(v, current_file)
                elif k == "$schema" and current_file is not None:
                    continue  # the document's dialect (2020-12) applies
                else:
                    out[k] = rewrite(v, current_file)
            return out
        if isinstance(node, list):
            return [rewrite(v, current_file) for v in node]
        return node

    bundled = rewrite({k: v for k, v in doc.items() if k != "components"}, None)
    bundled_components = rewrite({k: v for k, v in doc["components"].items() if k != "schemas"}, None)
    schemas = {}
    for name, schema in components.items():
        if isinstance(schema, dict) and set(schema) == {"$ref"} and schema["$ref"] in names and names[schema["$ref"]] == name:
            continue  # replaced by the file's content below
        schemas[name] = rewrite(schema, None)
    for filename, name in names.items():
        with open(os.path.join(SCHEMAS, filename)) as f:
            schemas[name] = rewrite(json.load(f), filename)
    bundled_components["schemas"] = dict(sorted(schemas.items()))
    bundled["components"] = bundled_components
    return bundled


def main():
    ap = argparse.ArgumentParser(description="Bundle Schemas/ into one self-contained OpenAPI document.")
    ap.add_argument("-o", "--output")
    ap.add_argument("--check", metavar="FILE")
    args = ap.parse_args()
    text = json.dumps(bundle(), indent=2, ensure_ascii=False) + "\n"
    if args.check:
        with open(args.check) as f:
            current = f.read()
        if json.loads(current) != json.loads(text):
            sys.exit(f"{args.check} is not the bundle of Schemas/: regenerate it with scripts/bundle_openapi.py -o {args.check}")
        return
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
