// The console's map view: the located responses of the page's filters as clustered Leaflet
// markers (Leaflet and Leaflet.markercluster as Debian packages them, served by surveyd), lines
// and shapes drawn with Leaflet's SVG renderer, each popup linking to its response. Without
// this script the page lists the points; without tiles (none set, or offline) the points show
// on a plain background with a scale.
(function () {
  "use strict";
  var el = document.getElementById("map");
  if (!el || !window.L || !L.markerClusterGroup) { return; }
  el.classList.add("map-live");
  var map = L.map(el, { zoomControl: true, worldCopyJump: true });
  var tiles = el.getAttribute("data-tiles");
  if (tiles) {
    L.tileLayer(tiles, { attribution: el.getAttribute("data-attribution") || "", maxZoom: 19, crossOrigin: false }).addTo(map);
  }
  L.control.scale().addTo(map);
  map.setView([0, 0], 2);
  var words = function (name) { return (el.getAttribute(name) || "").split(" ").filter(function (s) { return s.length > 0; }); };
  var traces = words("data-traces"), shapes = words("data-shapes");
  var responseBase = el.getAttribute("data-response-base");

  function popup(p) {
    var box = document.createElement("div");
    var a = document.createElement("a");
    a.href = responseBase + encodeURIComponent(p.responseId);
    a.textContent = "Open response " + p.clientSubmissionId;
    box.appendChild(a);
    var lines = [p.submitterName || p.submittedBy, (p.receivedAt || "").replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC"), p.reviewState];
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

  fetch(el.getAttribute("data-points"), { credentials: "same-origin", headers: { "Accept": "application/geo+json" } })
    .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
    .then(function (fc) {
      var cluster = L.markerClusterGroup({ chunkedLoading: true });
      var drawn = L.featureGroup();
      var bounds = L.latLngBounds([]);
      var markers = [];
      fc.features.forEach(function (f) {
        var c = f.geometry && f.geometry.coordinates;
        if (!c) { return; }
        var ll = L.latLng(c[1], c[0]);
        var p = f.properties || {};
        var m = L.marker(ll, { title: p.clientSubmissionId || "", alt: "Response " + (p.clientSubmissionId || "") });
        m.bindPopup(function () { return popup(p); });
        markers.push(m);
        bounds.extend(ll);
        traces.forEach(function (id) {
          var pts = points(p[id]);
          if (pts.length >= 2) { drawn.addLayer(L.polyline(pts, { weight: 3 })); pts.forEach(function (q) { bounds.extend(q); }); }
        });
        shapes.forEach(function (id) {
          var pts = points(p[id]);
          if (pts.length >= 3) { drawn.addLayer(L.polygon(pts, { weight: 2 })); pts.forEach(function (q) { bounds.extend(q); }); }
        });
      });
      cluster.addLayers(markers);
      map.addLayer(cluster);
      drawn.addTo(map);
      if (bounds.isValid()) { map.fitBounds(bounds, { padding: [24, 24], maxZoom: 16 }); }
      el.setAttribute("data-markers", String(markers.length));
      el.setAttribute("data-lines", String(drawn.getLayers().length));
    })
    .catch(function (e) {
      el.setAttribute("data-error", String(e));
      var note = document.createElement("p");
      note.className = "map-error";
      note.textContent = "The map could not load its points (" + e + "); the list below has them.";
      el.parentNode.insertBefore(note, el);
    });
})();
