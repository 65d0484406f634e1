#!/usr/bin/env python3
"""Browser tests of the console's data views — Data, Summary and Map — in a real headless
Chromium, with JavaScript on and off, at a desktop's and a phone's width.

Run through scripts/browser_tests.sh (or directly, once it has made its venv):

    scripts/browser_tests.sh -k data_views        # these tests
    .build/venv-browser/bin/python Tests/Browser/test_console_data.py --save-screenshots
                                                  # the same, saving Docs/console/{data,summary,map}-*.png

A survey with a group, a repeat, two languages and a location is published through the JSON API
and responses are synced by the demo's collector. The tests read the table against the CSV
export for the same filters, page through it while responses arrive, read the summary's counts
against what they sent, count the markers on the map against the located responses, and check
that every script, style and request of the pages comes from surveyd's own origin.
"""
import csv
import io
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from test_console import (DESKTOP, PHONE, ROOT, By, _drivers, browser, button, click_and_load, field,  # noqa: E402
                          run_tests, set_viewport, shared_server, sign_in_token, stop_shared_server, wait_loaded)
from test_console_admin import new_survey, submission, submit_raw  # noqa: E402

SAVE = "--save-screenshots" in sys.argv
SHOTS = os.path.join(ROOT, "Docs", "console")
EN, ES = "English (en)", "Español (es)"


def both(en, es):
    return {EN: en, ES: es}


DEFINITION = {
    "title": "Water points", "defaultLanguage": EN,
    "questions": [
        {"id": "source", "type": "select_one", "label": both("Water source", "Fuente"), "required": True,
         "choices": [{"name": "well", "label": both("Well", "Pozo")}, {"name": "borehole", "label": both("Borehole", "Perforación")},
                     {"name": "river", "label": both("River", "Río")}]},
        {"id": "household", "type": "group", "label": both("Household", "Hogar"), "children": [
            {"id": "size", "type": "integer", "label": both("People", "Personas"), "required": True},
            {"id": "uses", "type": "select_multiple", "label": both("Uses", "Usos"),
             "choices": [{"name": "drink", "label": both("Drinking", "Beber")}, {"name": "wash", "label": both("Washing", "Lavar")}]},
        ]},
        {"id": "members", "type": "repeat", "label": both("Members", "Miembros"), "children": [
            {"id": "member_name", "type": "text", "label": both("Name", "Nombre")}]},
        {"id": "place", "type": "geopoint", "label": both("Place", "Lugar")},
    ],
}
LABELS = {"well": "Well", "borehole": "Borehole", "river": "River", "drink": "Drinking", "wash": "Washing"}


def answers(i):
    a = {"source": ["well", "borehole", "river"][i % 3], "size": 1 + i % 6}
    if i % 4 != 0:
        a["uses"] = ["drink"] + (["wash"] if i % 2 else [])
    if i % 3 != 2:
        a["members"] = [{"member_name": f"P{j}"} for j in range(i % 3)]
    if i % 5 != 4:  # a cluster near Delft, a few far away
        a["place"] = {"lat": 52.0 + (i % 7) * 0.001 + (10 if i % 9 == 0 else 0), "lon": 4.35 + (i % 5) * 0.001}
    return a


_survey = {}


def water_points(srv):
    """The survey, published once per server, with 60 responses: (surveyId, {responseId: answers})."""
    if not _survey:
        sid, version = new_survey(srv, "Water points", review=True, definition=DEFINITION)
        sent = {}
        for i in range(60):
            status, _, out = submit_raw(srv, submission(version["surveyVersionId"], version["contentHash"], answers(i)))
            assert status == 201, (status, out)
            sent[out["responseId"]] = answers(i)
        _survey.update(sid=sid, version=version, sent=sent)
    return _survey["sid"], _survey["sent"]


def views_base(srv, sid):
    return f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{sid}"


def no_script_browser(size=DESKTOP):
    """A headless Chromium with JavaScript turned off."""
    opts = webdriver.ChromeOptions()
    opts.binary_location = os.environ.get("CHROME_BIN") or "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", f"--window-size={size[0]},{size[1]}"):
        opts.add_argument(arg)
    opts.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    d = webdriver.Chrome(options=opts, service=Service(executable_path=os.environ.get("CHROMEDRIVER") or "/usr/bin/chromedriver"))
    _drivers.append(d)
    set_viewport(d, size)
    return d


def table_rows(d):
    """The data table's rows: (responseId, {column: text})."""
    out = []
    for tr in d.find_elements(By.CSS_SELECTOR, "table.data tbody tr"):
        cells = {td.get_attribute("data-column"): td.text.strip() for td in tr.find_elements(By.CSS_SELECTOR, "td[data-column]")}
        out.append((tr.get_attribute("data-response"), cells))
    return out


def fits_width(d, width):
    """Nothing of the page sticks out sideways (a wide table scrolls inside its own box)."""
    return d.execute_script("return document.documentElement.scrollWidth") <= width


def foreign_loads(d, base):
    """Scripts, styles and requests the page made to another origin (tile images may: the map's tiles)."""
    entries = d.execute_script("return performance.getEntriesByType('resource').map(e => [e.name, e.initiatorType])")
    return [(n, t) for n, t in entries if not n.startswith(base) and t != "img"]


def shoot(d, name):
    if SAVE:
        # The view itself, below the filter form.
        d.execute_script("var e = document.querySelector('p[role=status]'); if (e) { e.scrollIntoView(); }")
        os.makedirs(SHOTS, exist_ok=True)
        d.save_screenshot(os.path.join(SHOTS, name))


def test_data_views_table_equals_the_csv_export_and_pages_by_keyset():
    srv = shared_server()
    sid, sent = water_points(srv)
    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])
    # The home page links the views of each survey.
    link = d.find_element(By.XPATH, f"//li[contains(., 'Water points')]//a[normalize-space()='Data']")
    click_and_load(d, link)
    assert "/data" in d.current_url
    heads = [th.text for th in d.find_elements(By.CSS_SELECTOR, "table.data thead th")]
    for h in ("Water source", "Household", "People", "Uses", "Members", "Place"):
        assert h in heads, heads
    # Filters: the collector, through the form's labelled fields; kept in the URL.
    collector = Select(field(d, "Submitted by"))
    collector.select_by_visible_text("Cole Collector")
    Select(field(d, "Rows per page")).select_by_visible_text("250")
    click_and_load(d, button(d, "Apply filters"))
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(d.current_url).query)
    assert query.get("submittedBy") and query.get("size") == ["250"], d.current_url
    rows = table_rows(d)
    status, _, body = srv.request("GET", f"/v1/orgs/{srv['ORG']}/surveys/{sid}/responses.csv?submittedBy={query['submittedBy'][0]}", srv["REVIEWER"])
    assert status == 200
    records = list(csv.DictReader(io.StringIO(body.decode() if isinstance(body, bytes) else body)))
    by_id = {r["responseId"]: r for r in records}
    assert sorted(r for r, _ in rows) == sorted(by_id) and len(rows) == 60
    for rid, cells in rows:
        r = by_id[rid]
        assert cells["source"] == LABELS[r["source"]], (cells, r)
        assert cells["size"] == r["size"]
        assert cells["uses"] == ", ".join(LABELS[u] for u in r["uses"].split()), (cells, r)
        assert cells["members"] == r["members"]
        assert cells["place"] == (f"{r['place.lat']}, {r['place.lon']}" if r["place.lat"] else ""), (cells, r)
    # The export button downloads exactly this selection.
    href = d.find_element(By.XPATH, "//a[contains(., 'as CSV')]").get_attribute("href")
    assert "submittedBy=" in href and "/download?format=csv" in href, href
    # Pages of 50 by keyset while responses arrive: every response once.
    Select(field(d, "Rows per page")).select_by_visible_text("50")
    click_and_load(d, button(d, "Apply filters"))
    seen = [r for r, _ in table_rows(d)]
    version = _survey["version"]
    status, _, _ = submit_raw(srv, submission(version["surveyVersionId"], version["contentHash"], answers(100)))
    assert status == 201
    nxt = d.find_element(By.CSS_SELECTOR, "a[rel=next]")
    assert nxt.text.startswith("Next")
    click_and_load(d, nxt)
    seen += [r for r, _ in table_rows(d)]
    assert not d.find_elements(By.CSS_SELECTOR, "a[rel=next]"), "the last page has no Next link"
    assert len(seen) == len(set(seen)) == 60 and set(seen) == set(sent), (len(seen), len(set(seen)))
    del _survey["sid"], _survey["sent"]  # the survey changed: the other tests publish their own
    _survey.clear()
    # The other language, from the form's language control.
    Select(field(d, "Language")).select_by_visible_text(ES)
    click_and_load(d, button(d, "Apply filters"))
    assert "Fuente" in [th.text for th in d.find_elements(By.CSS_SELECTOR, "table.data thead th")]
    assert foreign_loads(d, srv.base) == []
    Select(field(d, "Language")).select_by_visible_text(EN)
    click_and_load(d, button(d, "Apply filters"))
    shoot(d, "data-desktop.png")
    set_viewport(d, PHONE, mobile=True)
    d.refresh()
    wait_loaded(d)
    assert fits_width(d, PHONE[0]), "the data page is wider than a phone"
    shoot(d, "data-phone.png")


def test_data_views_summary_counts_what_was_sent_with_and_without_javascript():
    srv = shared_server()
    sid, sent = water_points(srv)
    for d in (browser(), no_script_browser()):
        sign_in_token(d, srv, srv["REVIEWER"]) if d is _drivers[0] else None
        if d is not _drivers[0]:
            # No script is needed to sign in: the form posts.
            d.get(srv.base + "/console/sign-in")
            field(d, "API token").send_keys(srv["REVIEWER"])
            click_and_load(d, button(d, "Sign in with token"))
        d.get(views_base(srv, sid) + "/summary")
        wait_loaded(d)
        blocks = {b.find_element(By.TAG_NAME, "h2").text: b for b in d.find_elements(By.CSS_SELECTOR, "section.summary-block")}

        def rows(heading):
            return {tr.find_element(By.CSS_SELECTOR, "th").text: int(tr.find_elements(By.CSS_SELECTOR, "td.num")[0].text)
                    for tr in blocks[heading].find_elements(By.CSS_SELECTOR, "tbody tr")}

        values = list(sent.values())
        expected = {LABELS[s]: sum(1 for a in values if a["source"] == s) for s in ("well", "borehole", "river")}
        assert rows("Water source") == expected, (rows("Water source"), expected)
        uses = [a["uses"] for a in values if "uses" in a]
        assert rows("Uses") == {"Drinking": sum("drink" in u for u in uses), "Washing": sum("wash" in u for u in uses)}
        assert f"not answered {len(values) - len(uses)}" in blocks["Uses"].text
        sizes = sorted(a["size"] for a in values)
        text = blocks["People"].text
        for name, value in (("Count", len(sizes)), ("Min", sizes[0]), ("Max", sizes[-1])):
            assert f"{name}\n{value}" in text, text
        assert rows("Responses per collector") == {"Cole Collector": len(values)}
        assert sum(rows("Responses per day").values()) == len(values)
        # The bars are SVG drawn by the server; the counts are text beside them.
        assert blocks["Water source"].find_elements(By.CSS_SELECTOR, "svg rect")
        assert foreign_loads(d, srv.base) == []
        if d is _drivers[0]:
            shoot(d, "summary-desktop.png")
        set_viewport(d, PHONE, mobile=True)
        d.refresh()
        wait_loaded(d)
        assert fits_width(d, PHONE[0]), "the summary is wider than a phone"
        if d is _drivers[0]:
            shoot(d, "summary-phone.png")


def test_data_views_map_markers_and_the_list_without_javascript():
    srv = shared_server()
    sid, sent = water_points(srv)
    located = {rid for rid, a in sent.items() if "place" in a}
    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])
    d.get(views_base(srv, sid) + "/map")
    wait_loaded(d)
    # The tile host cannot be reached from here: the points show all the same.
    WebDriverWait(d, 20).until(lambda d: d.find_element(By.ID, "map").get_attribute("data-markers") is not None)
    m = d.find_element(By.ID, "map")
    assert m.get_attribute("data-error") is None, m.get_attribute("data-error")
    assert int(m.get_attribute("data-markers")) == len(located)
    # What the marker pane shows adds up to every located response: clusters by their count,
    # single markers by one.
    pane = d.find_element(By.CSS_SELECTOR, ".leaflet-marker-pane")
    clusters = pane.find_elements(By.CSS_SELECTOR, ".marker-cluster")
    singles = [e for e in pane.find_elements(By.CSS_SELECTOR, ".leaflet-marker-icon") if "marker-cluster" not in e.get_attribute("class")]
    assert clusters, "clustered"
    assert sum(int(c.text) for c in clusters) + len(singles) == len(located)
    assert d.find_elements(By.CSS_SELECTOR, ".leaflet-control-scale")
    assert foreign_loads(d, srv.base) == [], foreign_loads(d, srv.base)
    scripts = [s.get_attribute("src") for s in d.find_elements(By.TAG_NAME, "script")]
    assert scripts and all(s.startswith(srv.base + "/console/assets/") for s in scripts), scripts
    # A popup links to its response.
    if singles:
        singles[0].click()
        WebDriverWait(d, 5).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".leaflet-popup-content a"))
        href = d.find_element(By.CSS_SELECTOR, ".leaflet-popup-content a").get_attribute("href")
        assert "/responses/rsp_" in href and href.rsplit("/", 1)[1] in located
    shoot(d, "map-desktop.png")
    set_viewport(d, PHONE, mobile=True)
    d.refresh()
    wait_loaded(d)
    WebDriverWait(d, 20).until(lambda d: d.find_element(By.ID, "map").get_attribute("data-markers") is not None)
    assert fits_width(d, PHONE[0]), "the map page is wider than a phone"
    shoot(d, "map-phone.png")
    # Without JavaScript: the list of points, each linking to its response.
    n = no_script_browser()
    n.get(srv.base + "/console/sign-in")
    field(n, "API token").send_keys(srv["REVIEWER"])
    click_and_load(n, button(n, "Sign in with token"))
    n.get(views_base(srv, sid) + "/map")
    wait_loaded(n)
    assert "map-live" not in n.find_element(By.ID, "map").get_attribute("class"), "JavaScript ran"
    listed = {a.get_attribute("href").rsplit("/", 1)[1] for a in n.find_elements(By.CSS_SELECTOR, "ol.point-list a")}
    assert listed == located, (len(listed), len(located))


def drawn_markers(d):
    """What the marker pane shows: (sum of the counts, clusters as elements, single markers as elements)."""
    pane = d.find_element(By.CSS_SELECTOR, ".leaflet-marker-pane")
    clusters = pane.find_elements(By.CSS_SELECTOR, ".marker-cluster")
    singles = [e for e in pane.find_elements(By.CSS_SELECTOR, ".leaflet-marker-icon") if "marker-cluster" not in e.get_attribute("class")]
    return sum(int(c.text) for c in clusters) + len(singles), clusters, singles


def test_data_views_map_clusters_follow_the_view():
    """The clusters come from the server for the view shown: clicking a cluster zooms into it and
    the pane then shows what lies in the new view (counted against the responses sent), zooming
    out draws again, and at the closest zoom the points come singly with their popups."""
    srv = shared_server()
    sid, sent = water_points(srv)
    located = {rid: a["place"] for rid, a in sent.items() if "place" in a}
    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])
    d.get(views_base(srv, sid) + "/map")
    wait_loaded(d)
    WebDriverWait(d, 20).until(lambda d: d.find_element(By.ID, "map").get_attribute("data-markers") is not None)
    m = d.find_element(By.ID, "map")
    assert int(m.get_attribute("data-total")) == len(located)
    assert not [s for s in d.find_elements(By.TAG_NAME, "script") if "markercluster" in (s.get_attribute("src") or "")]
    assert not d.execute_script("return !!(window.L && L.markerClusterGroup)"), "markercluster's script is not loaded"

    def in_box():
        w, s, e, n = (float(x) for x in m.get_attribute("data-drawn-bbox").split(","))
        return sum(1 for p in located.values() if s <= p["lat"] <= n and w <= p["lon"] <= e)

    def after(action):
        draws = int(m.get_attribute("data-draws"))
        action()
        WebDriverWait(d, 20).until(lambda d: int(m.get_attribute("data-draws")) > draws
                                   and not d.find_elements(By.CSS_SELECTOR, ".leaflet-zoom-anim"))
        total, clusters, singles = drawn_markers(d)
        assert total == int(m.get_attribute("data-in-view")) == in_box(), (total, m.get_attribute("data-in-view"), in_box())
        return clusters, singles

    zooms = [int(m.get_attribute("data-drawn-zoom"))]
    clusters, singles = drawn_markers(d)[1:]
    # Drawn in markercluster's own styles: the size's class and colour by the count, 40 px round.
    colours = {"small": "rgba(181, 226, 140, 0.6)", "medium": "rgba(241, 211, 87, 0.6)", "large": "rgba(253, 156, 115, 0.6)"}
    for c in clusters:
        n = int(c.text)
        size = "small" if n < 10 else "medium" if n < 100 else "large"
        assert f"marker-cluster-{size}" in c.get_attribute("class").split(), (n, c.get_attribute("class"))
        assert c.value_of_css_property("background-color") == colours[size], c.value_of_css_property("background-color")
        assert c.size["width"] == 40 and c.size["height"] == 40 and c.value_of_css_property("border-radius") == "20px"
    while clusters and zooms[-1] < 18:
        biggest = max(clusters, key=lambda c: int(c.text))
        count = int(biggest.text)
        clusters, singles = after(biggest.click)
        zooms.append(int(m.get_attribute("data-drawn-zoom")))
        assert zooms[-1] > zooms[-2], zooms
        assert int(m.get_attribute("data-in-view")) >= count, "every point of the cluster clicked is in the new view"
    assert singles, f"single points at zoom {zooms[-1]}"
    # The highest point's popup does not fit above it: the map moves to show it, which draws the
    # markers anew, and the popup stays open.
    draws = int(m.get_attribute("data-draws"))
    min(singles, key=lambda e: e.location["y"]).click()
    WebDriverWait(d, 5).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".leaflet-popup-content a"))
    WebDriverWait(d, 5).until(lambda d: int(m.get_attribute("data-draws")) > draws)
    assert d.find_elements(By.CSS_SELECTOR, ".leaflet-popup-content a"), "the popup stays open when the markers are drawn again"
    href = d.find_element(By.CSS_SELECTOR, ".leaflet-popup-content a").get_attribute("href")
    assert "/responses/rsp_" in href and href.rsplit("/", 1)[1] in located
    WebDriverWait(d, 5).until(lambda d: d.find_element(By.CSS_SELECTOR, ".leaflet-popup").value_of_css_property("opacity") == "1")
    shoot(d, "map-closer-desktop.png")
    # Out again, by the zoom control: drawn anew for each view.
    for _ in range(3):
        after(lambda: d.find_element(By.CSS_SELECTOR, ".leaflet-control-zoom-out").click())
    assert int(m.get_attribute("data-drawn-zoom")) < zooms[-1]
    requests = d.execute_script("return performance.getEntriesByType('resource').filter(e => e.name.indexOf('/clusters.json?') >= 0).length")
    assert requests >= len(zooms) + 3, requests


TESTS = [
    test_data_views_table_equals_the_csv_export_and_pages_by_keyset,
    test_data_views_summary_counts_what_was_sent_with_and_without_javascript,
    test_data_views_map_markers_and_the_list_without_javascript,
    test_data_views_map_clusters_follow_the_view,
]


if __name__ == "__main__":
    argv = [a for a in sys.argv[1:] if a != "--save-screenshots"]
    sys.exit(run_tests(TESTS, argv, "browser tests (data, summary, map)", finish=[stop_shared_server]))
