#!/usr/bin/env python3
"""Browser tests of the console's entity list pages in a real headless Chromium, at a desktop's
and a phone's width.

Run through scripts/browser_tests.sh (or directly, once it has made its venv):

    scripts/browser_tests.sh -k entity            # these tests
    .build/venv-browser/bin/python Tests/Browser/test_console_entities.py --save-screenshots
                                                  # the same, saving Docs/console/entity-*.png

A registration form and a follow-up visit form (JSON definitions with an `entity`) are published
through the API; households are registered and visited through the JSON door, two visits made
from the same version so that one household is in a hard conflict. An admin then finds the list
from the menu, searches it, opens the household in conflict, follows its history to the response
that changed it and back, and resolves the conflict.
"""
import os
import sys
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_console import (DESKTOP, PHONE, ROOT, By, browser, button, click_and_load, field,  # noqa: E402
                          page_text, run_tests, set_viewport, shared_server, sign_in_token, stop_shared_server, wait_loaded)
from test_console_admin import new_survey, submission, submit_raw  # noqa: E402

SAVE = "--save-screenshots" in sys.argv
SHOTS = os.path.join(ROOT, "Docs", "console")

REGISTRATION = {
    "title": "Household registration",
    "questions": [{"id": "head_name", "type": "text", "label": "Head of household", "required": True},
                  {"id": "member_count", "type": "integer", "label": "Members", "required": True},
                  {"id": "village_name", "type": "text", "label": "Village"}],
    "entity": {"list": "households", "create": True, "id": "uuid()", "label": "concat('Household of ', ${head_name})",
               "saveTo": {"head_name": "head", "member_count": "members", "village_name": "village"}},
}
VISIT = {
    "title": "Household visit",
    "questions": [{"id": "household", "type": "text", "label": "Household", "required": True},
                  {"id": "members_now", "type": "integer", "label": "Members now", "required": True}],
    "entity": {"list": "households", "update": True, "id": "${household}", "label": "concat('Household of ', ${members_now}, ' people')",
               "saveTo": {"members_now": "members"}},
}
HOUSEHOLDS = [("Ada", 4, "Kisii"), ("Bo", 2, "Nyeri"), ("Cy", 3, "Embu"), ("Dee", 6, "Kisii"), ("Eli", 5, "Meru")]

_world = {}


def households(srv):
    """The forms published and the households registered and visited once per server:
    {head: entity id}; Ada's household has a hard conflict."""
    if _world:
        return _world
    _, reg = new_survey(srv, "Household registration", review=False, definition=REGISTRATION)
    _, visit = new_survey(srv, "Household visit", review=False, definition=VISIT)
    for head, members, village in HOUSEHOLDS:
        eid = str(uuid.uuid4())
        body = submission(reg["surveyVersionId"], reg["contentHash"], {"head_name": head, "member_count": members, "village_name": village})
        body["entity"] = {"id": eid, "create": True, "label": f"Household of {head}"}
        status, _, out = submit_raw(srv, body)
        assert status == 201, (status, out)
        _world[head] = eid
    # Two phones visit Ada's household from version 1: the second one's change of members is a hard conflict.
    for members in (5, 7):
        body = submission(visit["surveyVersionId"], visit["contentHash"], {"household": _world["Ada"], "members_now": members})
        body["entity"] = {"id": _world["Ada"], "update": True, "baseVersion": 1}
        status, _, out = submit_raw(srv, body)
        assert status == 201, (status, out)
        _world.setdefault("visits", []).append(out["responseId"])
    return _world


def entity_rows(d):
    """The entity table's rows: (entity id, {column: text})."""
    out = []
    for tr in d.find_elements(By.CSS_SELECTOR, "table.entities tbody tr"):
        cells = {td.get_attribute("data-column"): td.text.strip() for td in tr.find_elements(By.CSS_SELECTOR, "td[data-column]")}
        out.append((tr.get_attribute("data-entity"), cells))
    return out


def fits_width(d, width):
    return d.execute_script("return document.documentElement.scrollWidth") <= width


def shoot(d, name):
    if SAVE:
        os.makedirs(SHOTS, exist_ok=True)
        d.save_screenshot(os.path.join(SHOTS, name))


def test_entity_list_found_from_the_menu_searched_and_resolved():
    srv = shared_server()
    world = households(srv)
    d = browser()
    sign_in_token(d, srv, srv["ADMIN"])
    click_and_load(d, d.find_element(By.XPATH, "//nav//a[normalize-space()='Entity lists']"))
    click_and_load(d, d.find_element(By.XPATH, "//table//a[normalize-space()='households']"))
    rows = entity_rows(d)
    assert len(rows) == len(HOUSEHOLDS), rows
    assert rows[0][0] == world["Ada"], rows
    assert rows[0][1]["conflict"] == "Hard conflict" and rows[0][1]["members"] == "7" and rows[0][1]["version"] == "3", rows[0]
    assert all(cells["conflict"] == "" for _, cells in rows[1:]), rows
    assert [eid for eid, _ in rows[1:]] == sorted(eid for eid, _ in rows[1:])
    shoot(d, "entity-list-desktop.png")
    set_viewport(d, PHONE, mobile=True)
    d.refresh()
    wait_loaded(d)
    assert fits_width(d, PHONE[0]), "the entity list page is wider than a phone"
    shoot(d, "entity-list-phone.png")
    set_viewport(d, DESKTOP)
    # Search by a property's value; kept in the URL.
    search = field(d, "Search labels and properties")
    search.clear()
    search.send_keys("kisii")
    click_and_load(d, button(d, "Search"))
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(d.current_url).query).get("q") == ["kisii"], d.current_url
    found = entity_rows(d)
    assert [eid for eid, _ in found] == [world["Ada"], world["Dee"]], found
    # The household in conflict: its history, the response that changed it, and back.
    click_and_load(d, d.find_element(By.XPATH, f"//tr[@data-entity='{world['Ada']}']//a"))
    history = d.find_elements(By.CSS_SELECTOR, "ol.entity-history > li")
    assert [li.get_attribute("data-version") for li in history] == ["1", "2", "3"]
    third = history[2]
    assert "Marked a hard conflict" in third.text, third.text
    diff = [[c.text for c in tr.find_elements(By.CSS_SELECTOR, "th, td")] for tr in third.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert ["members", "5", "7"] in diff, diff
    set_viewport(d, (DESKTOP[0], 1500))  # the whole history in the picture
    shoot(d, "entity-desktop.png")
    set_viewport(d, DESKTOP)
    entity_url = d.current_url
    click_and_load(d, third.find_element(By.PARTIAL_LINK_TEXT, "response"))
    assert world["visits"][1] in d.current_url, d.current_url
    back = d.find_element(By.XPATH, "//section[contains(@class,'entities')]//a")
    assert "Household of Ada" in back.text, back.text
    click_and_load(d, back)
    assert d.current_url == entity_url
    set_viewport(d, PHONE, mobile=True)
    d.refresh()
    wait_loaded(d)
    assert fits_width(d, PHONE[0]), "the entity page is wider than a phone"
    shoot(d, "entity-phone.png")
    set_viewport(d, DESKTOP)
    click_and_load(d, button(d, "Mark as resolved"))
    assert "Done: the conflict is resolved." in page_text(d)
    assert not d.find_elements(By.XPATH, "//button[normalize-space()='Mark as resolved']")
    assert [li.get_attribute("data-version") for li in d.find_elements(By.CSS_SELECTOR, "ol.entity-history > li")] == ["1", "2", "3", "4"]
    status, _, out = srv.request("GET", f"/v1/orgs/{srv['ORG']}/entity-lists/households/entities/{world['Ada']}", srv["ADMIN"])
    assert status == 200 and out["conflict"] is None and out["version"] == 4, out
    # A correction: the label and one value, saved as version 5 from the console, its diff in the history.
    label = field(d, "Label")
    label.clear()
    label.send_keys("Household of Ada (moved)")
    members = field(d, "members")
    members.clear()
    members.send_keys("8")
    click_and_load(d, button(d, "Save a new version"))
    assert "Saved: version 5 of the entity." in page_text(d), page_text(d)
    history = d.find_elements(By.CSS_SELECTOR, "ol.entity-history > li")
    assert history[-1].get_attribute("data-version") == "5" and "changed in the console" in history[-1].text, history[-1].text
    diff = [[c.text for c in tr.find_elements(By.CSS_SELECTOR, "th, td")] for tr in history[-1].find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert ["members", "7", "8"] in diff and ["Label", "Household of Ada", "Household of Ada (moved)"] in diff, diff
    status, _, out = srv.request("GET", f"/v1/orgs/{srv['ORG']}/entity-lists/households/entities/{world['Ada']}", srv["ADMIN"])
    assert status == 200 and out["version"] == 5 and out["properties"]["members"] == "8" and out["label"] == "Household of Ada (moved)", out
    # Saving the form unchanged makes no version.
    click_and_load(d, button(d, "Save a new version"))
    assert "Nothing was changed" in page_text(d)
    assert len(d.find_elements(By.CSS_SELECTOR, "ol.entity-history > li")) == 5


def test_entity_pages_for_a_collector_read_but_never_resolve():
    srv = shared_server()
    world = households(srv)
    d = browser()
    sign_in_token(d, srv, srv["COLLECTOR"])
    click_and_load(d, d.find_element(By.XPATH, "//nav//a[normalize-space()='Entity lists']"))
    click_and_load(d, d.find_element(By.XPATH, "//table//a[normalize-space()='households']"))
    assert len(entity_rows(d)) == len(HOUSEHOLDS)
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/entity-lists/households/entities/{world['Bo']}")
    wait_loaded(d)
    assert "Household of Bo" in page_text(d)
    assert not d.find_elements(By.XPATH, "//button[normalize-space()='Mark as resolved']")
    assert not d.find_elements(By.XPATH, "//button[normalize-space()='Save a new version']")


TESTS = [
    test_entity_list_found_from_the_menu_searched_and_resolved,
    test_entity_pages_for_a_collector_read_but_never_resolve,
]


if __name__ == "__main__":
    argv = [a for a in sys.argv[1:] if a != "--save-screenshots"]
    sys.exit(run_tests(TESTS, argv, "browser tests (entity lists)", finish=[stop_shared_server]))
