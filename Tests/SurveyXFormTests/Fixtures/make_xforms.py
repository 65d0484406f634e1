#!/usr/bin/env python3
"""Writes the XLSForms of the SurveyXForm tests with openpyxl and turns each into the XForm that
pyxform 4.5.0 produces (its xls2xform command). The .xml files are kept in the repository, so
the Swift tests need no Python:

    python3 -m venv .build/venv-forms && .build/venv-forms/bin/pip install pyxform==4.5.0 openpyxl
    .build/venv-forms/bin/python Tests/SurveyXFormTests/Fixtures/make_xforms.py

The corpus of forms as field teams write them (health_facility, water_point, every_column,
missing_reference) is make_corpus.py's.
"""
import os
import subprocess
import sys

from openpyxl import Workbook

HERE = os.path.dirname(os.path.abspath(__file__))
XLS2XFORM = os.path.join(os.path.dirname(sys.executable), "xls2xform")

EN, FR = "label::English (en)", "label::Français (fr)"

FORMS = {
    # Every construct surveyd maps: groups, repeats (counted, nested), logic, a note, selects
    # with a filtered list whose choices carry an extra column, two languages, media.
    "household": {
        "survey": [
            ["type", "name", EN, FR, "hint::English (en)", "hint::Français (fr)", "required", "relevant",
             "constraint", "constraint_message::English (en)", "constraint_message::Français (fr)",
             "calculation", "choice_filter", "repeat_count", "appearance"],
            ["note", "welcome", "Thank you for your time", "Merci de votre temps"],
            ["select_one yesno", "consent", "Do you agree to the interview?", "Acceptez-vous l'entretien ?", "", "", "yes"],
            ["date", "visit_date", "Date of the visit", "Date de la visite", "", "", "yes", "", ". <= today()"],
            ["geopoint", "location", "Where is the house?", "Où est la maison ?"],
            ["begin_group", "household", "Household", "Ménage", "", "", "", "${consent} = 'yes'"],
            ["select_one regions", "region", "Region", "Région"],
            ["select_one districts", "district", "District", "District", "", "", "", "", "", "", "", "", "region=${region}"],
            ["integer", "size", "How many people live here?", "Combien de personnes vivent ici ?", "Everyone who slept here last night",
             "Tous ceux qui ont dormi ici", "yes", "", ". >= 1 and . <= 30", "Between 1 and 30 people", "Entre 1 et 30 personnes"],
            ["begin_repeat", "people", "Person", "Personne", "", "", "", "", "", "", "", "", "", "${size}"],
            ["text", "name", "Name", "Nom", "", "", "yes"],
            ["integer", "age", "Age", "Âge", "", "", "", "", ". >= 0 and . <= 120", "Between 0 and 120", "Entre 0 et 120"],
            ["select_one yesno", "school", "In school?", "Scolarisé ?", "", "", "", "${age} >= 5 and ${age} <= 18"],
            ["select_one regions", "birth_region", "Region of birth", "Région de naissance"],
            ["select_one districts", "birth_district", "District of birth", "District de naissance", "", "", "", "", "", "", "", "", "region=${birth_region}"],
            ["begin_repeat", "phones", "Phone", "Téléphone"],
            ["text", "number", "Number", "Numéro", "", "", "", "", "regex(., '[0-9]{8,12}')"],
            ["end_repeat"],
            ["end_repeat"],
            ["calculate", "members", "", "", "", "", "", "", "", "", "", "count(${people})"],
            ["calculate", "eldest", "", "", "", "", "", "", "", "", "", "max(${age})"],
            ["end_group"],
            ["select_multiple assets", "assets", "Which of these do you have?", "Lesquels possédez-vous ?", "", "", "", "", "", "", "", "", "", "", "minimal"],
            ["decimal", "income", "Monthly income", "Revenu mensuel", "", "", "", "selected(${assets}, 'car')", ". > 0"],
            ["image", "house_photo", "A photo of the house", "Une photo de la maison"],
        ],
        "choices": [
            ["list_name", "name", EN, FR, "region"],
            ["yesno", "yes", "Yes", "Oui"],
            ["yesno", "no", "No", "Non"],
            ["regions", "north", "North", "Nord"],
            ["regions", "south", "South", "Sud"],
            ["districts", "d1", "Lakeside", "Bord du lac", "north"],
            ["districts", "d2", "Hills", "Collines", "north"],
            ["districts", "d3", "Delta", "Delta", "south"],
            ["assets", "car", "Car", "Voiture"],
            ["assets", "bike", "Bicycle", "Vélo"],
            ["assets", "radio", "Radio", "Radio"],
        ],
        "settings": [["form_title", "form_id", "version", "default_language"],
                     ["Household roster", "household_roster", "2026120201", "English (en)"]],
    },
    # One language, no settings sheet's default: labels without translations.
    "simple": {
        "survey": [
            ["type", "name", "label", "required", "relevant", "constraint", "constraint_message"],
            ["text", "full_name", "Full name", "yes"],
            ["integer", "age", "Age", "yes", "", ". >= 0", "Not negative"],
            ["select_one yn", "smoker", "Do you smoke?", "", "${age} >= 12"],
            ["time", "start_time", "Start time"],
            ["dateTime", "ended", "Ended at"],
            ["barcode", "code", "Scan the code"],
            ["geotrace", "path", "Walk the path"],
            ["geoshape", "field", "Walk around the field"],
            ["file", "report", "Attach the report"],
        ],
        "choices": [["list_name", "name", "label"], ["yn", "yes", "Yes"], ["yn", "no", "No"]],
        "settings": [["form_title", "form_id"], ["Simple", "simple"]],
    },
    # Refused: choices from a CSV file.
    "csv_choices": {
        "survey": [["type", "name", "label"], ["select_one_from_file villages.csv", "village", "Village"]],
        "settings": [["form_title", "form_id"], ["CSV choices", "csv_choices"]],
    },
    # Refused: pulldata.
    "pulldata": {
        "survey": [["type", "name", "label", "calculation"],
                   ["text", "code", "Code"],
                   ["calculate", "price", "", "pulldata('prices', 'price', 'code', ${code})"]],
        "settings": [["form_title", "form_id"], ["Pulldata", "pulldata"]],
    },
    # Refused: an image in a label.
    "media_label": {
        "survey": [["type", "name", "label", "media::image"], ["text", "name", "Name", "face.png"]],
        "settings": [["form_title", "form_id"], ["Media label", "media_label"]],
    },
    # Refused: a ranking question (odk:rank).
    "rank": {
        "survey": [["type", "name", "label"], ["rank colors", "favourite", "Rank the colours"]],
        "choices": [["list_name", "name", "label"], ["colors", "red", "Red"], ["colors", "blue", "Blue"]],
        "settings": [["form_title", "form_id"], ["Rank", "rank"]],
    },
}


def write_xlsx(path, sheets):
    book = Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    book.save(path)


# XLSForms pyxform refuses: kept as .xlsx only, for the publishing tests.
BROKEN = {
    # A select naming a list the choices sheet does not have.
    "missing_list": {
        "survey": [["type", "name", "label"], ["select_one colours", "favourite", "Favourite colour"]],
        "choices": [["list_name", "name", "label"], ["yn", "yes", "Yes"]],
    },
    # A type pyxform does not know.
    "unknown_type": {
        "survey": [["type", "name", "label"], ["integr", "age", "Age"]],
    },
    # A group that is never closed.
    "unclosed_group": {
        "survey": [["type", "name", "label"], ["begin_group", "g", "G"], ["text", "name", "Name"]],
    },
}


def main():
    # The .xlsx files are kept too: the end-to-end tests publish them as XLSForms.
    for name, sheets in FORMS.items():
        xlsx = os.path.join(HERE, name + ".xlsx")
        write_xlsx(xlsx, sheets)
        out = os.path.join(HERE, name + ".xml")
        subprocess.run([XLS2XFORM, "--pretty_print", xlsx, out], check=True, stdout=subprocess.DEVNULL)
        print("wrote", os.path.relpath(xlsx), "and", os.path.relpath(out))
    for name, sheets in BROKEN.items():
        xlsx = os.path.join(HERE, name + ".xlsx")
        write_xlsx(xlsx, sheets)
        print("wrote", os.path.relpath(xlsx))


if __name__ == "__main__":
    main()
