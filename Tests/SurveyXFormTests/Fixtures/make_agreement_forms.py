#!/usr/bin/env python3
"""Small XLSForms for Tests/EndToEndTests/JavaRosaAgreementTests.swift, which publishes them (with
the corpus) on a real server, has JavaRosa fill and judge instances of each, and sends every
instance through the OpenRosa door. Each one exercises what a server most easily reads differently
from ODK Collect:

- agreement_numbers: decimals with very large and very small values (Collect writes them as
  Java's Double.toString does: 1.5E7, 5.0E-4), integers near 2^31, a geopoint, constraints,
  required and relevance;
- agreement_roster: a repeat whose count is a question (repeat_count), relevance and constraints
  inside it, a repeat without a count;
- agreement_filtered: select_one with choice_filter (on an answer and on a constant), a
  select_multiple with a constraint, a question relevant on a selection.

It writes `<name>.xlsx` (openpyxl, with make_corpus.py's fixed timestamps) and `<name>.xml`, the
XForm pyxform 4.5.0 makes of it as the server does (`xls2xform --skip_validate`), which ODK
Validate checks. Run it with the python of the venv `scripts/setup.sh` makes:

    .build/venv-forms/bin/python Tests/SurveyXFormTests/Fixtures/make_agreement_forms.py
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_corpus import HERE, XLS2XFORM, odk_validate, write_xlsx  # noqa: E402

SURVEY = ["type", "name", "label", "required", "relevant", "constraint", "constraint_message",
          "calculation", "choice_filter", "repeat_count"]


def row(type_, name="", label="", **columns):
    line = {"type": type_, "name": name, "label": label, **columns}
    unknown = set(line) - set(SURVEY)
    if unknown:
        raise SystemExit(f"columns not in the header: {sorted(unknown)}")
    return [line.get(column, "") for column in SURVEY]


FORMS = {
    "agreement_numbers": {
        "survey": [
            SURVEY,
            row("decimal", "amount", "Amount paid"),
            row("decimal", "share", "Share of the harvest sold", constraint=". > 0 and . < 1",
                constraint_message="A share between 0 and 1"),
            row("decimal", "budget", "Yearly budget", required="yes", constraint=". >= 1000000",
                constraint_message="At least a million"),
            row("integer", "count", "Animals counted"),
            row("integer", "year", "Year built", constraint=". >= 1900 and . <= 2100",
                constraint_message="A year between 1900 and 2100"),
            row("geopoint", "site", "Where is it?", required="yes"),
            row("decimal", "price", "Price per animal", required="yes", relevant="${count} > 0"),
            row("text", "note", "Anything else?"),
        ],
        "settings": [["form_title", "form_id", "version"], ["Numbers as Collect writes them", "agreement_numbers", "1"]],
    },
    "agreement_roster": {
        "survey": [
            SURVEY,
            row("integer", "members", "People in the household", required="yes", constraint=". >= 0 and . <= 6",
                constraint_message="Between 0 and 6"),
            row("begin_repeat", "person", "Person", repeat_count="${members}"),
            row("text", "pname", "Name", required="yes"),
            row("integer", "page", "Age", required="yes", constraint=". >= 0 and . <= 120",
                constraint_message="Between 0 and 120"),
            row("decimal", "height", "Height (m)", relevant="${page} >= 2", constraint=". > 0.3 and . < 2.5",
                constraint_message="Between 0.3 and 2.5 m"),
            row("select_one yn", "works", "Does this person work?", relevant="${page} >= 15"),
            row("end_repeat"),
            row("begin_repeat", "visit", "Visit"),
            row("date", "vdate", "Date of the visit", required="yes"),
            row("end_repeat"),
            row("calculate", "people_listed", calculation="count(${person})"),
        ],
        "choices": [["list_name", "name", "label"], ["yn", "yes", "Yes"], ["yn", "no", "No"]],
        "settings": [["form_title", "form_id", "version"], ["A counted roster", "agreement_roster", "1"]],
    },
    "agreement_filtered": {
        "survey": [
            SURVEY,
            row("select_one regions", "region", "Region", required="yes"),
            row("select_one districts", "district", "District", required="yes", choice_filter="region = ${region}"),
            row("select_multiple crops", "crops", "Crops grown",
                constraint="not(selected(., 'none') and count-selected(.) > 1)", constraint_message="'None' goes alone"),
            row("text", "other_crop", "Which other crop?", required="yes", relevant="selected(${crops}, 'other')"),
            row("select_one districts", "market", "Market district (in the south)", choice_filter="region = 'south'"),
            row("integer", "plots", "Plots", relevant="count-selected(${crops}) >= 2", constraint=". <= 10",
                constraint_message="At most 10 plots"),
        ],
        "choices": [
            ["list_name", "name", "label", "region"],
            ["regions", "north", "North", ""],
            ["regions", "south", "South", ""],
            ["districts", "lake", "Lake", "north"],
            ["districts", "hill", "Hill", "north"],
            ["districts", "delta", "Delta", "south"],
            ["districts", "coast", "Coast", "south"],
            ["crops", "maize", "Maize", ""],
            ["crops", "beans", "Beans", ""],
            ["crops", "cassava", "Cassava", ""],
            ["crops", "other", "Other", ""],
            ["crops", "none", "None", ""],
        ],
        "settings": [["form_title", "form_id", "version"], ["Filtered choices", "agreement_filtered", "1"]],
    },
}


def main():
    for name, sheets in FORMS.items():
        xlsx = os.path.join(HERE, name + ".xlsx")
        write_xlsx(xlsx, sheets)
        out = os.path.join(HERE, name + ".xml")
        result = subprocess.run([XLS2XFORM, "--json", "--skip_validate", xlsx, out], capture_output=True, text=True)
        if result.returncode != 0 or '"code": 999' in result.stdout + result.stderr:
            raise SystemExit(f"pyxform refused {name}.xlsx:\n{result.stdout}{result.stderr}")
        odk_validate(out)
        print("wrote", os.path.relpath(xlsx), "and", os.path.relpath(out))


if __name__ == "__main__":
    main()
