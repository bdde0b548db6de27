(function () {
  "use strict";
  var root = document.documentElement;
  var errors = [];
  window.addEventListener("error", function (ev) { errors.push(String(ev.message)); root.dataset.bmeErrors = errors.join(" | "); });

  var data = JSON.parse(document.getElementById("bme-data").textContent);
  var nodes = data.nodes, edges = data.edges, byId = {};
  nodes.forEach(function (n, i) { n.index = i; byId[n.id] = n; n.text = (n.label + " " + Object.keys(n.fields).map(function (k) { return k + " " + n.fields[k]; }).join(" ")).toLowerCase(); });
  edges.forEach(function (e) { e.a = byId[e.from]; e.b = byId[e.to]; });
  edges = edges.filter(function (e) { return e.a && e.b; });

  var canvas = document.getElementById("graph"), ctx = canvas.getContext("2d");
  var searchBox = document.getElementById("search"), slider = document.getElementById("time");
  var timeLabel = document.getElementById("time-label"), archivedBox = document.getElementById("archived");
  var panel = document.getElementById("panel"), countLabel = document.getElementById("count");
  var hiddenTypes = {}, selected = null, matches = null;
  var view = { x: 0, y: 0, k: 1 };

  // a seeded generator: the same graph is laid out the same way every time
  var seed = 42;
  function random() { seed = (seed + 0x6D2B79F5) | 0; var t = Math.imul(seed ^ (seed >>> 15), 1 | seed); t ^= t + Math.imul(t ^ (t >>> 7), 61 | t); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; }
  var spread = 40 * Math.sqrt(nodes.length + 1);
  nodes.forEach(function (n) { var a = random() * 2 * Math.PI, r = spread * Math.sqrt(random()); n.x = r * Math.cos(a); n.y = r * Math.sin(a); n.vx = 0; n.vy = 0; n.r = 4 + n.importance * 0.8; });

  slider.min = 0; slider.max = data.maxSeq; slider.value = data.maxSeq;

  function visible(n) { return !hiddenTypes[n.type] && (archivedBox.checked || !n.archived) && n.seq[0] <= +slider.value; }

  // force layout: springs along edges, repulsion between nodes found through a grid, gravity
  function tick(alpha) {
    var shown = nodes.filter(visible), cell = 80, grid = {};
    shown.forEach(function (n) { var key = Math.floor(n.x / cell) + "," + Math.floor(n.y / cell); (grid[key] = grid[key] || []).push(n); });
    shown.forEach(function (n) {
      var gx = Math.floor(n.x / cell), gy = Math.floor(n.y / cell);
      for (var dx = -1; dx <= 1; dx++) for (var dy = -1; dy <= 1; dy++) {
        var bucket = grid[(gx + dx) + "," + (gy + dy)]; if (!bucket) continue;
        for (var i = 0; i < bucket.length; i++) {
          var m = bucket[i]; if (m === n) continue;
          var ex = n.x - m.x, ey = n.y - m.y, d2 = ex * ex + ey * ey + 0.01;
          if (d2 > cell * cell) continue;
          var f = 600 * alpha / d2; n.vx += ex * f; n.vy += ey * f;
        }
      }
      n.vx -= n.x * 0.002 * alpha; n.vy -= n.y * 0.002 * alpha;
    });
    edges.forEach(function (e) {
      if (!visible(e.a) || !visible(e.b)) return;
      var ex = e.b.x - e.a.x, ey = e.b.y - e.a.y, d = Math.sqrt(ex * ex + ey * ey) + 0.01;
      var f = (d - 60) / d * 0.05 * alpha * (e.valid ? 1 : 0.3);
      e.a.vx += ex * f; e.a.vy += ey * f; e.b.vx -= ex * f; e.b.vy -= ey * f;
    });
    shown.forEach(function (n) { if (n === dragging) return; n.vx *= 0.6; n.vy *= 0.6; n.x += n.vx; n.y += n.vy; });
  }

  function layout(steps) { for (var i = 0; i < steps; i++) tick(1 - i / steps); }

  function resize() {
    var box = canvas.parentNode.getBoundingClientRect(), ratio = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, box.width * ratio); canvas.height = Math.max(1, box.height * ratio);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  }

  function fit() {
    var shown = nodes.filter(visible); if (!shown.length) return;
    var x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    shown.forEach(function (n) { x0 = Math.min(x0, n.x); x1 = Math.max(x1, n.x); y0 = Math.min(y0, n.y); y1 = Math.max(y1, n.y); });
    var w = canvas.clientWidth, h = canvas.clientHeight;
    view.k = Math.min(4, 0.9 * Math.min(w / (x1 - x0 + 40), h / (y1 - y0 + 40)));
    view.x = w / 2 - view.k * (x0 + x1) / 2; view.y = h / 2 - view.k * (y0 + y1) / 2;
  }

  function draw() {
    var w = canvas.clientWidth, h = canvas.clientHeight, shown = 0;
    ctx.clearRect(0, 0, w, h); ctx.fillStyle = "#fafafa"; ctx.fillRect(0, 0, w, h);
    ctx.save(); ctx.translate(view.x, view.y); ctx.scale(view.k, view.k);
    ctx.lineWidth = 1.2 / view.k;
    edges.forEach(function (e) {
      if (!visible(e.a) || !visible(e.b)) return;
      ctx.setLineDash(e.valid ? [] : [5 / view.k, 4 / view.k]);
      ctx.strokeStyle = e.valid ? "rgba(60,60,60,0.45)" : "rgba(150,150,150,0.7)";
      ctx.beginPath(); ctx.moveTo(e.a.x, e.a.y); ctx.lineTo(e.b.x, e.b.y); ctx.stroke();
    });
    ctx.setLineDash([]);
    var few = nodes.filter(visible).length <= 60;  // few nodes: every one gets its label
    nodes.forEach(function (n) {
      if (!visible(n)) return; shown++;
      var dim = matches && !matches[n.id];
      ctx.globalAlpha = dim ? 0.15 : (n.archived ? 0.45 : 1);
      ctx.fillStyle = n.colour; ctx.beginPath(); ctx.arc(n.x, n.y, n.r, 0, 2 * Math.PI); ctx.fill();
      ctx.strokeStyle = n === selected ? "#000" : (n.status === "pinned" ? "#c00" : "#fff");
      ctx.lineWidth = (n === selected || n.status === "pinned" ? 2.5 : 1) / view.k; ctx.stroke();
      if (few || view.k > 1.2 || n === selected || (matches && matches[n.id])) {
        ctx.fillStyle = "#222"; ctx.font = (11 / view.k) + "px sans-serif";
        ctx.fillText(n.label.slice(0, 40), n.x + n.r + 2 / view.k, n.y + 4 / view.k);
      }
    });
    ctx.globalAlpha = 1; ctx.restore();
    countLabel.textContent = shown + " of " + nodes.length + " nodes";
    root.dataset.bmeDrawn = String(shown);
  }

  function el(tag, text, cls) { var e = document.createElement(tag); if (text != null) e.textContent = text; if (cls) e.className = cls; return e; }

  function show(n) {
    selected = n; panel.textContent = "";
    if (!n) { panel.appendChild(el("p", "Click a node to see its fields.")); draw(); return; }
    panel.appendChild(el("h2", n.label));
    panel.appendChild(el("div", n.type + " · " + n.status + " · level " + n.level + " · messages #" + n.seq[0] + "-" + n.seq[1] + " · importance " + n.importance, "meta"));
    panel.appendChild(el("div", n.id, "meta"));
    var table = el("table");
    Object.keys(n.fields).forEach(function (k) { var tr = el("tr"); tr.appendChild(el("td", k)); tr.appendChild(el("td", String(n.fields[k]))); table.appendChild(tr); });
    panel.appendChild(table);
    var mine = edges.filter(function (e) { return e.a === n || e.b === n; });
    if (mine.length) {
      panel.appendChild(el("strong", "edges"));
      var ul = el("ul");
      mine.forEach(function (e) {
        var other = e.a === n ? e.b : e.a, li = el("li", null, e.valid ? "" : "invalid");
        li.appendChild(document.createTextNode((e.a === n ? "→ " : "← ") + e.relation + " "));
        var a = el("a", other.label.slice(0, 60)); a.addEventListener("click", function () { show(other); }); li.appendChild(a);
        if (!e.valid) li.appendChild(document.createTextNode(" (no longer true)"));
        ul.appendChild(li);
      });
      panel.appendChild(ul);
    }
    draw();
  }

  function nodeAt(px, py) {
    var x = (px - view.x) / view.k, y = (py - view.y) / view.k, best = null, bestD = Infinity;
    nodes.forEach(function (n) { if (!visible(n)) return; var d = Math.hypot(n.x - x, n.y - y); if (d < n.r + 4 / view.k && d < bestD) { best = n; bestD = d; } });
    return best;
  }

  var dragging = null, panning = null, moved = false;
  canvas.addEventListener("mousedown", function (ev) { var r = canvas.getBoundingClientRect(); dragging = nodeAt(ev.clientX - r.left, ev.clientY - r.top); panning = dragging ? null : { x: ev.clientX - view.x, y: ev.clientY - view.y }; moved = false; });
  window.addEventListener("mousemove", function (ev) {
    if (!dragging && !panning) return; moved = true;
    if (dragging) { var r = canvas.getBoundingClientRect(); dragging.x = (ev.clientX - r.left - view.x) / view.k; dragging.y = (ev.clientY - r.top - view.y) / view.k; }
    else { view.x = ev.clientX - panning.x; view.y = ev.clientY - panning.y; }
    draw();
  });
  window.addEventListener("mouseup", function (ev) {
    if (!moved && (dragging || panning)) { var r = canvas.getBoundingClientRect(); show(nodeAt(ev.clientX - r.left, ev.clientY - r.top)); }
    dragging = null; panning = null;
  });
  canvas.addEventListener("wheel", function (ev) {
    ev.preventDefault(); var r = canvas.getBoundingClientRect(), px = ev.clientX - r.left, py = ev.clientY - r.top;
    var k = Math.max(0.05, Math.min(20, view.k * Math.exp(-ev.deltaY * 0.0015)));
    view.x = px - (px - view.x) * k / view.k; view.y = py - (py - view.y) * k / view.k; view.k = k; draw();
  }, { passive: false });

  searchBox.addEventListener("input", function () {
    var q = searchBox.value.trim().toLowerCase();
    matches = null;
    if (q) { matches = {}; nodes.forEach(function (n) { if (n.text.indexOf(q) >= 0) matches[n.id] = true; }); }
    root.dataset.bmeMatches = matches ? String(Object.keys(matches).length) : "";
    draw();
  });
  searchBox.addEventListener("keydown", function (ev) {
    if (ev.key !== "Enter" || !matches) return;
    var first = nodes.find(function (n) { return matches[n.id] && visible(n); });
    if (first) focus(first);
  });
  function focus(n) { view.x = canvas.clientWidth / 2 - view.k * n.x; view.y = canvas.clientHeight / 2 - view.k * n.y; show(n); }
  function settle() { layout(60); draw(); }
  slider.addEventListener("input", function () { timeLabel.textContent = "up to message #" + slider.value; settle(); });
  archivedBox.addEventListener("change", settle);

  var legend = document.getElementById("legend");
  data.types.forEach(function (t) {
    var label = el("label"), box = el("input"), dot = el("span", null, "swatch");
    box.type = "checkbox"; box.checked = true; dot.style.background = t.colour;
    box.addEventListener("change", function () { hiddenTypes[t.id] = !box.checked; settle(); });
    label.appendChild(box); label.appendChild(dot); label.appendChild(document.createTextNode(t.id + " (" + t.count + ")"));
    legend.appendChild(label);
  });
  window.addEventListener("resize", function () { resize(); draw(); });

  timeLabel.textContent = "up to message #" + slider.value;
  resize(); layout(nodes.length > 3000 ? 80 : 250); fit(); show(null);
  // a link may name a search and a node: graph.html#search=lantern&node=<id>
  var wanted = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (part) {
    var kv = part.split("="); if (kv.length === 2) wanted[kv[0]] = decodeURIComponent(kv[1]);
  });
  if (wanted.search) { searchBox.value = wanted.search; searchBox.dispatchEvent(new Event("input")); }
  if (wanted.node && byId[wanted.node]) focus(byId[wanted.node]);
  root.dataset.bmeReady = "true";
})();
