#!/usr/bin/env python3
"""Writes the XLSForms that pyxform 4.5.0 converts with warnings (its `--json` report's code 101),
for the tests that warnings are kept and shown with a version. Kept apart from make_xforms.py, whose
helper it uses; run it the same way:

    .build/venv-forms/bin/python Tests/SurveyXFormTests/Fixtures/make_warned_xlsforms.py

Each form prints the warnings pyxform gives it, which the tests expect word for word.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from make_xforms import HERE, XLS2XFORM, write_xlsx  # noqa: E402

WARNED = {
    # Converts, with four warnings: a language without a code ("English"), a language missing the
    # hint column the other has, a repeat without a label, an image question without max-pixels.
    "warnings": {
        "survey": [
            ["type", "name", "label::English", "label::Français (fr)", "hint::English"],
            ["text", "name", "Name", "Nom", "The full name"],
            ["begin_repeat", "children"],
            ["text", "child_name", "Child's name", "Nom de l'enfant"],
            ["end_repeat"],
            ["image", "house_photo", "A photo of the house", "Une photo de la maison"],
        ],
        "settings": [["form_title", "form_id", "default_language"], ["Visit with warnings", "visit_warnings", "English"]],
    },
}


def warnings_of(xlsx):
    """pyxform's warnings on converting `xlsx` (it must convert)."""
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([XLS2XFORM, "--json", "--skip_validate", xlsx, os.path.join(tmp, "form.xml")],
                              check=True, capture_output=True, text=True)
    line = [l for l in (done.stdout + done.stderr).splitlines() if l.startswith("{")][-1]
    report = json.loads(line)
    assert report["code"] == 101, report
    return report["warnings"]


def write_warned_forms():
    for name, sheets in WARNED.items():
        xlsx = os.path.join(HERE, name + ".xlsx")
        write_xlsx(xlsx, sheets)
        print("wrote", os.path.relpath(xlsx), "; pyxform warns:")
        for warning in warnings_of(xlsx):
            print("  " + warning)


if __name__ == "__main__":
    write_warned_forms()
