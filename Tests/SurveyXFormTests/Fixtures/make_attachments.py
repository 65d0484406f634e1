#!/usr/bin/env python3
"""A form that names files, as field teams write one (Tests/EndToEndTests/FormAttachmentTests.swift
publishes it with its files on a real server): villages chosen from a CSV file and filtered by the
district chosen before, crops from another CSV file (several may be chosen), a village's
population looked up with pulldata() and a constraint over it, and an image in a label.

It writes `village_visit.xlsx` (openpyxl) and `village_visit.xml`, the XForm pyxform 4.5.0
makes of it with the arguments the server passes (`xls2xform --skip_validate`). Run it with the
python of the venv `scripts/setup.sh` makes:

    .build/venv-forms/bin/python Tests/SurveyXFormTests/Fixtures/make_attachments.py

It is deterministic, like make_corpus.py: a rerun rewrites the same bytes.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_corpus import write_xlsx  # noqa: E402  (the same fixed timestamps and zip dates)

HERE = os.path.dirname(os.path.abspath(__file__))
XLS2XFORM = os.path.join(os.path.dirname(sys.executable), "xls2xform")

SHEETS = {
    "survey": [
        ["type", "name", "label", "media::image", "required", "choice_filter", "calculation", "constraint", "constraint_message"],
        ["select_one districts", "district", "District", "", "yes", "", "", "", ""],
        ["select_one_from_file villages.csv", "village", "Village", "", "yes", "district=${district}", "", "", ""],
        ["calculate", "population", "", "", "", "", "pulldata('villages', 'population', 'name', ${village})", "", ""],
        ["integer", "households", "Households visited", "map.png", "yes", "", "",
         ". <= pulldata('villages', 'population', 'name', ${village})", "No more households than people"],
        ["select_multiple_from_file crops.csv", "crops", "Crops grown", "", "", "", "", "", ""],
    ],
    "choices": [["list_name", "name", "label"], ["districts", "north", "North"], ["districts", "south", "South"]],
    "settings": [["form_title", "form_id", "version"], ["Village visit", "village_visit", "1"]],
}


def main():
    xlsx = os.path.join(HERE, "village_visit.xlsx")
    xml = os.path.join(HERE, "village_visit.xml")
    write_xlsx(xlsx, SHEETS)
    subprocess.run([XLS2XFORM, "--skip_validate", xlsx, xml], check=True, capture_output=True)
    print("wrote village_visit.xlsx and village_visit.xml")


if __name__ == "__main__":
    main()
