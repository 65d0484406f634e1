#!/usr/bin/env python3
"""XLSForms written in the shape of real field surveys, for the corpus of real forms
(Tests/EndToEndTests/RealFormsCorpusTests.swift publishes each, with the files attachments.txt
names, on a real server). They use what such forms use and surveyd's first corpus did not: an
OpenStreetMap mapping form with a start-geopoint and photos limited by max-pixels, a household
roster read back with indexed-repeat and labels that show answers, a market price form with
pulldata, dynamic defaults and triggers (setvalue on events), every widget pyxform writes
(range, rank, acknowledge, hidden, audio, video, background audio), a form with its own
submission URL, an encrypted one, cascading selects with the same choice name in two districts,
the same question name in two groups, and entity registration.

Each is converted by pyxform 4.5.0 and checked by ODK Validate here, as ODK Central would before
publishing it; only the `.xlsx` is kept (the server converts it).

    .build/venv-forms/bin/python Tests/SurveyXFormTests/Fixtures/corpus/make_surveys.py
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from make_corpus import XLS2XFORM, odk_validate, rows, write_xlsx  # noqa: E402

S = ["type", "name", "label", "hint", "required", "required_message", "relevant", "constraint", "constraint_message",
     "calculation", "default", "trigger", "appearance", "parameters", "choice_filter", "repeat_count", "guidance_hint", "read_only"]
C = ["list_name", "name", "label", "district"]


def survey(*lines):
    return rows(S, *lines)


def choices(*lines):
    return rows(C, *[dict(zip(["list_name", "name", "label", "district"], line)) for line in lines])


def settings(**values):
    keys = list(values)
    return [keys, [values[k] for k in keys]]


FORMS = {
    "osm_buildings": {
        "survey": survey(
            {"type": "start", "name": "start"}, {"type": "end", "name": "end"}, {"type": "today", "name": "today"},
            {"type": "deviceid", "name": "deviceid"}, {"type": "username", "name": "username"},
            {"type": "email", "name": "email"}, {"type": "phonenumber", "name": "phonenumber"},
            {"type": "start-geopoint", "name": "warmup"},
            {"type": "begin_group", "name": "building", "label": "Building"},
            {"type": "geopoint", "name": "location", "label": "Where is the building?", "required": "yes",
             "parameters": "capture-accuracy=10 warning-accuracy=20"},
            {"type": "select_one building_use", "name": "building_use", "label": "What is the building used for?",
             "appearance": "minimal", "required": "yes"},
            {"type": "text", "name": "building_use_other", "label": "Which other use?", "relevant": "${building_use} = 'other'"},
            {"type": "integer", "name": "levels", "label": "How many floors above ground?", "constraint": ". >= 1 and . <= 60",
             "constraint_message": "Between 1 and 60 floors"},
            {"type": "select_one roof", "name": "roof_material", "label": "Roof material", "appearance": "quick"},
            {"type": "image", "name": "photo", "label": "Photo of the building", "parameters": "max-pixels=1024"},
            {"type": "end_group"},
            {"type": "calculate", "name": "xid", "calculation": "once(uuid())"},
            {"type": "note", "name": "summary", "label": "A ${building_use} of ${levels} floors"},
        ),
        "choices": choices(
            ["building_use", "house", "House"], ["building_use", "school", "School"], ["building_use", "clinic", "Clinic"],
            ["building_use", "shop", "Shop"], ["building_use", "other", "Other"],
            ["roof", "metal", "Metal sheets"], ["roof", "tiles", "Tiles"], ["roof", "thatch", "Thatch"], ["roof", "concrete", "Concrete"],
        ),
        "settings": settings(form_title="OSM building mapping", form_id="osm_buildings", version="2026010101"),
    },
    "household_roster": {
        "survey": survey(
            {"type": "start", "name": "start"}, {"type": "end", "name": "end"},
            {"type": "text", "name": "respondent", "label": "Name of the respondent", "required": "yes"},
            {"type": "integer", "name": "hh_size", "label": "How many people live in the household of ${respondent}?",
             "required": "yes", "constraint": ". >= 1 and . <= 30"},
            {"type": "begin_repeat", "name": "member", "label": "Member", "repeat_count": "${hh_size}"},
            {"type": "calculate", "name": "member_no", "calculation": "position(..)"},
            {"type": "text", "name": "member_name", "label": "Name of member ${member_no}", "required": "yes"},
            {"type": "integer", "name": "member_age", "label": "How old is ${member_name}?", "required": "yes",
             "constraint": ". >= 0 and . <= 120", "constraint_message": "Between 0 and 120 years"},
            {"type": "select_one sex", "name": "member_sex", "label": "Sex of ${member_name}", "required": "yes"},
            {"type": "select_one yesno", "name": "in_school", "label": "Does ${member_name} go to school?",
             "relevant": "${member_age} >= 5 and ${member_age} <= 18"},
            {"type": "end_repeat"},
            {"type": "calculate", "name": "head_name", "calculation": "indexed-repeat(${member_name}, ${member}, 1)"},
            {"type": "calculate", "name": "head_age", "calculation": "indexed-repeat(${member_age}, ${member}, 1)"},
            {"type": "note", "name": "head_note", "label": "The head of the household is ${head_name}, ${head_age} years old"},
            {"type": "select_one yesno", "name": "head_confirmed", "label": "Is ${head_name} the head of the household?",
             "required": "yes"},
            {"type": "calculate", "name": "children", "calculation": "count(${member_age}[. < 18])"},
        ),
        "choices": choices(["sex", "female", "Female"], ["sex", "male", "Male"], ["yesno", "yes", "Yes"], ["yesno", "no", "No"]),
        "settings": settings(form_title="Household roster", form_id="household_roster_2026"),
    },
    "market_prices": {
        "survey": survey(
            {"type": "today", "name": "today"},
            {"type": "select_one market", "name": "market", "label": "Market", "required": "yes", "appearance": "minimal"},
            {"type": "begin_repeat", "name": "item", "label": "Commodity"},
            {"type": "select_one commodity", "name": "commodity", "label": "Commodity", "required": "yes"},
            {"type": "calculate", "name": "last_price", "calculation": "pulldata('prices', 'price', 'name', ${commodity})"},
            {"type": "calculate", "name": "unit", "calculation": "pulldata('prices', 'unit', 'name', ${commodity})"},
            {"type": "decimal", "name": "price", "label": "Price of one ${unit}", "hint": "Last month: ${last_price}",
             "required": "yes", "required_message": "Say the price, or 0 if not sold",
             "constraint": ". >= 0 and . <= ${last_price} * 3", "constraint_message": "More than three times last month's price"},
            {"type": "end_repeat"},
            {"type": "note", "name": "thanks", "label": "${count_items} prices recorded at ${market}"},
            {"type": "calculate", "name": "count_items", "calculation": "count(${item})"},
        ),
        "choices": choices(["market", "kariakoo", "Kariakoo"], ["market", "mwenge", "Mwenge"],
                           ["commodity", "maize", "Maize flour"], ["commodity", "beans", "Beans"], ["commodity", "rice", "Rice"]),
        "settings": settings(form_title="Market prices", form_id="market_prices"),
    },
    "dynamic_defaults": {
        "survey": survey(
            {"type": "date", "name": "visit_date", "label": "Date of the visit", "default": "today()", "required": "yes"},
            {"type": "text", "name": "visit_id", "label": "Visit id", "default": "concat('V-', substr(uuid(), 0, 8))", "read_only": "yes"},
            {"type": "integer", "name": "adults", "label": "Adults present", "required": "yes"},
            {"type": "dateTime", "name": "adults_changed", "label": "When the number of adults was last changed",
             "calculation": "now()", "trigger": "${adults}", "read_only": "yes"},
            {"type": "begin_repeat", "name": "sample", "label": "Water sample"},
            {"type": "dateTime", "name": "taken_at", "label": "Taken at", "default": "now()"},
            {"type": "decimal", "name": "chlorine", "label": "Free chlorine (mg/l)", "constraint": ". >= 0 and . <= 5"},
            {"type": "end_repeat"},
            {"type": "background-audio", "name": "interview_audio"},
        ),
        "choices": choices(),
        "settings": settings(form_title="Water quality visit", form_id="water_quality_visit"),
    },
    "every_widget": {
        "survey": survey(
            {"type": "text", "name": "enumerator", "label": "Enumerator", "guidance_hint": "As on your badge"},
            {"type": "range", "name": "satisfaction", "label": "How satisfied are you?", "parameters": "start=1 end=5 step=1",
             "required": "yes"},
            {"type": "range", "name": "distance", "label": "Distance to water (km)", "parameters": "start=0 end=10 step=0.5"},
            {"type": "rank names", "name": "priorities", "label": "Rank these needs"},
            {"type": "acknowledge", "name": "consent", "label": "I agree to take part", "required": "yes"},
            {"type": "hidden", "name": "study_arm", "default": "B"},
            {"type": "image", "name": "selfie", "label": "Photo", "parameters": "max-pixels=640", "appearance": "new-front"},
            {"type": "audio", "name": "voice", "label": "Say your name", "parameters": "quality=voice-only"},
            {"type": "video", "name": "clip", "label": "A short video"},
            {"type": "file", "name": "document", "label": "A document"},
            {"type": "barcode", "name": "card", "label": "Scan the card"},
            {"type": "select_multiple names", "name": "liked", "label": "Which do you like?", "appearance": "columns"},
            {"type": "select_one likert", "name": "agree", "label": "I trust the water", "appearance": "likert"},
            {"type": "note", "name": "end_note", "label": "Thank you, ${enumerator}"},
        ),
        "choices": choices(["names", "water", "Water"], ["names", "school", "School"], ["names", "road", "Road"],
                           ["likert", "1", "Disagree"], ["likert", "2", "Neutral"], ["likert", "3", "Agree"]),
        "settings": settings(form_title="Every widget", form_id="every_widget"),
    },
    "submission_url": {
        "survey": survey({"type": "text", "name": "name", "label": "Name", "required": "yes"},
                         {"type": "integer", "name": "age", "label": "Age", "constraint": ". >= 0"}),
        "choices": choices(),
        "settings": settings(form_title="Registration to another server", form_id="registration_elsewhere",
                             submission_url="https://collect.example.org/submission"),
    },
    "encrypted": {
        "survey": survey({"type": "text", "name": "patient", "label": "Patient", "required": "yes"},
                         {"type": "select_one yesno", "name": "positive", "label": "Test positive?"}),
        "choices": choices(["yesno", "yes", "Yes"], ["yesno", "no", "No"]),
        "settings": settings(form_title="Encrypted case report", form_id="encrypted_case",
                             public_key="MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAxQZ3X7w1FRsc2e3YwGfDrG0fmUUxkAcaVnMi0v3zZV7s0Sku4kp2Xh9bTB7R0dBbcM9yFOr2GmPp4M7nZpI1x3k5aS0lz5dWl3m5P9Ax5YF5CS7d0mDzoX3rlBJZfQKkQ6x0AC7c3G+QM2TGbUxWfJ8rT6qG0TZk7O4V5ezJqGxk+OyA3j5m5m1Tb1v1d3uB5z3p6h9hZPbV8lj2Ra8HhIh5pcO8Lz8CkWlD5CYQJ3bIn3Vr5A5v5Ry8A1sE5PEqF0cfq2y6m1FJ1s1a8LPFJgGhx0ELkTjzK5xJcnHdiMSZpFvNBGq0lYx5lGQ9XzzXzPZ7Nv1A2hNhSCKCt6mG4wIDAQAB"),
    },
    "cascading_duplicates": {
        "survey": survey(
            {"type": "select_one district", "name": "district", "label": "District", "required": "yes"},
            {"type": "select_one village", "name": "village", "label": "Village", "required": "yes", "choice_filter": "district=${district}"},
        ),
        "choices": choices(["district", "north", "North"], ["district", "south", "South"],
                           ["village", "mji_mpya", "Mji Mpya", "north"], ["village", "kati", "Kati", "north"],
                           ["village", "mji_mpya", "Mji Mpya", "south"], ["village", "pwani", "Pwani", "south"]),
        "settings": settings(form_title="Village visit with shared names", form_id="cascading_duplicates", allow_choice_duplicates="yes"),
    },
    "repeated_names": {
        "survey": survey(
            {"type": "begin_group", "name": "boys", "label": "Boys"},
            {"type": "integer", "name": "count", "label": "How many boys?", "required": "yes"},
            {"type": "end_group"},
            {"type": "begin_group", "name": "girls", "label": "Girls"},
            {"type": "integer", "name": "count", "label": "How many girls?", "required": "yes"},
            {"type": "end_group"},
        ),
        "choices": choices(),
        "settings": settings(form_title="Class count", form_id="class_count"),
    },
    "entity_registration": {
        "survey": survey({"type": "text", "name": "tree_species", "label": "Species", "required": "yes"},
                         {"type": "geopoint", "name": "location", "label": "Location", "required": "yes"}),
        "choices": choices(),
        "settings": settings(form_title="Tree registration", form_id="tree_registration"),
        "entities": [["list_name", "label"], ["trees", "concat(${tree_species}, ' tree')"]],
    },
}


def main():
    for name, sheets in FORMS.items():
        xlsx = os.path.join(HERE, "surveys", name + ".xlsx")
        sheets = {k: v for k, v in sheets.items() if k != "choices" or len(v) > 1}
        write_xlsx(xlsx, sheets)
        with tempfile.TemporaryDirectory() as work:
            out = os.path.join(work, "form.xml")
            result = subprocess.run([XLS2XFORM, "--json", "--skip_validate", xlsx, out], capture_output=True, text=True)
            if result.returncode != 0 or '"code": 999' in result.stdout + result.stderr:
                raise SystemExit(f"pyxform refused {name}.xlsx:\n{result.stdout}{result.stderr}")
            odk_validate(out)
        print("wrote", os.path.relpath(xlsx))


if __name__ == "__main__":
    main()
