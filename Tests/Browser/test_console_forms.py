#!/usr/bin/env python3
"""Browser tests of how the console shows forms with groups, repeats, languages and logic
(Docs/forms.md), in a real headless Chromium.

Run through scripts/browser_tests.sh (it runs this file after the other two):

    scripts/browser_tests.sh                 # every file
    scripts/browser_tests.sh -k roster       # the tests (of every file) whose name contains "roster"

A household roster in two languages — a group relevant only with consent, a repeat of members
with a repeat of clinic visits inside each — is published through the JSON API, and responses
with and without consent are synced. The tests check the response page (sections by group,
numbered instances, nested ones inside theirs, non-relevant questions left out, the language
switch and the language kept through a review step) and the survey page (the tree with each
node's type and logic), and that labels of a form are shown as text, never as markup.

It reuses test_console.py's shared server, browser, sign-in and runner, and test_console_admin.py's
functions that publish a survey and sync a response. scripts/console_screenshots.py uses
ROSTER and the answers below for Docs/console/response-roster-*.png and survey-roster-*.png.
"""
import os
import sys
import time
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_console import (By, browser, button, click_and_load, open_response, page_text, problem_text,  # noqa: E402
                          run_tests, shared_server, sign_in_token, stop_shared_server, wait_loaded)
from test_console_admin import console_get, new_survey, submission, submit_raw  # noqa: E402

EN, ES = "English (en)", "Español (es)"


def both(en, es):
    return {EN: en, ES: es}


YES_NO = [{"name": "yes", "label": both("Yes", "Sí")}, {"name": "no", "label": both("No", "No")}]

ROSTER = {
    "title": "Household roster",
    "defaultLanguage": EN,
    "choiceLists": {"yesno": YES_NO},
    "questions": [
        {"id": "welcome", "type": "note", "label": both("Thank you for your time", "Gracias por su tiempo")},
        {"id": "consent", "type": "select_one", "label": both("Do you agree to the interview?", "¿Acepta la entrevista?"),
         "choiceList": "yesno", "required": True},
        {"id": "region", "type": "select_one", "label": both("Region", "Región"),
         "choices": [{"name": "north", "label": both("North", "Norte")}, {"name": "south", "label": both("South", "Sur")}]},
        {"id": "village", "type": "select_one", "label": both("Village", "Aldea"), "choiceFilter": "region = ${region}",
         "choices": [{"name": "ober", "label": "Ober", "region": "north"}, {"name": "kanyo", "label": "Kanyo", "region": "south"}]},
        {"id": "household", "type": "group", "label": both("Household", "Hogar"), "relevant": "${consent} = 'yes'", "children": [
            {"id": "household_code", "type": "barcode", "label": both("Household code on the door", "Código del hogar en la puerta")},
            {"id": "started", "type": "datetime", "label": both("Interview started", "Inicio de la entrevista")},
            {"id": "size", "type": "integer", "label": both("How many people live here?", "¿Cuántas personas viven aquí?"),
             "required": True, "constraint": ". >= 1 and . <= 30",
             "constraintMessage": both("Between 1 and 30 people", "Entre 1 y 30 personas")},
            {"id": "members", "type": "repeat", "label": both("Member", "Miembro"), "repeatCount": "${size}", "children": [
                {"id": "name", "type": "text", "label": both("Name", "Nombre"), "required": True},
                {"id": "age", "type": "integer", "label": both("Age", "Edad"), "constraint": ". >= 0 and . <= 120"},
                {"id": "school", "type": "select_one", "label": both("In school?", "¿Estudia?"), "choiceList": "yesno",
                 "relevant": "${age} >= 5 and ${age} <= 18"},
                {"id": "visits", "type": "repeat", "label": both("Clinic visit", "Visita a la clínica"), "maxCount": 5, "children": [
                    {"id": "visit_date", "type": "date", "label": both("Date", "Fecha")},
                    {"id": "visit_time", "type": "time", "label": both("Time", "Hora")},
                    {"id": "reason", "type": "text", "label": both("Reason", "Motivo")},
                ]},
            ]},
            {"id": "listed", "type": "calculate", "label": both("Members listed", "Miembros listados"), "calculation": "count(${members})"},
            {"id": "eldest", "type": "integer", "label": "Age of the eldest", "constraint": ". = max(${age})"},
            {"id": "water_path", "type": "geotrace", "label": both("Path to the water point", "Camino al punto de agua")},
            {"id": "plot", "type": "geoshape", "label": both("Garden plot", "Huerto")},
        ]},
        {"id": "refusal", "type": "group", "label": both("Refusal", "Rechazo"), "relevant": "${consent} = 'no'", "children": [
            {"id": "refusal_reason", "type": "text", "label": both("Why not?", "¿Por qué no?")},
        ]},
    ],
}

CONSENTED = {
    "consent": "yes", "region": "north", "village": "ober",
    "household_code": "HH-0042-KSM", "started": "2026-12-02T09:15:00Z", "size": 2,
    "members": [
        {"name": "Ana Otieno", "age": 41, "visits": [
            {"visit_date": "2026-10-14", "visit_time": "09:30", "reason": "Blood pressure check"},
            {"visit_date": "2026-11-20", "visit_time": "14:05", "reason": "Follow-up"}]},
        {"name": "Leo Otieno", "age": 9, "school": "yes", "visits": [
            {"visit_date": "2026-11-03", "visit_time": "10:00", "reason": "Vaccination"}]},
    ],
    "listed": 2, "eldest": 41,
    "water_path": [{"lat": -0.0917, "lon": 34.768}, {"lat": -0.0921, "lon": 34.7691}, {"lat": -0.0925, "lon": 34.7702}],
    "plot": [{"lat": -0.09, "lon": 34.76}, {"lat": -0.09, "lon": 34.761}, {"lat": -0.091, "lon": 34.761}, {"lat": -0.09, "lon": 34.76}],
}
DECLINED = {"consent": "no", "region": "south", "refusal_reason": "Busy at the market today"}

# Text of a form's own labels, messages and choices, shown on its pages: it must stay text.
XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'
XSS_FORM = {
    "title": "Labels as text",
    "defaultLanguage": EN,
    "questions": [
        {"id": "intro", "type": "note", "label": both("Note " + XSS, "Nota " + XSS)},
        {"id": "part", "type": "group", "label": both("Group " + XSS, "Grupo " + XSS), "children": [
            {"id": "pick", "type": "select_one", "label": both("Question " + XSS, "Pregunta " + XSS),
             "choices": [{"name": "a", "label": both("Choice " + XSS, "Opción " + XSS)}], "constraint": ". != 'b'",
             "constraintMessage": both("Message " + XSS, "Mensaje " + XSS)},
            {"id": "items", "type": "repeat", "label": both("Item " + XSS, "Cosa " + XSS), "children": [
                {"id": "words", "type": "text", "label": both("Words", "Palabras")}]},
        ]},
    ],
}


# ---------------------------------------------------------------------------------------------
# Seeding, shared with scripts/console_screenshots.py


def publish_roster(srv, title="Household roster"):
    """The roster as a new survey: (surveyId, its version as the API answered)."""
    return new_survey(srv, title, review=True, definition=dict(ROSTER, title=title))


def sync(srv, version, answers, csid=None):
    """A collector's response to `version`: its responseId."""
    status, _, out = submit_raw(srv, submission(version["surveyVersionId"], version["contentHash"], answers, csid=csid))
    assert status == 201, f"the response was refused: {status} {out}"
    return out["responseId"]


_roster = {}


def roster(srv):
    """The roster, published once per server, with a response with consent and one without."""
    if not _roster:
        survey_id, version = publish_roster(srv)
        _roster.update(survey=survey_id, version=version, consented=sync(srv, version, CONSENTED),
                       declined=sync(srv, version, DECLINED))
    return _roster


# ---------------------------------------------------------------------------------------------
# Reading the pages


def headings(d, css):
    return [e.text for e in d.find_elements(By.CSS_SELECTOR, css)]


def answers_in(element):
    """{label: answer text} of the answer lists directly under `element` (not of nested sections)."""
    out = {}
    for dl in element.find_elements(By.XPATH, "./dl[contains(@class, 'answers')]"):
        for dt, dd in zip(dl.find_elements(By.TAG_NAME, "dt"), dl.find_elements(By.TAG_NAME, "dd")):
            label = dt.text.rsplit(" ", 1)[0] if dt.find_elements(By.CSS_SELECTOR, ".hint") else dt.text
            out[label] = dd.text
    return out


def section_headed(d, text):
    """The section (group, repeat or instance) whose own heading reads `text`."""
    found = d.find_elements(By.XPATH, f"//section[*[self::h3 or self::h4 or self::h5 or self::h6][normalize-space()='{text}']]")
    assert len(found) == 1, f"{len(found)} sections headed {text!r}; headings: {headings(d, 'section h3, section h4, section h5, section h6')}"
    return found[0]


def language_links(d):
    return [(a.text, a.get_attribute("aria-current") == "true") for a in d.find_elements(By.CSS_SELECTOR, "nav.languages a")]


def outline_node(d, node_id):
    """The survey page's node of this id, as (kind, its own rule lines, the element)."""
    li = d.find_element(By.XPATH, f"//li[contains(@class, 'node')][div[@class='node-head']/span[contains(@class, 'mono')][normalize-space()='{node_id}']]")
    kind = li.find_element(By.CSS_SELECTOR, ":scope > .node-head .kind").text
    rules = [e.text for e in li.find_elements(By.CSS_SELECTOR, ":scope > ul.logic > li")]
    return kind, rules, li


# ---------------------------------------------------------------------------------------------
# The tests

def test_roster_response_by_groups_and_numbered_instances():
    srv = shared_server()
    r = roster(srv)
    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])
    open_response(d, srv, r["consented"])

    # Questions outside any group, then the group as a headed section; notes are left out.
    card = d.find_element(By.XPATH, "//section[@class='card'][h2[normalize-space()='Answers']]")
    top = answers_in(card)
    assert list(top) == ["Do you agree to the interview?", "Region", "Village"], top
    assert top["Do you agree to the interview?"] == "Yes yes" and top["Region"] == "North north", top
    assert top["Village"] == "Ober ober", top
    assert "Thank you for your time" not in page_text(d), "a note is shown on the response page"
    assert headings(d, "section.group > h3") == ["Household"], headings(d, "section.group > h3")
    household = section_headed(d, "Household")
    inside = answers_in(household)
    assert inside["How many people live here?"] == "2", inside
    assert inside["Household code on the door"] == "HH-0042-KSM", inside
    assert household.find_element(By.CSS_SELECTOR, "dd .answer.mono").text == "HH-0042-KSM"
    assert inside["Interview started"] == "2026-12-02 09:15:00 UTC", inside
    assert inside["Members listed"] == "2 calculated on the device", inside
    assert inside["Age of the eldest"] == "41", inside
    assert inside["Path to the water point"].startswith("A line of 3 points Open map at the first point\n-0.0917, 34.768\n"), inside
    assert inside["Garden plot"].startswith("A shape of 4 points"), inside

    # The repeat: a heading, its instances numbered, the nested repeat's inside each of them.
    members = section_headed(d, "Member")
    assert members.find_element(By.XPATH, "..") == household, "the members are not inside the household's section"
    assert "2 instances" in members.find_element(By.CSS_SELECTOR, ":scope > p.hint").text
    instances = members.find_elements(By.CSS_SELECTOR, ":scope > section.instance")
    assert [i.find_element(By.CSS_SELECTOR, ":scope > h5").text for i in instances] == ["Member 1", "Member 2"]
    first, second = instances
    assert answers_in(first) == {"Name": "Ana Otieno", "Age": "41"}, answers_in(first)  # 41: "In school?" is not relevant
    assert answers_in(second) == {"Name": "Leo Otieno", "Age": "9", "In school?": "Yes yes"}, answers_in(second)
    visits = [[h.text for h in m.find_elements(By.CSS_SELECTOR, "section.repeat section.instance > h6")] for m in instances]
    assert visits == [["Member 1 › Clinic visit 1", "Member 1 › Clinic visit 2"], ["Member 2 › Clinic visit 1"]], visits
    assert [h.text for h in first.find_elements(By.CSS_SELECTOR, "section.repeat > h6")] == ["Clinic visit"]
    visit = section_headed(d, "Member 1 › Clinic visit 2")
    assert answers_in(visit) == {"Date": "2026-11-20", "Time": "14:05", "Reason": "Follow-up"}, answers_in(visit)

    # The group that is not relevant with consent is not there at all.
    assert "Refusal" not in card.text and "Why not?" not in card.text


def test_roster_response_leaves_out_what_is_not_relevant():
    srv = shared_server()
    r = roster(srv)
    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])
    open_response(d, srv, r["declined"])
    card = d.find_element(By.XPATH, "//section[@class='card'][h2[normalize-space()='Answers']]")
    text = card.text
    for absent in ("Household", "How many people live here?", "Member", "Clinic visit", "Age of the eldest", "Members listed"):
        assert absent not in text, f"{absent!r} is shown though its group is not relevant"
    assert headings(d, "section.group > h3") == ["Refusal"], headings(d, "section.group > h3")
    assert answers_in(section_headed(d, "Refusal")) == {"Why not?": "Busy at the market today"}
    # Relevant but not answered: said so, as for any question.
    assert answers_in(card) == {"Do you agree to the interview?": "No no", "Region": "South south", "Village": "No answer"}, answers_in(card)


def test_roster_language_switch():
    srv = shared_server()
    r = roster(srv)
    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])
    open_response(d, srv, r["consented"])
    assert language_links(d) == [(EN, True), (ES, False)], language_links(d)

    click_and_load(d, d.find_element(By.LINK_TEXT, ES))
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(d.current_url).query) == {"lang": [ES]}, d.current_url
    assert language_links(d) == [(EN, False), (ES, True)], language_links(d)
    assert headings(d, "section.group > h3") == ["Hogar"]
    member = section_headed(d, "Miembro 2")
    assert answers_in(member) == {"Nombre": "Leo Otieno", "Edad": "9", "¿Estudia?": "Sí yes"}, answers_in(member)
    assert section_headed(d, "Miembro 1 › Visita a la clínica 2")
    # A label written in one language only is shown in it.
    assert answers_in(section_headed(d, "Hogar"))["Age of the eldest"] == "41"

    # The language stays through a review step (the form carries it to the page after).
    click_and_load(d, button(d, "Start review"))
    assert "Done: Start review." in page_text(d), page_text(d)[:400]
    assert language_links(d) == [(EN, False), (ES, True)] and headings(d, "section.group > h3") == ["Hogar"], d.current_url
    assert srv.state(r["consented"])[0] == "in_review"

    # A language the form does not have: the default.
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/responses/{r['consented']}?lang=Klingon")
    wait_loaded(d)
    assert language_links(d) == [(EN, True), (ES, False)] and headings(d, "section.group > h3") == ["Household"]

    # A form in one language has no switch; the demo's version-1 form neither.
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/responses/{srv.submit()}")
    wait_loaded(d)
    assert not d.find_elements(By.CSS_SELECTOR, "nav.languages") and not d.find_elements(By.CSS_SELECTOR, "section.group")


def test_roster_survey_page_structure_and_logic():
    srv = shared_server()
    r = roster(srv)
    d = browser()
    sign_in_token(d, srv, srv["ADMIN"])
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{r['survey']}")
    wait_loaded(d)
    card = d.find_element(By.XPATH, "//section[h2[normalize-space()='Version 1']]")
    meta = dict(zip([e.text for e in card.find_elements(By.TAG_NAME, "dt")], [e.text for e in card.find_elements(By.TAG_NAME, "dd")]))
    assert meta.get("Languages") == f"{EN} (default), {ES}", meta
    assert not card.find_elements(By.CSS_SELECTOR, "table"), "a form with groups is shown as a flat table"
    assert card.find_element(By.TAG_NAME, "h3").text == "Structure and logic"

    top = [e.text for e in card.find_elements(By.XPATH, "./ol[@class='outline']/li/div[@class='node-head']/span[contains(@class, 'mono')]")]
    assert top == ["welcome", "consent", "region", "village", "household", "refusal"], top

    kind, rules, _ = outline_node(d, "welcome")
    assert kind == "note" and rules == [], (kind, rules)
    assert "Thank you for your time" in card.text
    kind, rules, _ = outline_node(d, "consent")
    assert (kind, rules) == ("select_one", ["Required", "Choices yes (Yes), no (No)"]), (kind, rules)
    kind, rules, _ = outline_node(d, "village")
    assert rules == ["Choices ober (Ober), kanyo (Kanyo)", "Choice filter region = ${region}"], rules
    kind, rules, household = outline_node(d, "household")
    assert (kind, rules) == ("group", ["Shown when ${consent} = 'yes'"]), (kind, rules)
    kind, rules, _ = outline_node(d, "size")
    assert (kind, rules) == ("integer", ["Required", "Constraint . >= 1 and . <= 30 — “Between 1 and 30 people”"]), (kind, rules)
    kind, rules, members = outline_node(d, "members")
    assert (kind, rules) == ("repeat", ["Repeat count ${size}"]), (kind, rules)
    kind, rules, visits = outline_node(d, "visits")
    assert (kind, rules) == ("repeat", ["Instances at most 5"]), (kind, rules)
    kind, rules, _ = outline_node(d, "school")
    assert rules == ["Shown when ${age} >= 5 and ${age} <= 18", "Choices yes (Yes), no (No)"], rules
    kind, rules, _ = outline_node(d, "listed")
    assert (kind, rules) == ("calculate", ["Calculation count(${members})"]), (kind, rules)
    kind, rules, _ = outline_node(d, "eldest")
    assert rules == ["Constraint . = max(${age})"], rules
    # The nesting: visits inside members inside household; each expression as code.
    assert visits.find_element(By.XPATH, "../..") == members and members.find_element(By.XPATH, "../..") == household
    assert "${consent} = 'yes'" in [c.text for c in household.find_elements(By.CSS_SELECTOR, ":scope > ul.logic code")]
    labels = [e.text for e in household.find_elements(By.CSS_SELECTOR, ".node-label")]
    assert labels[:4] == ["Household", "Household code on the door", "Interview started", "How many people live here?"], labels

    # A newer version's tree is open; an older one's is folded, there to unfold.
    newer = dict(ROSTER, questions=ROSTER["questions"][1:])
    srv.api("POST", f"/surveys/{r['survey']}/versions", srv["ADMIN"], {"definition": newer}, expect=(201,))
    d.refresh()
    wait_loaded(d)
    latest = d.find_element(By.XPATH, "//section[h2[normalize-space()='Version 2']]")
    assert latest.find_element(By.TAG_NAME, "h3").text == "Structure and logic" and not latest.find_elements(By.TAG_NAME, "details")
    assert "welcome" not in [e.text for e in latest.find_elements(By.CSS_SELECTOR, ".node-head .mono")]
    older = d.find_element(By.XPATH, "//section[h2[normalize-space()='Version 1']]")
    folded = older.find_element(By.CSS_SELECTOR, "details.outline")
    assert folded.get_attribute("open") is None and not older.find_element(By.CSS_SELECTOR, "ol.outline").is_displayed()
    folded.find_element(By.TAG_NAME, "summary").click()
    assert older.find_element(By.CSS_SELECTOR, "ol.outline").is_displayed() and "Thank you for your time" in older.text

    # The demo's version-1 survey keeps its table of questions.
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{srv.survey_id()}")
    wait_loaded(d)
    assert d.find_elements(By.CSS_SELECTOR, "section.card table.list tbody tr") and not d.find_elements(By.CSS_SELECTOR, "ol.outline")


def test_form_labels_are_shown_as_text():
    srv = shared_server()
    survey_id, version = new_survey(srv, "Labels as text", review=True, definition=XSS_FORM)
    rid = sync(srv, version, {"pick": "a", "items": [{"words": "one"}]})
    d = browser()
    sign_in_token(d, srv, srv["ADMIN"])
    for lang in ("", "?lang=" + urllib.parse.quote(ES)):
        d.get(f"{srv.base}/console/orgs/{srv['ORG']}/responses/{rid}{lang}")
        wait_loaded(d)
        time.sleep(0.2)  # time for an onerror handler to have run, had the markup become an element
        group, question, choice, item = ("Group", "Question", "Choice", "Item") if not lang else ("Grupo", "Pregunta", "Opción", "Cosa")
        assert headings(d, "section.group > h3") == [f"{group} {XSS}"], headings(d, "section.group > h3")
        assert headings(d, "section.repeat > h4") == [f"{item} {XSS}"], headings(d, "section.repeat > h4")
        assert headings(d, "section.instance > h5") == [f"{item} {XSS} 1"], headings(d, "section.instance > h5")
        assert f"{question} {XSS}" in page_text(d) and f"{choice} {XSS}" in page_text(d)
        assert d.execute_script("return window.__xss") is None
        assert not d.find_elements(By.CSS_SELECTOR, "main script, main img"), "a label made elements"

    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{survey_id}")
    wait_loaded(d)
    time.sleep(0.2)
    outline = d.find_element(By.CSS_SELECTOR, "ol.outline").text
    for text in (f"Note {XSS}", f"Group {XSS}", f"Question {XSS}", f"a (Choice {XSS})", f"“Message {XSS}”", f"Item {XSS}"):
        assert text in outline, f"{text!r} is not shown as text: {outline}"
    assert d.execute_script("return window.__xss") is None
    assert not d.find_elements(By.CSS_SELECTOR, "main script, main img"), "a label made elements"


XFORM_FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "SurveyXFormTests", "Fixtures")


def test_publish_an_xlsform_and_see_a_refusal_by_row():
    """The survey page takes an XLSForm as well as JSON: pyxform converts it (the same reading as
    the API's), the version shows its languages and tree, and a form pyxform refuses is shown with
    the row pyxform names, with no version published."""
    srv = shared_server()
    survey = srv.api("POST", "/surveys", srv["ADMIN"], {"title": "Household roster (XLSForm)", "reviewRequired": False}, expect=(201,))
    sid = survey["surveyId"]
    d = browser()
    sign_in_token(d, srv, srv["ADMIN"])
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{sid}")
    wait_loaded(d)
    file_input = d.find_element(By.ID, "definition")
    file_input.send_keys(os.path.abspath(os.path.join(XFORM_FIXTURES, "household.xlsx")))
    click_and_load(d, button(d, "Publish version"))
    text = page_text(d)
    assert "Version 1 is published" in text, text[:400]
    assert "English (en) (default), Français (fr)" in text, text[:800]
    versions = srv.api("GET", f"/surveys/{sid}", srv["ADMIN"])["versions"]
    assert len(versions) == 1, versions
    stored = srv.api("GET", f"/survey-versions/{versions[0]['surveyVersionId']}", srv["ADMIN"])["definition"]
    assert stored["title"] == "Household roster" and stored["formId"] == "household_roster", stored.get("title")
    # The converted tree is on the page with its logic.
    assert outline_node(d, "household") is not None and "${consent} = 'yes'" in text, text[:1500]

    d.find_element(By.ID, "definition").send_keys(os.path.abspath(os.path.join(XFORM_FIXTURES, "missing_list.xlsx")))
    click_and_load(d, button(d, "Publish version"))
    problem = problem_text(d)
    assert "not published" in problem, problem
    lines = [li.text for li in d.find_elements(By.CSS_SELECTOR, ".problem li")]
    assert lines == ["In the XLSForm: [row : 2] List name not in choices sheet: colours"], lines
    assert len(srv.api("GET", f"/surveys/{sid}", srv["ADMIN"])["versions"]) == 1, "a refused XLSForm made a version"


ASSETS = {
    "title": "Assets and papers",
    "questions": [
        {"id": "assets", "type": "select_multiple", "label": "Assets",
         "choices": [{"name": "bike", "label": "Bicycle"}, {"name": "radio", "label": "Radio set"}, {"name": "cow"}]},
        {"id": "deed", "type": "file", "label": "Land deed", "accept": ["application/pdf"]},
        {"id": "site", "type": "group", "children": [
            {"id": "rooms", "type": "integer", "label": "Rooms", "minimum": 1, "maximum": 12},
            {"id": "gate", "type": "geopoint", "label": "Gate"},
        ]},
        {"id": "plots", "type": "repeat", "label": "Plot", "minCount": 1, "maxCount": 3, "children": [
            {"id": "crop", "type": "text", "label": "Crop"},
        ]},
    ],
}


def test_choices_files_points_and_bounds_on_the_response_and_survey_pages():
    srv = shared_server()
    sid, version = new_survey(srv, "Assets and papers", review=True, definition=ASSETS)
    deed = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
    upload_id = "deed-" + uuid.uuid4().hex[:12]
    srv.api("PUT", f"/uploads/{upload_id}", srv["COLLECTOR"], data=deed, expect=(201,),
            headers={"Content-Type": "application/pdf", "Survey-Version-Id": version["surveyVersionId"], "Question-Id": "deed"})
    status, _, out = submit_raw(srv, submission(version["surveyVersionId"], version["contentHash"],
                                                {"assets": ["bike", "cow"], "deed": {"clientUploadId": upload_id}, "rooms": 3,
                                                 "gate": {"lat": -1.5, "lon": 36.25}, "plots": [{"crop": "maize"}]}))
    assert status == 201, out

    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])
    open_response(d, srv, out["responseId"])
    # Each chosen option by its label with its name beside it; one without a label by its name.
    assert [li.text for li in d.find_elements(By.CSS_SELECTOR, "ul.choices li")] == ["Bicycle bike", "cow"]
    assert "Radio set" not in page_text(d)
    # A file that is not an image is a link to download it, named with its type and size.
    link = d.find_element(By.PARTIAL_LINK_TEXT, "Download " + upload_id)
    assert link.text == f"Download {upload_id} (application/pdf, {len(deed)} bytes)", link.text
    assert not d.find_elements(By.CSS_SELECTOR, "img.photo"), "a document is shown as an image"
    status, hdrs, body = console_get(srv, d, urllib.parse.urlsplit(link.get_attribute("href")).path)
    assert status == 200 and body == deed, (status, hdrs)
    assert hdrs.get("content-type", "").startswith("application/pdf"), hdrs
    # A group without a label is headed by its id; a point without accuracy is its coordinates alone.
    assert [h.text for h in d.find_elements(By.CSS_SELECTOR, "section.group > h3")] == ["site"]
    gate = d.find_element(By.XPATH, "//dt[starts-with(normalize-space(), 'Gate')]/following-sibling::dd[1]").text
    assert gate == "-1.5, 36.25 Open map", gate

    # The survey page's outline (an admin's): each node's rules in words.
    d = browser()
    sign_in_token(d, srv, srv["ADMIN"])
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{sid}")
    wait_loaded(d)
    assert outline_node(d, "assets")[1] == ["Choices bike (Bicycle), radio (Radio set), cow"], outline_node(d, "assets")[1]
    assert outline_node(d, "rooms")[1] == ["Range from 1 to 12"], outline_node(d, "rooms")[1]
    assert outline_node(d, "plots")[1] == ["Instances at least 1, at most 3"], outline_node(d, "plots")[1]
    site = outline_node(d, "site")[2]
    assert not site.find_elements(By.CSS_SELECTOR, ":scope > .node-head .node-label"), "a group without a label shows one"


def test_publish_an_xlsform_with_the_files_it_names():
    """The files a form names are chosen beside it: without one of them the version is refused
    with a line naming it, and with all of them it is published and lists them."""
    srv = shared_server()
    sid = srv.api("POST", "/surveys", srv["ADMIN"], {"title": "Village visit", "reviewRequired": False}, expect=(201,))["surveyId"]
    d = browser()
    sign_in_token(d, srv, srv["ADMIN"])
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{sid}")
    wait_loaded(d)
    fixture = lambda name: os.path.abspath(os.path.join(XFORM_FIXTURES, name))
    d.find_element(By.ID, "definition").send_keys(fixture("village_visit.xlsx"))
    d.find_element(By.ID, "files").send_keys("\n".join(fixture(n) for n in ("villages.csv", "crops.csv")))
    click_and_load(d, button(d, "Publish version"))
    lines = [li.text for li in d.find_elements(By.CSS_SELECTOR, ".problem li")]
    assert any(line.startswith("the form names map.png") for line in lines), lines
    assert srv.api("GET", f"/surveys/{sid}", srv["ADMIN"])["versions"] == [], "a refused form made a version"

    d.find_element(By.ID, "definition").send_keys(fixture("village_visit.xlsx"))
    d.find_element(By.ID, "files").send_keys("\n".join(fixture(n) for n in ("villages.csv", "crops.csv", "map.png")))
    click_and_load(d, button(d, "Publish version"))
    text = page_text(d)
    assert "Version 1 is published" in text, text[:400]
    versions = srv.api("GET", f"/surveys/{sid}", srv["ADMIN"])["versions"]
    files = srv.api("GET", f"/survey-versions/{versions[0]['surveyVersionId']}", srv["ADMIN"])["attachments"]
    assert [f["fileName"] for f in files] == ["crops.csv", "map.png", "villages.csv"], files


TESTS = [
    test_roster_response_by_groups_and_numbered_instances,
    test_roster_response_leaves_out_what_is_not_relevant,
    test_roster_language_switch,
    test_roster_survey_page_structure_and_logic,
    test_form_labels_are_shown_as_text,
    test_publish_an_xlsform_and_see_a_refusal_by_row,
    test_publish_an_xlsform_with_the_files_it_names,
    test_choices_files_points_and_bounds_on_the_response_and_survey_pages,
]


if __name__ == "__main__":
    sys.exit(run_tests(TESTS, sys.argv[1:], "browser tests (forms with groups, repeats, languages)", finish=[stop_shared_server]))
