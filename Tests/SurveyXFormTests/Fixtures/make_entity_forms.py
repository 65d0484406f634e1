#!/usr/bin/env python3
"""A registration form and a follow-up form of one entity list (ODK Entities, as pyxform 4.5.0
writes them), for Tests/SurveyXFormTests/EntityDeclarationTests.swift (the XForms read into
definitions) and Tests/EndToEndTests/EntityListTests.swift (published on a real server, filled in
as ODK Collect sends them):

- household_registration: creates a `households` entity, its label from the head's name, three
  answers saved to properties (`head`, `members`, `village`);
- household_visit: picks a household from `households.csv` (the entity list the server serves)
  and updates it: `members` saved again, a label of its own, and one answer that is not saved;
- household_move: picks a household the same way and saves only `village` (no label: the
  entity keeps its own), so a move and a visit made from one version change different properties;
- household_roster (Entities 2025.1): registers a household (`households`, at the root) and each
  of its members in a repeat (`members`, one entity per repeat instance; `save_to` names the list
  as `members#age`);
- member_visit (2025.1): a repeat of check-ups, each picking a member from `members.csv` and
  updating that member's `age`;
- farm_survey (2025.1): two lists written from two groups (`farms` from `farm`, `wells` from
  `well`), each entity declared in its group.

It writes `<name>.xlsx` (openpyxl, with make_corpus.py's fixed timestamps) and `<name>.xml`, the
XForm pyxform 4.5.0 makes of it as the server does (`xls2xform --skip_validate`), which ODK
Validate checks. Run it with the python of the venv `scripts/setup.sh` makes:

    .build/venv-forms/bin/python Tests/SurveyXFormTests/Fixtures/make_entity_forms.py
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_corpus import HERE, XLS2XFORM, odk_validate, write_xlsx  # noqa: E402

SURVEY = ["type", "name", "label", "required", "save_to", "constraint"]


def row(type_, name="", label="", **columns):
    line = {"type": type_, "name": name, "label": label, **columns}
    unknown = set(line) - set(SURVEY)
    if unknown:
        raise SystemExit(f"columns not in the header: {sorted(unknown)}")
    return [line.get(column, "") for column in SURVEY]


FORMS = {
    "household_registration": {
        "survey": [
            SURVEY,
            row("text", "head_name", "Name of the head of household", required="yes", save_to="head"),
            row("integer", "member_count", "People in the household", required="yes", save_to="members",
                constraint=". >= 1 and . <= 40"),
            row("text", "village_name", "Village", save_to="village"),
        ],
        "settings": [["form_title", "form_id", "version"], ["Household registration", "household_registration", "1"]],
        "entities": [["list_name", "label"], ["households", "concat('Household of ', ${head_name})"]],
    },
    "household_visit": {
        "survey": [
            SURVEY,
            row("select_one_from_file households.csv", "household", "Which household?", required="yes"),
            row("integer", "members_now", "People in the household now", required="yes", save_to="members"),
            row("text", "remarks", "Remarks"),
        ],
        "settings": [["form_title", "form_id", "version"], ["Household visit", "household_visit", "1"]],
        "entities": [["list_name", "entity_id", "label"],
                     ["households", "${household}", "concat('Household of ', ${members_now}, ' people')"]],
    },
    "household_roster": {
        "survey": [
            SURVEY,
            row("text", "head_name", "Name of the head of household", required="yes", save_to="households#head"),
            row("text", "village_name", "Village", save_to="households#village"),
            row("begin_repeat", "member", "Member"),
            row("text", "member_name", "Name", required="yes", save_to="members#full_name"),
            row("integer", "member_age", "Age", save_to="members#age", constraint=". >= 0 and . <= 130"),
            row("end_repeat"),
        ],
        "settings": [["form_title", "form_id", "version"], ["Household roster", "household_roster", "1"]],
        "entities": [["list_name", "label"],
                     ["households", "concat('Household of ', ${head_name})"],
                     ["members", "${member_name}"]],
    },
    "member_visit": {
        "survey": [
            SURVEY,
            row("text", "visitor", "Your name"),
            row("begin_repeat", "checkup", "Check-up"),
            row("select_one_from_file members.csv", "member", "Who?", required="yes"),
            row("integer", "age_now", "Age now", required="yes", save_to="age"),
            row("end_repeat"),
        ],
        "settings": [["form_title", "form_id", "version"], ["Member visit", "member_visit", "1"]],
        "entities": [["list_name", "entity_id"], ["members", "${member}"]],
    },
    "farm_survey": {
        "survey": [
            SURVEY,
            row("begin_group", "farm", "Farm"),
            row("text", "farm_name", "Farm", required="yes", save_to="farms#title"),
            row("end_group"),
            row("begin_group", "well", "Well"),
            row("integer", "well_depth", "Depth (m)", save_to="wells#depth"),
            row("end_group"),
        ],
        "settings": [["form_title", "form_id", "version"], ["Farm survey", "farm_survey", "1"]],
        "entities": [["list_name", "label"], ["farms", "${farm_name}"], ["wells", "concat('Well of ', ${farm_name})"]],
    },
    "household_checkup": {
        "survey": [
            SURVEY,
            row("select_one_from_file households.csv", "household", "Which household?", required="yes"),
            row("integer", "members_now", "People in the household now", required="yes", save_to="households#members"),
            row("begin_repeat", "checkup", "Check-up"),
            row("select_one_from_file members.csv", "member", "Who?", required="yes"),
            row("integer", "age_now", "Age now", required="yes", save_to="members#age"),
            row("end_repeat"),
        ],
        "settings": [["form_title", "form_id", "version"], ["Household check-up", "household_checkup", "1"]],
        "entities": [["list_name", "entity_id"], ["households", "${household}"], ["members", "${member}"]],
    },
    "household_move": {
        "survey": [
            SURVEY,
            row("select_one_from_file households.csv", "household", "Which household?", required="yes"),
            row("text", "village_now", "Village the household lives in now", required="yes", save_to="village"),
        ],
        "settings": [["form_title", "form_id", "version"], ["Household move", "household_move", "1"]],
        "entities": [["list_name", "entity_id"], ["households", "${household}"]],
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
