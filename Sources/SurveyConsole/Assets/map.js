// The console's map view: the located responses of the page's filters as clusters the server
// makes for the view shown (`…/clusters.json?zoom=Z&bbox=w,s,e,n`, see MapClusters.swift), drawn
// with Leaflet (Debian's, served by surveyd) in Leaflet.markercluster's own styles; lines and
// shapes drawn with Leaflet's SVG renderer; a single point's popup linking to its response.
// Without this script the page lists the points; without tiles (none set, or offline) the
// points show on a plain background with a scale.
//
// First the whole world is asked for once, with the lines: it gives the box of every point and
// how many there are; the view is fitted to them (and the lines), then the clusters of that view
// are fetched and drawn, and again after every move or zoom (debounced; an answer to an older
// view is dropped). Clicking a cluster zooms into its points' box; points at one place (from zoom
// 18 every point comes singly) are spread on a circle around it. When the fitted view is drawn,
// `#map` gets `data-markers` (the sum of the drawn counts: every located response, all in the
// fitted view), `data-total` (the server's count) and `data-lines`, the status line says how
// many points the map shows, and the page marks `map-bounds-parsed` and `map-clusters-drawn` on
// its performance timeline. After every drawing `#map` carries `data-in-view` (the counts drawn),
// `data-drawn-zoom`, `data-drawn-bbox` (the box asked for) and `data-draws` (how many so far).
(function () {
  "use strict";
  var el = document.getElementById("map");
  if (!el || !window.L) { return; }
  el.classList.add("map-live");
  var maxZoom = 19, singlyFrom = 18;
  var map = L.map(el, { zoomControl: true, worldCopyJump: true, maxZoom: maxZoom });
  var tiles = el.getAttribute("data-tiles");
  if (tiles) {
    L.tileLayer(tiles, { attribution: el.getAttribute("data-attribution") || "", maxZoom: maxZoom, crossOrigin: false }).addTo(map);
  }
  L.control.scale().addTo(map);
  map.setView([0, 0], 2);
  var words = function (name) { return (el.getAttribute(name) || "").split(" ").filter(function (s) { return s.length > 0; }); };
  var traces = words("data-traces"), shapes = words("data-shapes");
  var responseBase = el.getAttribute("data-response-base");
  var source = el.getAttribute("data-clusters");
  var mark = function (name) { if (window.performance && performance.mark) { performance.mark(name); } };
  var markers = L.layerGroup().addTo(map);
  var submitters = [];

  function url(query) { return source + (source.indexOf("?") >= 0 ? "&" : "?") + query; }
  function get(query) {
    return fetch(url(query), { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); });
  }

  // A point: [lat, lon, responseId, clientSubmissionId, submitter (index), receivedAt (ms), reviewState].
  function popup(q) {
    var box = document.createElement("div");
    var a = document.createElement("a");
    a.href = responseBase + encodeURIComponent(q[2]);
    a.textContent = "Open response " + q[3];
    box.appendChild(a);
    var lines = [submitters[q[4]], new Date(q[5]).toISOString().replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC"), q[6]];
    lines.forEach(function (t) {
      if (!t) { return; }
      var d = document.createElement("div");
      d.textContent = t;
      box.appendChild(d);
    });
    return box;
  }

  function points(list) {
    if (!Array.isArray(list)) { return []; }
    return list.filter(function (q) { return q && typeof q.lat === "number" && typeof q.lon === "number"; })
      .map(function (q) { return [q.lat, q.lon]; });
  }

  // The view as the server reads it: west within [-180, 180] (the copy of the world shown is
  // `shift` degrees away), east at most 360° east of it, latitudes within ±90.
  function view() {
    var b = map.getBounds(), w = b.getWest(), e = b.getEast(), shift = 0;
    var s = Math.max(-90, Math.min(90, b.getSouth())), n = Math.max(s, Math.min(90, b.getNorth()));
    if (e - w >= 360) { w = -180; e = 180; } else {
      shift = Math.floor((w + 180) / 360) * 360;
      w = Math.max(-180, Math.min(180, w - shift));
      e = Math.max(w, Math.min(w + 360, e - shift));
    }
    var bbox = [w, s, e, n].join(",");
    return { query: "zoom=" + map.getZoom() + "&bbox=" + bbox, bbox: bbox, shift: shift };
  }

  function clusterIcon(n) {
    var size = n < 10 ? "small" : n < 100 ? "medium" : "large";
    return L.divIcon({ html: "<div><span>" + String(n) + "</span></div>", className: "marker-cluster marker-cluster-" + size, iconSize: L.point(40, 40) });
  }

  function zoomInto(c, shift) {
    var bounds = L.latLngBounds([c[3], c[4] + shift], [c[5], c[6] + shift]);
    var z = Math.min(singlyFrom, Math.max(map.getZoom() + 1, map.getBoundsZoom(bounds, false, L.point(48, 48))));
    map.setView(bounds.getCenter(), z);
  }

  var draws = 0;
  function draw(data, shift, bbox) {
    submitters = data.submitters || [];
    markers.clearLayers();
    var sum = 0;
    (data.clusters || []).forEach(function (c) {
      sum += c[2];
      var m = L.marker([c[0], c[1] + shift], { icon: clusterIcon(c[2]), title: c[2] + " responses: zoom in", alt: c[2] + " responses" });
      m.on("click", function () { zoomInto(c, shift); });
      markers.addLayer(m);
    });
    // Points at exactly one place (they come singly from zoom 18) are spread on a circle around
    // it, each with a line to the place, as markercluster's "spiderfy" shows them.
    var places = {}, order = [];
    (data.points || []).forEach(function (q) {
      var k = q[0] + "," + q[1];
      if (!places[k]) { places[k] = []; order.push(k); }
      places[k].push(q);
    });
    order.forEach(function (k) {
      var group = places[k], spot = L.latLng(group[0][0], group[0][1] + shift);
      var centre = group.length > 1 ? map.latLngToLayerPoint(spot) : null, radius = 18 + 4 * group.length;
      group.forEach(function (q, j) {
        sum += 1;
        var at = spot;
        if (centre) {
          var angle = 2 * Math.PI * j / group.length;
          at = map.layerPointToLatLng(centre.add(L.point(radius * Math.cos(angle), radius * Math.sin(angle))));
          markers.addLayer(L.polyline([spot, at], { weight: 1.5, opacity: 0.6, interactive: false }));
        }
        var m = L.marker(at, { title: q[3], alt: "Response " + q[3] });
        // The map's popup, not the marker's: it stays open when the move it makes (to fit it in
        // the view) draws the markers anew. Its offset puts it over the default icon's tip.
        m.on("click", function () { L.popup({ offset: L.point(1, -27) }).setLatLng(at).setContent(popup(q)).openOn(map); });
        markers.addLayer(m);
      });
    });
    el.setAttribute("data-in-view", String(sum));
    el.setAttribute("data-drawn-zoom", String(map.getZoom()));
    el.setAttribute("data-drawn-bbox", bbox);
    el.setAttribute("data-draws", String(++draws));
    return sum;
  }

  function failed(e) {
    el.setAttribute("data-error", String(e));
    if (document.querySelector(".map-error")) { return; }
    var note = document.createElement("p");
    note.className = "map-error";
    note.textContent = "The map could not load its points (" + e + "); the list below has them.";
    el.parentNode.insertBefore(note, el);
  }

  // Only the answer to the latest request is drawn.
  var asked = 0, timer = null;
  function refresh(first, total, lineCount) {
    var n = ++asked, v = view();
    return get(v.query).then(function (data) {
      if (n !== asked) { return; }
      var sum = draw(data, v.shift, v.bbox);
      if (first) {
        mark("map-clusters-drawn");
        el.setAttribute("data-total", String(total));
        el.setAttribute("data-lines", String(lineCount));
        el.setAttribute("data-markers", String(sum));
        var status = document.querySelector("p[role=status]");
        if (status) {
          status.textContent = total.toLocaleString("en") + " located response" + (total === 1 ? "" : "s") + " on the map under these filters.";
        }
      }
    });
  }
  function later() {
    if (timer) { clearTimeout(timer); }
    timer = setTimeout(function () { timer = null; refresh(false).catch(failed); }, 120);
  }

  get("zoom=0&bbox=-180,-90,180,90&lines=true")
    .then(function (data) {
      mark("map-bounds-parsed");
      var withLines = data.lines || {};
      var drawn = L.featureGroup();
      var south = 90, west = 180, north = -90, east = -180;
      var extend = function (lat, lon) {
        if (lat < south) { south = lat; } if (lat > north) { north = lat; }
        if (lon < west) { west = lon; } if (lon > east) { east = lon; }
      };
      if (Array.isArray(data.bounds)) { extend(data.bounds[0], data.bounds[1]); extend(data.bounds[2], data.bounds[3]); }
      Object.keys(withLines).forEach(function (k) {
        var p = withLines[k];
        traces.forEach(function (id) {
          var pts = points(p[id]);
          if (pts.length >= 2) { drawn.addLayer(L.polyline(pts, { weight: 3 })); pts.forEach(function (q) { extend(q[0], q[1]); }); }
        });
        shapes.forEach(function (id) {
          var pts = points(p[id]);
          if (pts.length >= 3) { drawn.addLayer(L.polygon(pts, { weight: 2 })); pts.forEach(function (q) { extend(q[0], q[1]); }); }
        });
      });
      drawn.addTo(map);
      if (north >= south) { map.fitBounds([[south, west], [north, east]], { padding: [24, 24], maxZoom: 16, animate: false }); }
      return refresh(true, data.total || 0, drawn.getLayers().length);
    })
    .then(function () { map.on("moveend zoomend", later); })
    .catch(failed);
})();
