// The console's map view: the located responses of the page's filters as clustered Leaflet
// markers (Leaflet and Leaflet.markercluster as Debian packages them, served by surveyd), lines
// and shapes drawn with Leaflet's SVG renderer, a marker's popup linking to its response. Without
// this script the page lists the points; without tiles (none set, or offline) the points show
// on a plain background with a scale.
//
// The points come compact (`…/points.json`: an array per point, see MapPointsEncoder.swift), and
// are added to the cluster layer in one `addLayers` call once the map has its final view, in
// chunks so the page stays responsive; a popup is made only when a marker is clicked. When every
// point is drawn, `#map` gets `data-markers` (their count) and `data-lines`, the status line
// says how many points the map shows, and the page marks `map-points-parsed`,
// `map-markers-made` and `map-clusters-added` on its performance timeline.
(function () {
  "use strict";
  var el = document.getElementById("map");
  if (!el || !window.L || !L.markerClusterGroup) { return; }
  el.classList.add("map-live");
  // maxZoom: markercluster needs one, also without a tile layer to give it.
  var map = L.map(el, { zoomControl: true, worldCopyJump: true, maxZoom: 19 });
  var tiles = el.getAttribute("data-tiles");
  if (tiles) {
    L.tileLayer(tiles, { attribution: el.getAttribute("data-attribution") || "", maxZoom: 19, crossOrigin: false }).addTo(map);
  }
  L.control.scale().addTo(map);
  map.setView([0, 0], 2);
  var words = function (name) { return (el.getAttribute(name) || "").split(" ").filter(function (s) { return s.length > 0; }); };
  var traces = words("data-traces"), shapes = words("data-shapes");
  var responseBase = el.getAttribute("data-response-base");
  var mark = function (name) { if (window.performance && performance.mark) { performance.mark(name); } };

  // A point: [lat, lon, responseId, clientSubmissionId, submitter (index), receivedAt (ms), reviewState].
  function popup(q, submitters) {
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

  fetch(el.getAttribute("data-points"), { credentials: "same-origin", headers: { "Accept": "application/json" } })
    .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
    .then(function (data) {
      mark("map-points-parsed");
      var list = data.points || [], submitters = data.submitters || [], withLines = data.lines || {};
      var drawn = L.featureGroup();
      var south = 90, west = 180, north = -90, east = -180;
      var extend = function (lat, lon) {
        if (lat < south) { south = lat; } if (lat > north) { north = lat; }
        if (lon < west) { west = lon; } if (lon > east) { east = lon; }
      };
      var markers = new Array(list.length);
      for (var i = 0; i < list.length; i++) {
        var q = list[i];
        markers[i] = L.marker([q[0], q[1]], { title: q[3], alt: "Response " + q[3], point: q });
        extend(q[0], q[1]);
      }
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
      mark("map-markers-made");
      drawn.addTo(map);
      // The final view first, so the clusters are made once, for it.
      if (north >= south) { map.fitBounds([[south, west], [north, east]], { padding: [24, 24], maxZoom: 16, animate: false }); }
      var finished = false;
      var done = function () {
        if (finished) { return; }
        finished = true;
        mark("map-clusters-added");
        el.setAttribute("data-markers", String(markers.length));
        el.setAttribute("data-lines", String(drawn.getLayers().length));
        var status = document.querySelector("p[role=status]");
        if (status) {
          status.textContent = markers.length.toLocaleString("en") + " located response" + (markers.length === 1 ? "" : "s") +
            " on the map under these filters.";
        }
      };
      var cluster = L.markerClusterGroup({
        chunkedLoading: true, chunkInterval: 150, chunkDelay: 0,
        // Called before the last chunk's clusters are put on the map: done runs right after. (Also
        // called, for nothing, as the layer joins the map: hence the count.)
        chunkProgress: function (processed, total) { if (processed >= total && total === markers.length) { setTimeout(done, 0); } }
      });
      // One popup, made when a marker is clicked (not one per marker).
      cluster.on("click", function (e) {
        var q = e.layer && e.layer.options.point;
        if (q) { L.popup({}, e.layer).setLatLng(e.layer.getLatLng()).setContent(popup(q, submitters)).openOn(map); }
      });
      // On the map first: markers added to a layer not yet on a map are each looked for in its
      // list of those waiting (5 billion comparisons for 100,000).
      map.addLayer(cluster);
      cluster.addLayers(markers);
    })
    .catch(function (e) {
      el.setAttribute("data-error", String(e));
      var note = document.createElement("p");
      note.className = "map-error";
      note.textContent = "The map could not load its points (" + e + "); the list below has them.";
      el.parentNode.insertBefore(note, el);
    });
})();
