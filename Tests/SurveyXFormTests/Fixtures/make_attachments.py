#!/usr/bin/env python3
"""A form that names files, as field teams write one (Tests/EndToEndTests/FormAttachmentTests.swift
publishes it with its files on a real server): villages chosen from a CSV file and filtered by the
district chosen before, crops from another CSV file (several may be chosen), a village's
population looked up with pulldata() and a constraint over it, and an image in a label.

It writes `village_visit.xlsx` (openpyxl) and `village_visit.xml`, the XForm pyxform 4.5.0
makes of it with the arguments the server passes (`xls2xform --skip_validate`), and the files
it names: `villages.csv`, `crops.csv` (as Excel writes CSV in a locale whose decimal mark is a
comma: `;` between fields, a byte order mark, CRLF) and `map.png`. Run it with the
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


VILLAGES = (
    "name,label,district,population\n"
    "v1,Upper Valley,north,120\n"
    "v2,\"Lower Valley, by the river\",north,40\n"
    "v3,\"Hill \"\"Top\"\"\",south,300\n"
    "v4,\"Long\nName\",south,8\n"
)
CROPS = "\ufeffname;label\r\nmaize;Maize\r\nbeans;Beans\r\ncassava;Cassava\r\n"


def png():
    """A 1x1 grey PNG."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b""))


def main():
    for name, data in (("villages.csv", VILLAGES.encode()), ("crops.csv", CROPS.encode()), ("map.png", png())):
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)
    xlsx = os.path.join(HERE, "village_visit.xlsx")
    xml = os.path.join(HERE, "village_visit.xml")
    write_xlsx(xlsx, SHEETS)
    subprocess.run([XLS2XFORM, "--skip_validate", xlsx, xml], check=True, capture_output=True)
    print("wrote village_visit.xlsx, village_visit.xml, villages.csv, crops.csv and map.png")


if __name__ == "__main__":
    main()
