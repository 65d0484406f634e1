#!/usr/bin/env python3
"""The corpus of XLSForms as field teams write them (Tests/EndToEndTests/XLSFormCorpusTests.swift
publishes each on a real server; Tests/SurveyXFormTests/CorpusTests.swift reads each XForm).

For every good form it writes `<name>.xlsx` (openpyxl) and `<name>.xml`, the XForm pyxform 4.5.0
makes of it with the arguments the server passes (`xls2xform --skip_validate`, no pretty
printing), so the XForm a server serves for the uploaded `.xlsx` is this `.xml` byte for byte;
ODK Validate (the JavaRosa jar in pyxform's wheel) checks each one here too. For every broken
form it writes only the `.xlsx`, and checks that pyxform refuses it.

Run it with the python of the venv `scripts/setup.sh` makes (pyxform, openpyxl; Java for ODK Validate):

    .build/venv-forms/bin/python Tests/SurveyXFormTests/Fixtures/make_corpus.py

It is deterministic: the workbook's timestamps and the zip entries' dates are fixed, so a rerun
rewrites the same bytes (`git status` stays clean). The older fixtures (household, simple, the
refused constructs) are make_xforms.py's.
"""
import io
import os
import re
import subprocess
import sys
import tempfile
import zipfile

from openpyxl import Workbook

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)
XLS2XFORM = os.path.join(BIN, "xls2xform")

# The columns, by language.
def lang(column, *languages):
    return [f"{column}::{language}" for language in languages]

EN, FR, SW, ES = "English (en)", "French (fr)", "Kiswahili (sw)", "Español (es)"


def rows(header, *lines):
    """A sheet from a header and lines given as {column: value} dicts (columns not named are empty)."""
    out = [header]
    for line in lines:
        unknown = set(line) - set(header)
        if unknown:
            raise SystemExit(f"columns not in the header: {sorted(unknown)}")
        out.append([line.get(column, "") for column in header])
    return out


def q(type_, name="", label=(), hint=(), message=(), languages=(EN, FR), **columns):
    """A survey row: label, hint and constraint message given per language, in `languages` order."""
    line = {"type": type_}
    if name:
        line["name"] = name
    for column, texts in (("label", label), ("hint", hint), ("constraint_message", message)):
        for language, text in zip(languages, texts):
            line[f"{column}::{language}"] = text
    line.update(columns)
    return line


# A health facility checklist, as a district health team writes it: a section per group, counts
# with ranges and messages, a required expression, relevance, a total, English and French.
HEALTH = (EN, FR)
HEALTH_SURVEY = rows(
    ["type", "name", *lang("label", *HEALTH), *lang("hint", *HEALTH), "required", "relevant", "constraint",
     *lang("constraint_message", *HEALTH), "calculation", "appearance"],
    q("note", "intro", ("Fill this checklist in during the visit, with the facility in charge.",
                        "Remplissez cette liste pendant la visite, avec le responsable de l'établissement.")),
    q("date", "visit_date", ("Date of the visit", "Date de la visite"), required="yes",
      constraint=". >= date('2024-01-01')", message=("The visit cannot be before 2024", "La visite ne peut pas être avant 2024")),
    q("select_one facility_types", "facility_type", ("Type of facility", "Type d'établissement"), required="yes"),
    q("begin_group", "staff", ("Staff", "Personnel")),
    q("integer", "doctors", ("Doctors on duty", "Médecins en service"), ("Count everyone present today", "Comptez toutes les personnes présentes aujourd'hui"),
      required="yes", constraint=". >= 0 and . <= 50", message=("Between 0 and 50 doctors", "Entre 0 et 50 médecins")),
    q("integer", "nurses", ("Nurses on duty", "Infirmiers en service"), required="yes",
      constraint=". >= 0 and . <= 200", message=("Between 0 and 200 nurses", "Entre 0 et 200 infirmiers")),
    q("integer", "midwives", ("Midwives on duty", "Sages-femmes en service"), relevant="${facility_type} != 'dispensary'",
      constraint=". >= 0 and . <= 50", message=("Between 0 and 50 midwives", "Entre 0 et 50 sages-femmes")),
    q("calculate", "total_staff", calculation="${doctors} + ${nurses}"),
    q("select_one yesno", "staff_trained", ("Has anyone been trained in the last 12 months?", "Quelqu'un a-t-il été formé ces 12 derniers mois ?"),
      relevant="${total_staff} > 0"),
    q("end_group"),
    q("begin_group", "equipment", ("Equipment", "Équipement")),
    q("select_multiple equipment_items", "working_equipment", ("Which equipment is working?", "Quel équipement fonctionne ?"),
      ("Select all that apply", "Sélectionnez tout ce qui s'applique"), appearance="minimal"),
    q("decimal", "fridge_temp", ("Vaccine fridge temperature (°C)", "Température du réfrigérateur à vaccins (°C)"),
      required="yes", relevant="selected(${working_equipment}, 'fridge')",
      constraint=". >= 2 and . <= 8", message=("Between 2 and 8 °C", "Entre 2 et 8 °C")),
    q("text", "broken_equipment", ("What is broken or missing?", "Qu'est-ce qui est en panne ou manque ?"),
      required="count-selected(${working_equipment}) < 3", appearance="multiline"),
    q("end_group"),
    q("begin_group", "medicines", ("Medicines", "Médicaments")),
    q("select_multiple medicine_items", "in_stock", ("Which medicines are in stock?", "Quels médicaments sont en stock ?")),
    q("integer", "stockout_days", ("Days with a stock-out last month", "Jours de rupture de stock le mois dernier"),
      required="yes", constraint=". >= 0 and . <= 31", message=("Between 0 and 31 days", "Entre 0 et 31 jours")),
    q("decimal", "ors_litres", ("Oral rehydration salts in stock (litres)", "Sels de réhydratation orale en stock (litres)"),
      relevant="selected(${in_stock}, 'ors')", constraint=". > 0 and . <= 1000",
      message=("More than 0 and at most 1000 litres", "Plus de 0 et au plus 1000 litres")),
    q("end_group"),
)
HEALTH_CHOICES = rows(
    ["list_name", "name", *lang("label", *HEALTH)],
    {"list_name": "facility_types", "name": "hospital", "label::English (en)": "Hospital", "label::French (fr)": "Hôpital"},
    {"list_name": "facility_types", "name": "health_centre", "label::English (en)": "Health centre", "label::French (fr)": "Centre de santé"},
    {"list_name": "facility_types", "name": "dispensary", "label::English (en)": "Dispensary", "label::French (fr)": "Dispensaire"},
    {"list_name": "yesno", "name": "yes", "label::English (en)": "Yes", "label::French (fr)": "Oui"},
    {"list_name": "yesno", "name": "no", "label::English (en)": "No", "label::French (fr)": "Non"},
    {"list_name": "equipment_items", "name": "fridge", "label::English (en)": "Vaccine fridge", "label::French (fr)": "Réfrigérateur à vaccins"},
    {"list_name": "equipment_items", "name": "scale", "label::English (en)": "Baby scale", "label::French (fr)": "Pèse-bébé"},
    {"list_name": "equipment_items", "name": "autoclave", "label::English (en)": "Autoclave", "label::French (fr)": "Autoclave"},
    {"list_name": "equipment_items", "name": "solar", "label::English (en)": "Solar power", "label::French (fr)": "Énergie solaire"},
    {"list_name": "medicine_items", "name": "amoxicillin", "label::English (en)": "Amoxicillin", "label::French (fr)": "Amoxicilline"},
    {"list_name": "medicine_items", "name": "ors", "label::English (en)": "Oral rehydration salts", "label::French (fr)": "Sels de réhydratation orale"},
    {"list_name": "medicine_items", "name": "act", "label::English (en)": "Malaria treatment (ACT)", "label::French (fr)": "Traitement du paludisme (CTA)"},
)

# A water point inspection: a photo, where it is, the pump's tag, a village filtered by its
# district, one entry per tap (as many as counted), when it opens, English and Kiswahili.
WATER = (EN, SW)
def wq(*args, **kwargs):
    return q(*args, languages=WATER, **kwargs)

WATER_SURVEY = rows(
    ["type", "name", *lang("label", *WATER), *lang("hint", *WATER), "required", "relevant", "constraint",
     *lang("constraint_message", *WATER), "calculation", "choice_filter", "repeat_count", "appearance"],
    wq("dateTime", "inspected_at", ("When did the inspection start?", "Ukaguzi ulianza lini?"), required="yes"),
    wq("select_one districts", "district", ("District", "Wilaya"), required="yes"),
    wq("select_one villages", "village", ("Village", "Kijiji"), ("Only the villages of the district", "Vijiji vya wilaya pekee"),
       required="yes", choice_filter="district=${district}"),
    wq("geopoint", "location", ("Where is the water point?", "Kituo cha maji kiko wapi?"), required="yes"),
    wq("image", "photo", ("A photo of the water point", "Picha ya kituo cha maji")),
    wq("barcode", "pump_tag", ("Scan the tag on the pump", "Changanua lebo ya pampu")),
    wq("select_one point_types", "point_type", ("Type of water point", "Aina ya kituo cha maji"), required="yes"),
    wq("integer", "tap_count", ("How many taps are there?", "Kuna mabomba mangapi?"), required="yes",
       constraint=". >= 1 and . <= 12", message=("Between 1 and 12 taps", "Kati ya mabomba 1 na 12")),
    wq("begin_repeat", "taps", ("Tap", "Bomba"), repeat_count="${tap_count}"),
    wq("select_one yesno", "tap_working", ("Is this tap working?", "Je, bomba hili linafanya kazi?"), required="yes"),
    wq("decimal", "flow_rate", ("Flow rate (litres per minute)", "Kiwango cha mtiririko (lita kwa dakika)"),
       relevant="${tap_working} = 'yes'", required="yes",
       constraint=". > 0 and . <= 60", message=("More than 0 and at most 60 litres a minute", "Zaidi ya 0 na hadi lita 60 kwa dakika")),
    wq("end_repeat"),
    wq("calculate", "taps_recorded", calculation="count(${taps})"),
    wq("time", "opens_at", ("When does it open in the morning?", "Kinafunguliwa saa ngapi asubuhi?")),
    wq("time", "closes_at", ("When does it close?", "Kinafungwa saa ngapi?"), relevant="${opens_at} != ''"),
    wq("select_one yesno", "fee", ("Do people pay for the water?", "Je, watu hulipia maji?"), required="yes"),
    wq("decimal", "fee_per_bucket", ("Price of a 20 litre bucket", "Bei ya ndoo ya lita 20"), relevant="${fee} = 'yes'",
       constraint=". > 0", message=("More than 0", "Zaidi ya 0"), appearance="numbers"),
)
WATER_CHOICES = rows(
    ["list_name", "name", *lang("label", *WATER), "district"],
    {"list_name": "districts", "name": "kilosa", "label::English (en)": "Kilosa", "label::Kiswahili (sw)": "Kilosa"},
    {"list_name": "districts", "name": "mvomero", "label::English (en)": "Mvomero", "label::Kiswahili (sw)": "Mvomero"},
    {"list_name": "villages", "name": "magole", "label::English (en)": "Magole", "label::Kiswahili (sw)": "Magole", "district": "kilosa"},
    {"list_name": "villages", "name": "mabwerebwere", "label::English (en)": "Mabwerebwere", "label::Kiswahili (sw)": "Mabwerebwere", "district": "kilosa"},
    {"list_name": "villages", "name": "dakawa", "label::English (en)": "Dakawa", "label::Kiswahili (sw)": "Dakawa", "district": "mvomero"},
    {"list_name": "villages", "name": "mziha", "label::English (en)": "Mziha", "label::Kiswahili (sw)": "Mziha", "district": "mvomero"},
    {"list_name": "point_types", "name": "borehole", "label::English (en)": "Borehole", "label::Kiswahili (sw)": "Kisima kirefu"},
    {"list_name": "point_types", "name": "standpipe", "label::English (en)": "Standpipe", "label::Kiswahili (sw)": "Bomba la umma"},
    {"list_name": "point_types", "name": "spring", "label::English (en)": "Protected spring", "label::Kiswahili (sw)": "Chemchemi iliyohifadhiwa"},
    {"list_name": "yesno", "name": "yes", "label::English (en)": "Yes", "label::Kiswahili (sw)": "Ndiyo"},
    {"list_name": "yesno", "name": "no", "label::English (en)": "No", "label::Kiswahili (sw)": "Hapana"},
)

# Every column and question type surveyd carries, at least once, in two languages.
EVERY = (EN, ES)
def eq(*args, **kwargs):
    return q(*args, languages=EVERY, **kwargs)

EVERY_SURVEY = rows(
    ["type", "name", *lang("label", *EVERY), *lang("hint", *EVERY), "required", "relevant", "constraint",
     *lang("constraint_message", *EVERY), "calculation", "default", "readonly", "choice_filter", "repeat_count", "appearance"],
    # Metadata the device fills in: kept as calculate questions without a calculation.
    eq("start", "started"),
    eq("end", "ended"),
    eq("today", "day"),
    eq("deviceid", "device"),
    eq("note", "welcome", ("Every kind of question", "Todo tipo de pregunta")),
    eq("text", "name", ("Name", "Nombre"), ("As written on the ID card", "Como en el documento"), required="yes",
       constraint="string-length(.) >= 2", message=("At least 2 letters", "Al menos 2 letras")),
    eq("integer", "age", ("Age", "Edad"), required="yes", constraint=". >= 0 and . <= 120",
       message=("Between 0 and 120", "Entre 0 y 120"), appearance="numbers"),
    eq("decimal", "weight", ("Weight (kg)", "Peso (kg)"), required="${age} < 5", constraint=". > 0 and . < 300", message=("Between 0 and 300 kg", "Entre 0 y 300 kg")),
    eq("integer", "visits_planned", ("Visits planned", "Visitas previstas"), default="2", readonly="yes"),
    eq("text", "village_code", ("Village code", "Código del pueblo"), default="VC-01", readonly="${age} < 18"),
    eq("date", "born", ("Date of birth", "Fecha de nacimiento"), relevant="${age} < 5", required="yes"),
    eq("time", "woke_up", ("Woke up at", "Se despertó a las")),
    eq("dateTime", "last_meal", ("Last meal", "Última comida")),
    eq("geopoint", "home", ("Home", "Casa"), appearance="maps"),
    eq("geotrace", "route", ("Route to the well", "Camino al pozo")),
    eq("geoshape", "plot", ("Field boundary", "Límite del campo")),
    eq("image", "portrait", ("Portrait", "Retrato")),
    eq("audio", "greeting", ("Recorded greeting", "Saludo grabado")),
    eq("video", "walkthrough", ("Video of the house", "Video de la casa")),
    eq("file", "document", ("A document", "Un documento")),
    eq("barcode", "card", ("Scan the card", "Escanee la tarjeta")),
    eq("select_one yesno", "consent", ("Consent?", "¿Consentimiento?"), required="yes", appearance="horizontal"),
    eq("select_multiple foods", "foods", ("Foods eaten yesterday", "Alimentos de ayer"), relevant="${consent} = 'yes'",
       constraint="not(selected(., 'none') and count-selected(.) > 1)", message=("'None' goes alone", "'Ninguno' va solo")),
    eq("select_one regions", "region", ("Region", "Región")),
    eq("select_one districts", "district", ("District", "Distrito"), choice_filter="region=${region}"),
    eq("calculate", "food_count", calculation="count-selected(${foods})"),
    eq("begin_group", "household", ("Household", "Hogar"), relevant="${consent} = 'yes'", appearance="field-list"),
    eq("integer", "members", ("Members", "Miembros"), required="yes", constraint=". >= 1 and . <= 20",
       message=("Between 1 and 20", "Entre 1 y 20")),
    eq("begin_repeat", "member", ("Member", "Miembro"), repeat_count="${members}"),
    eq("text", "member_name", ("Member's name", "Nombre del miembro"), required="yes"),
    eq("integer", "member_age", ("Member's age", "Edad del miembro"), constraint=". >= 0 and . <= 120",
       message=("Between 0 and 120", "Entre 0 y 120")),
    eq("begin_repeat", "jobs", ("Job", "Trabajo"), relevant="${member_age} >= 15"),
    eq("text", "job_title", ("Job title", "Puesto"), required="yes"),
    eq("end_repeat"),
    eq("end_repeat"),
    eq("calculate", "oldest", calculation="max(${member_age})"),
    eq("end_group"),
    # A fixed count: pyxform adds a calculate node (visits_count) that holds it.
    eq("begin_repeat", "visits", ("Planned visit", "Visita prevista"), repeat_count="2"),
    eq("date", "visit_day", ("Day of the visit", "Día de la visita"), required="yes"),
    eq("end_repeat"),
)
EVERY_CHOICES = rows(
    ["list_name", "name", *lang("label", *EVERY), "region"],
    {"list_name": "yesno", "name": "yes", "label::English (en)": "Yes", "label::Español (es)": "Sí"},
    {"list_name": "yesno", "name": "no", "label::English (en)": "No", "label::Español (es)": "No"},
    {"list_name": "foods", "name": "maize", "label::English (en)": "Maize", "label::Español (es)": "Maíz"},
    {"list_name": "foods", "name": "beans", "label::English (en)": "Beans", "label::Español (es)": "Frijoles"},
    {"list_name": "foods", "name": "fish", "label::English (en)": "Fish", "label::Español (es)": "Pescado"},
    {"list_name": "foods", "name": "none", "label::English (en)": "None", "label::Español (es)": "Ninguno"},
    {"list_name": "regions", "name": "coast", "label::English (en)": "Coast", "label::Español (es)": "Costa"},
    {"list_name": "regions", "name": "highlands", "label::English (en)": "Highlands", "label::Español (es)": "Sierra"},
    {"list_name": "districts", "name": "port", "label::English (en)": "Port", "label::Español (es)": "Puerto", "region": "coast"},
    {"list_name": "districts", "name": "bay", "label::English (en)": "Bay", "label::Español (es)": "Bahía", "region": "coast"},
    {"list_name": "districts", "name": "valley", "label::English (en)": "Valley", "label::Español (es)": "Valle", "region": "highlands"},
)

FORMS = {
    "health_facility": {
        "survey": HEALTH_SURVEY,
        "choices": HEALTH_CHOICES,
        "settings": [["form_title", "form_id", "version", "default_language"],
                     ["Health facility checklist", "health_facility", "2026120301", EN]],
    },
    "water_point": {
        "survey": WATER_SURVEY,
        "choices": WATER_CHOICES,
        "settings": [["form_title", "form_id", "version", "default_language"],
                     ["Water point inspection", "water_point", "2026120302", EN]],
    },
    "every_column": {
        "survey": EVERY_SURVEY,
        "choices": EVERY_CHOICES,
        "settings": [["form_title", "form_id", "version", "default_language", "instance_name", "style"],
                     ["Every column", "every_column", "2026120303", ES, "concat(${name}, ' ', ${day})", "pages"]],
    },
}

# XLSForms pyxform refuses: only the .xlsx, and the message pyxform gives (checked here, and by
# the end-to-end test, which sees it at `xlsform`).
BROKEN = {
    # A ${reference} to a question the form does not have.
    "missing_reference": {
        "survey": [["type", "name", "label", "relevant"],
                   ["integer", "age", "Age"],
                   ["select_one yn", "smoker", "Do you smoke?", "${agee} >= 12"]],
        "choices": [["list_name", "name", "label"], ["yn", "yes", "Yes"], ["yn", "no", "No"]],
        "settings": [["form_title", "form_id"], ["Missing reference", "missing_reference"]],
    },
}

FIXED_TIME = "2026-01-01T00:00:00Z"
FIXED_ZIP_DATE = (2026, 1, 1, 0, 0, 0)


def write_xlsx(path, sheets):
    """The workbook openpyxl writes, with its timestamps and the zip entries' dates fixed."""
    book = Workbook()
    book.remove(book.active)
    for name, lines in sheets.items():
        sheet = book.create_sheet(name)
        for line in lines:
            sheet.append(line)
    buffer = io.BytesIO()
    book.save(buffer)
    out = io.BytesIO()
    with zipfile.ZipFile(buffer) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            data = source.read(entry.filename)
            if entry.filename == "docProps/core.xml":
                data = re.sub(rb"(<dcterms:(created|modified)[^>]*>)[^<]*", rb"\g<1>" + FIXED_TIME.encode(), data)
            info = zipfile.ZipInfo(entry.filename, date_time=FIXED_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o600 << 16
            target.writestr(info, data)
    with open(path, "wb") as f:
        f.write(out.getvalue())


def odk_validate(xml_path):
    """ODK Validate, the JavaRosa jar pyxform's wheel carries."""
    import pyxform
    jar = os.path.join(os.path.dirname(pyxform.__file__), "validators", "odk_validate", "bin", "ODK_Validate.jar")
    result = subprocess.run(["java", "-Djava.awt.headless=true", "-jar", jar, xml_path], capture_output=True, text=True)
    if result.returncode != 0 or "Xform is valid" not in result.stdout + result.stderr:
        raise SystemExit(f"ODK Validate rejected {xml_path}:\n{result.stdout}{result.stderr}")


def main():
    for name, sheets in FORMS.items():
        xlsx = os.path.join(HERE, name + ".xlsx")
        write_xlsx(xlsx, sheets)
        out = os.path.join(HERE, name + ".xml")
        # What XLSFormConverter runs (but on the kept file rather than a temporary copy).
        result = subprocess.run([XLS2XFORM, "--json", "--skip_validate", xlsx, out], capture_output=True, text=True)
        if result.returncode != 0 or '"code": 999' in result.stdout + result.stderr:
            raise SystemExit(f"pyxform refused {name}.xlsx:\n{result.stdout}{result.stderr}")
        odk_validate(out)
        print("wrote", os.path.relpath(xlsx), "and", os.path.relpath(out))
    for name, sheets in BROKEN.items():
        xlsx = os.path.join(HERE, name + ".xlsx")
        write_xlsx(xlsx, sheets)
        with tempfile.TemporaryDirectory() as work:
            result = subprocess.run([XLS2XFORM, "--json", "--skip_validate", xlsx, os.path.join(work, "form.xml")],
                                    capture_output=True, text=True)
        if '"code": 999' not in result.stdout + result.stderr:
            raise SystemExit(f"pyxform accepted {name}.xlsx, which should be broken")
        print("wrote", os.path.relpath(xlsx), "(refused:", (result.stdout + result.stderr).strip(), ")")


if __name__ == "__main__":
    main()
