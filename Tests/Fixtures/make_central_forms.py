#!/usr/bin/env python3
"""The XLSForms of ODK Central's form routes. `central_sites.xlsx`, which
`Tests/Central/test_pyodk.py` creates through pyodk's `forms.create`: sites chosen from a CSV
file the form names (`select_one_from_file sites.csv`), which pyodk uploads to the draft before
publishing it. `central_no_id.xlsx` has no settings sheet, so its form id is the one the
`X-XlsForm-FormId-Fallback` header names (Tests/EndToEndTests/CentralFormsTests.swift). pyodk's
venv has no openpyxl, so the workbooks are committed; run this with the python of the venv
`scripts/setup.sh` makes for pyxform to write them again:

    .build/venv-forms/bin/python Tests/Fixtures/make_central_forms.py

It is deterministic (make_corpus.py's fixed timestamps): a rerun rewrites the same bytes.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "SurveyXFormTests", "Fixtures"))
from make_corpus import write_xlsx  # noqa: E402  (a path of this repository)

SHEETS = {
    "survey": [
        ["type", "name", "label"],
        ["select_one_from_file sites.csv", "site", "Site"],
        ["integer", "trees", "Trees counted"],
    ],
    "settings": [["form_title", "form_id", "version"], ["Site count", "central_sites", "1"]],
}

NO_ID = {"survey": [["type", "name", "label"], ["text", "plot", "Plot"]]}

if __name__ == "__main__":
    write_xlsx(os.path.join(HERE, "central_sites.xlsx"), SHEETS)
    write_xlsx(os.path.join(HERE, "central_no_id.xlsx"), NO_ID)
