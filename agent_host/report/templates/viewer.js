(function () {
  "use strict";
  // All text from the phone or the model is set with textContent / attributes, never as HTML.
  var DATA = JSON.parse(document.getElementById("viewer-data").textContent);
  // the episodes' rows are a file of their own (trajectories/index.js), so report.html does not
  // grow with the run: it calls agentHostIndex(rows), and the viewer starts then
  var EPS = [];
  var SVGNS = "http://www.w3.org/2000/svg";
  var NONCE = document.currentScript.nonce;

  // An episode's steps are a page of their own beside the report (trajectories/NNNN.js), run by
  // a script tag: it calls agentHostEpisode(n, page). A page is loaded once, when first shown.
  var WAITING = {};
  window.agentHostEpisode = function (n, page) {
    var ep = EPS[n];
    if (!ep || ep.steps) return;
    ep.steps = page.steps; ep.extra_shots = page.extra_shots; ep.shots = page.shots; ep.start_state = page.start_state;
    (WAITING[n] || []).forEach(function (f) { f(); });
    delete WAITING[n];
  };
  function load(ep, done) {
    if (!ep.page && !ep.steps) { ep.steps = []; ep.extra_shots = []; ep.shots = []; }  // no folder: no page
    if (ep.steps || ep.missing) { done(); return; }
    var n = EPS.indexOf(ep);
    if (WAITING[n]) { WAITING[n].push(done); return; }
    WAITING[n] = [done];
    var s = document.createElement("script");
    s.nonce = NONCE;
    s.src = ep.page;
    s.addEventListener("error", function () {
      ep.missing = true;
      (WAITING[n] || []).forEach(function (f) { f(); });
      delete WAITING[n];
    });
    document.body.appendChild(s);
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, String(attrs[k]));
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
  function fmt(x, d) { return (x === null || x === undefined) ? "–" : Number(x).toFixed(d); }
  function option(sel, value, label) { var o = el("option", null, label); o.value = value; sel.appendChild(o); }
  function pill(label) {
    var p = el("span", "pill", label);
    p.style.background = DATA.colours[label] || "#555";
    return p;
  }

  // A long value (a model's reason can be hundreds of characters with no space) is cut
  // short with a button that shows all of it; CSS wraps whatever is shown.
  var LONG = 120;
  function field(name, value) {
    var text = String(value), s = el("span", "field", name + ": ");
    if (text.length <= LONG) { s.appendChild(document.createTextNode(text)); return s; }
    var cut = text.slice(0, LONG - 20) + "…", v = el("span", "value", cut), b = el("button", "more", "more");
    b.type = "button";
    b.title = "show all " + text.length + " characters";
    b.setAttribute("aria-expanded", "false");
    b.addEventListener("click", function () {
      var open = b.getAttribute("aria-expanded") !== "true";
      v.textContent = open ? text : cut;
      b.textContent = open ? "less" : "more";
      b.setAttribute("aria-expanded", String(open));
    });
    s.appendChild(v); s.appendChild(b);
    return s;
  }

  // ------------------------------------------------------------------ the task's scope
  // A step's goal is two halves (absent in records from before the whole-state judge): `asked`,
  // the asked-for change is there; `clean`, nothing else in the task's scope changed since setup.
  function halves(s) {
    var out = [];
    if (s.asked !== null && s.asked !== undefined) out.push(el("span", s.asked ? "good" : "bad", "asked-for change: " + (s.asked ? "there" : "not there")));
    if (s.clean !== null && s.clean !== undefined) out.push(el("span", s.clean ? "good" : "bad", "rest of the scope: " + (s.clean ? "unchanged" : "changed")));
    return out;
  }
  function expectedText(x) {
    var parts = [];
    if (x.added !== null) parts.push(x.added + " added");
    if (x.removed !== null) parts.push(x.removed + " removed");
    return parts.length ? "expected " + parts.join(", ") : "no change expected";
  }
  // the scope's change since setup, per kind: a line per row, "+" added, "−" removed, as a diff reads
  function stateDiff(kinds) {
    var box = el("div", "state");
    kinds.forEach(function (k) {
      box.appendChild(el("div", "kind", k.kind + ": " + k.added.length + " added, " + k.removed.length + " removed (" + expectedText(k.expected) + ")"));
      if (!k.added.length && !k.removed.length) return;
      var pre = el("pre", "diff");
      k.added.forEach(function (r) { pre.appendChild(el("span", "add", "+ " + r + "\n")); });
      k.removed.forEach(function (r) { pre.appendChild(el("span", "del", "− " + r + "\n")); });
      box.appendChild(pre);
    });
    return box;
  }
  function startState(st) {
    var d = el("details", "start-state");
    d.appendChild(el("summary", null, "state after setup" + (st.scope ? " (scope: " + st.scope + ")" : "")));
    Object.keys(st.kinds).forEach(function (k) {
      var x = st.kinds[k], more = x.total - x.rows.length;
      d.appendChild(el("div", "kind", k + ": " + x.total + (x.total === 1 ? " row" : " rows")));
      d.appendChild(el("pre", "diff", x.rows.join("\n") + (more > 0 ? "\n… " + more + " more" : "")));
    });
    return d;
  }

  // ------------------------------------------------------------------ frames of an episode
  function frames(ep) {
    var out = [], before = [], after = [];
    (ep.extra_shots || []).forEach(function (x) {
      (/^step-0+\.png$/.test(x.name) ? before : after).push({ kind: "shot", label: x.name === "step-000.png" ? "after setup" : x.name, shot: x.shot });
    });
    before.forEach(function (f) { out.push(f); });
    ep.steps.forEach(function (s) { out.push({ kind: "step", label: s.step === 0 ? "step 0, after setup" : "step " + s.step, s: s, shot: s.shot }); });
    after.forEach(function (f) { out.push(f); });
    return out;
  }

  // ------------------------------------------------------------------ one episode panel
  function Panel(root) {
    this.root = root;
    this.ep = null;
    this.frames = [];
    this.i = 0;
    var self = this;
    this.head = el("div", "head");
    this.meta = el("div", "kv");
    this.timeline = el("div", "timeline");
    var nav = el("div", "nav");
    this.prev = el("button", "step-prev", "◀ step");
    this.prev.type = "button";
    this.counter = el("span", "step-counter");
    this.next = el("button", "step-next", "step ▶");
    this.next.type = "button";
    nav.appendChild(this.prev); nav.appendChild(this.counter); nav.appendChild(this.next);
    this.prev.addEventListener("click", function () { self.go(self.i - 1); });
    this.next.addEventListener("click", function () { self.go(self.i + 1); });
    var body = el("div", "body");
    this.shotbox = el("div", "shotbox");
    this.detail = el("div", "detail");
    body.appendChild(this.shotbox); body.appendChild(this.detail);
    [this.head, this.meta, this.timeline, nav, body].forEach(function (x) { root.appendChild(x); });
    this.empty("no episode selected");
  }
  Panel.prototype.empty = function (msg) {
    this.ep = null; this.frames = [];
    clear(this.head); this.head.textContent = msg;
    clear(this.meta); clear(this.timeline); clear(this.shotbox); clear(this.detail);
    this.counter.textContent = "";
  };
  // `step`: a step number to open at, once the episode's page is loaded (else frame i)
  Panel.prototype.show = function (ep, i, step) {
    if (!ep) { this.empty("no episode"); return; }
    var self = this;
    this.wanted = ep;
    if (!ep.steps && !ep.missing) {
      this.empty("loading " + ep.page + " …");
      load(ep, function () { if (self.wanted === ep) self.show(ep, i, step); });
      return;
    }
    this.ep = ep;
    this.frames = ep.steps ? frames(ep) : [];
    clear(this.head);
    this.head.appendChild(el("span", null, ep.build + " · " + ep.instance + " · repeat " + ep.repeat + " "));
    this.head.appendChild(pill(ep.outcome));
    if (ep.label !== ep.outcome) this.head.appendChild(el("span", "muted", " counted as " + ep.label));
    clear(this.meta);
    var kv = [["id", ep.id], ["steps", ep.n_steps + "/" + ep.max_steps], ["wall", fmt(ep.wall_s, 1) + " s"],
      ["tokens", ep.usage.prompt_tokens + " in / " + ep.usage.completion_tokens + " out"],
      ["seed", ep.seed], ["phone", ep.phone], ["attempt", ep.attempt],
      ["goal", (ep.goal_initial ? "true at start; " : "") + "first " + (ep.goal_first_step === null ? "never" : "step " + ep.goal_first_step) +
        (ep.goal_lost_step !== null ? ", lost at step " + ep.goal_lost_step : "") + ", final " + ep.goal_final]];
    if (ep.complete_step !== null) kv.push(["task_complete", "step " + ep.complete_step]);
    if (ep.infeasible_step !== null) kv.push(["task_infeasible", "step " + ep.infeasible_step]);
    if (ep.reason) kv.push(["reason", ep.reason]);
    if (ep.error) kv.push(["error", ep.error]);
    var meta = this.meta;
    if (ep.missing) kv.push(["steps not found", ep.page + " (keep the trajectories folder beside report.html)"]);
    kv.forEach(function (p) { meta.appendChild(field(p[0], p[1])); });
    if (ep.start_state) meta.appendChild(startState(ep.start_state));
    this.drawTimeline();
    if (step !== undefined) {
      var f = this.frames.findIndex(function (x) { return x.kind === "step" && x.s.step === step; });
      if (f >= 0) i = f;
    }
    this.go(i || 0);
  };
  Panel.prototype.drawTimeline = function () {
    var self = this, ep = this.ep;
    clear(this.timeline);
    this.cells = this.frames.map(function (f, j) {
      var b = el("button", null, f.kind === "step" ? String(f.s.step) : "·");
      b.type = "button";
      var t = f.label;
      if (f.kind === "step") {
        if (f.s.goal) b.classList.add("goal");
        else if (f.s.asked && f.s.clean === false) { b.classList.add("stray"); t += " · asked-for change there, more changed"; }
        if (ep.goal_first_step === f.s.step) { b.classList.add("first"); t += " · goal first reached"; }
        if (ep.goal_lost_step === f.s.step) { b.classList.add("lost"); t += " · goal lost"; }
        if (ep.complete_step === f.s.step) { b.textContent = "✓"; t += " · task_complete"; }
        t += " · goal " + f.s.goal;
      }
      b.title = t;
      b.addEventListener("click", function () { self.go(j); });
      self.timeline.appendChild(b);
      return b;
    });
  };
  Panel.prototype.go = function (i) {
    if (!this.ep) return;
    var n = this.frames.length;
    if (n === 0) { this.counter.textContent = "no steps recorded"; clear(this.shotbox); clear(this.detail); return; }
    this.i = Math.max(0, Math.min(n - 1, i));
    var f = this.frames[this.i];
    this.counter.textContent = (this.i + 1) + " / " + n + " (" + f.label + ")";
    this.prev.disabled = this.i === 0;
    this.next.disabled = this.i === n - 1;
    var cur = this.i;
    (this.cells || []).forEach(function (c, j) { c.classList.toggle("cur", j === cur); });
    this.drawShot(f);
    this.drawDetail(f);
  };
  Panel.prototype.drawShot = function (f) {
    clear(this.shotbox);
    if (!f.shot) { this.shotbox.appendChild(el("div", "muted", "no screenshot")); return; }
    var img = el("img");
    img.alt = f.label;
    img.src = this.ep.shots[f.shot.i];
    var phone = el("div", "frame");   // an overlay covers its own image only
    phone.appendChild(img);
    this.shotbox.appendChild(phone);
    var a = f.kind === "step" ? f.s.action : null;
    var sent = f.kind === "step" && f.s.sent && f.s.sent.shot ? f.s.sent.shot : null;
    if (sent) {   // a vision build: the image the model was sent (marks and all), the point on it too
      this.shotbox.appendChild(el("div", "muted", "sent to the model (" + sent.w + "x" + sent.h + ")"));
      var box = el("div", "frame");
      var si = el("img");
      si.alt = "the image sent to the model";
      si.src = this.ep.shots[sent.i];
      box.appendChild(si);
      if (a && a.point) box.appendChild(this.mark(a, sent.w, sent.h, sent.w / f.shot.w, sent.h / f.shot.h));
      this.shotbox.appendChild(box);
    }
    if (!a || !a.point) return;
    phone.appendChild(this.mark(a, f.shot.w, f.shot.h, 1, 1));
  };
  // where an action landed, over an image w x h that is (sx, sy) times the phone's pixels:
  // a cross for a point the model named (tap_xy, ...), a ring for an element's center, an arrow for a swipe
  Panel.prototype.mark = function (a, w, h, sx, sy) {
    var r = Math.max(w, h) * 0.025;
    var o = svg("svg", { viewBox: "0 0 " + w + " " + h, preserveAspectRatio: "none" });
    var x = a.point[0] * sx, y = a.point[1] * sy;
    var colour = a.error ? "#ff1744" : "#ff3d00";
    if (a.to) {
      var x2 = a.to[0] * sx, y2 = a.to[1] * sy;
      o.appendChild(svg("line", { x1: x, y1: y, x2: x2, y2: y2, stroke: colour, "stroke-width": r * 0.45, "stroke-linecap": "round" }));
      var ang = Math.atan2(y2 - y, x2 - x), L = r * 2.2;
      var p1 = [x2 - L * Math.cos(ang - 0.45), y2 - L * Math.sin(ang - 0.45)];
      var p2 = [x2 - L * Math.cos(ang + 0.45), y2 - L * Math.sin(ang + 0.45)];
      o.appendChild(svg("polygon", { points: x2 + "," + y2 + " " + p1.join(",") + " " + p2.join(","), fill: colour }));
      o.appendChild(svg("circle", { cx: x, cy: y, r: r * 0.6, fill: colour, "fill-opacity": 0.6 }));
    } else if (/_xy$/.test(a.name)) {
      o.appendChild(svg("line", { x1: x - r, y1: y - r, x2: x + r, y2: y + r, stroke: colour, "stroke-width": r * 0.3 }));
      o.appendChild(svg("line", { x1: x - r, y1: y + r, x2: x + r, y2: y - r, stroke: colour, "stroke-width": r * 0.3 }));
    } else {
      o.appendChild(svg("circle", { cx: x, cy: y, r: r, fill: "none", stroke: colour, "stroke-width": r * 0.35 }));
      o.appendChild(svg("circle", { cx: x, cy: y, r: r * 0.2, fill: colour }));
    }
    o.setAttribute("class", "overlay");
    return o;
  };
  Panel.prototype.drawDetail = function (f) {
    var d = this.detail;
    clear(d);
    if (f.kind !== "step") { d.appendChild(el("div", "muted", f.label)); return; }
    var s = f.s;
    var a = s.action;
    d.appendChild(el("h4", null, "Action"));
    d.appendChild(el("pre", "action", a ? a.name + " " + JSON.stringify(a.args) +
      (a.point ? "  at (" + a.point.join(", ") + ")" : "") + (a.to ? " → (" + a.to.join(", ") + ")" : "") +
      (a.error ? "\nerror: " + a.error : "") : (s.step === 0 ? "after setup: no action yet" : "no valid tool call (wasted step)")));
    if (s.retry_error) d.appendChild(el("pre", "retry", "fed back to the model: " + s.retry_error));
    if (s.replay && s.replay.length) {      // agent-host replay: other builds asked this exact request
      d.appendChild(el("h4", null, "Replayed on other builds"));
      s.replay.forEach(function (x) {
        d.appendChild(el("pre", "replay " + (x.match === "same_action" ? "good" : "bad"), x.build + " · " + x.match +
          (x.attempt ? " · retry" : "") + " · " + x.role + (x.gap !== null && x.gap !== undefined ? " · log-prob gap " + fmt(x.gap, 3) : "") +
          "\n" + x.reply));
      });
    }
    var g = el("div", "kv");
    g.appendChild(el("span", s.goal ? "good" : "bad", "goal after this step: " + s.goal));
    if (this.ep.goal_first_step === s.step) g.appendChild(el("span", "good", "goal first reached here"));
    if (this.ep.goal_lost_step === s.step) g.appendChild(el("span", "bad", "goal lost here"));
    halves(s).forEach(function (x) { g.appendChild(x); });
    d.appendChild(g);
    if (s.state && s.state.length) {
      d.appendChild(el("h4", null, "Scope changed since setup"));
      d.appendChild(stateDiff(s.state));
    }
    var t = s.times, u = s.usage;
    d.appendChild(el("div", "kv", "times (s): observe " + fmt(t.observe, 2) + " · model " + fmt(t.model, 2) + " · act " +
      fmt(t.act, 2) + " · settle " + fmt(t.settle, 2) + " · judge " + fmt(t.judge, 2)));
    d.appendChild(el("div", "kv", "tokens: prompt " + u.prompt_tokens + " · completion " + u.completion_tokens +
      (u.cached_tokens !== null && u.cached_tokens !== undefined ? " · cached " + u.cached_tokens : "") +
      (s.package ? " · package " + s.package : "")));
    if (s.check) d.appendChild(el("pre", "check", "check: " + JSON.stringify(s.check, null, 1)));
    d.appendChild(el("h4", null, "Raw model output"));
    d.appendChild(el("pre", "raw", s.raw || "(empty)"));
    d.appendChild(el("h4", null, "Observation"));
    d.appendChild(el("pre", "observation", s.observation));
  };

  // ------------------------------------------------------------------ episode browser
  window.agentHostIndex = function (rows) { EPS = rows; start(); };
  function start() {
  var main = new Panel(document.getElementById("main-panel"));
  var fBuild = document.getElementById("f-build"), fOutcome = document.getElementById("f-outcome"),
      fTask = document.getElementById("f-task"), fKind = document.getElementById("f-kind"),
      fApp = document.getElementById("f-app"), list = document.getElementById("ep-list"),
      epCounter = document.getElementById("ep-counter");
  var instances = [];
  EPS.forEach(function (e) { if (instances.indexOf(e.instance) < 0) instances.push(e.instance); });
  option(fBuild, "", "all builds"); DATA.builds.forEach(function (b) { option(fBuild, b, b); });
  option(fOutcome, "", "all outcomes");
  Object.keys(DATA.colours).forEach(function (o) { option(fOutcome, o, o); });
  option(fTask, "", "all tasks"); instances.forEach(function (i) { option(fTask, i, i); });
  // task kinds and apps (from the run manifest; runs that predate them have none)
  var kinds = [], apps = [];
  EPS.forEach(function (e) {
    (e.kinds || []).forEach(function (k) { if (kinds.indexOf(k) < 0) kinds.push(k); });
    if (e.app && apps.indexOf(e.app) < 0) apps.push(e.app);
  });
  apps.sort();
  option(fKind, "", "all kinds"); kinds.forEach(function (k) { option(fKind, k, k); });
  option(fApp, "", "all apps"); apps.forEach(function (a) { option(fApp, a, a); });
  fKind.hidden = !kinds.length; fApp.hidden = !apps.length;
  var shown = [], cur = -1, buttons = [];
  function filter() {
    shown = EPS.filter(function (e) {
      return (!fBuild.value || e.build === fBuild.value) && (!fOutcome.value || e.outcome === fOutcome.value) &&
        (!fTask.value || e.instance === fTask.value) && (!fKind.value || (e.kinds || []).indexOf(fKind.value) >= 0) &&
        (!fApp.value || e.app === fApp.value);
    });
    clear(list);
    buttons = shown.map(function (e, j) {
      var b = el("button");
      b.type = "button";
      b.appendChild(pill(e.outcome));
      b.appendChild(document.createTextNode(" " + e.instance + " · " + e.build + " · r" + e.repeat));
      b.addEventListener("click", function () { select(j); });
      list.appendChild(b);
      return b;
    });
    select(shown.length ? 0 : -1);
  }
  function select(j, step) {
    if (j < 0 || j >= shown.length) {
      cur = -1; main.empty("no episode matches"); epCounter.textContent = "0 / 0"; return;
    }
    cur = j;
    buttons.forEach(function (b, k) { b.classList.toggle("sel", k === j); });
    var b = buttons[j];   // scroll the list only, never the page
    if (b.offsetTop < list.scrollTop) list.scrollTop = b.offsetTop;
    else if (b.offsetTop + b.offsetHeight > list.scrollTop + list.clientHeight) list.scrollTop = b.offsetTop + b.offsetHeight - list.clientHeight;
    epCounter.textContent = (j + 1) + " / " + shown.length;
    main.show(shown[j], 0, step);
  }
  [fBuild, fOutcome, fTask, fKind, fApp].forEach(function (s) { s.addEventListener("change", filter); });
  document.getElementById("ep-prev").addEventListener("click", function () { select(Math.max(0, cur - 1)); });
  document.getElementById("ep-next").addEventListener("click", function () { select(Math.min(shown.length - 1, cur + 1)); });
  filter();
  // a link that sets the filters it names (data-kind, data-app, ...) and clears the others
  var FILTERS = { build: fBuild, outcome: fOutcome, task: fTask, kind: fKind, app: fApp };
  Array.prototype.forEach.call(document.querySelectorAll("a.viewer-filter"), function (a) {
    a.addEventListener("click", function () {
      Object.keys(FILTERS).forEach(function (k) { FILTERS[k].value = a.getAttribute("data-" + k) || ""; });
      filter();
    });
  });

  // a link to one replayed step (the replay section's largest gaps): its episode, at that step
  Array.prototype.forEach.call(document.querySelectorAll("a.replay-link"), function (a) {
    a.addEventListener("click", function () {
      Object.keys(FILTERS).forEach(function (k) { FILTERS[k].value = ""; });
      filter();
      var j = shown.findIndex(function (e) { return e.id === a.getAttribute("data-episode"); });
      if (j >= 0) select(j, Number(a.getAttribute("data-step")));
    });
  });

  // ------------------------------------------------------------------ side by side
  var left = new Panel(document.getElementById("cmp-left")), right = new Panel(document.getElementById("cmp-right"));
  var cA = document.getElementById("cmp-a"), cB = document.getElementById("cmp-b"),
      cDis = document.getElementById("cmp-disagree"), cRep = document.getElementById("cmp-repeat"),
      cTasks = document.getElementById("cmp-tasks");
  DATA.builds.forEach(function (b) { option(cA, b, b); option(cB, b, b); });
  cA.value = DATA.baseline;
  var other = DATA.builds.filter(function (b) { return b !== DATA.baseline; });
  cB.value = other.length ? other[0] : DATA.baseline;
  var cmpInstance = null;
  var BY_KEY = {};      // build, instance, repeat -> episode: a scan per lookup was quadratic
  EPS.forEach(function (e) { var k = e.build + "\u0000" + e.instance + "\u0000" + e.repeat; if (!(k in BY_KEY)) BY_KEY[k] = e; });
  function find(build, inst, repeat) { return BY_KEY[build + "\u0000" + inst + "\u0000" + repeat] || null; }
  function disagree(inst) {
    var reps = {};
    EPS.forEach(function (e) { if (e.instance === inst) reps[e.repeat] = true; });
    return Object.keys(reps).some(function (r) {
      var a = find(cA.value, inst, +r), b = find(cB.value, inst, +r);
      return a && b && a.outcome !== "error" && b.outcome !== "error" && a.success !== b.success;
    });
  }
  function drawTasks() {
    clear(cTasks);
    var shown = instances.filter(function (inst) { return !cDis.checked || disagree(inst); });
    if (!shown.length) { cTasks.appendChild(el("span", "muted", "no task where the two builds disagree")); left.empty("–"); right.empty("–"); return; }
    if (shown.indexOf(cmpInstance) < 0) cmpInstance = shown[0];
    shown.forEach(function (inst) {
      var b = el("button", inst === cmpInstance ? "sel" : null, inst);
      b.type = "button";
      b.addEventListener("click", function () { cmpInstance = inst; drawTasks(); });
      cTasks.appendChild(b);
    });
    var reps = [];
    EPS.forEach(function (e) { if (e.instance === cmpInstance && reps.indexOf(e.repeat) < 0) reps.push(e.repeat); });
    reps.sort(function (a, b) { return a - b; });
    var keep = +cRep.value;
    clear(cRep);
    reps.forEach(function (r) { option(cRep, String(r), "r" + r); });
    var pick = reps.indexOf(keep) >= 0 ? keep : reps[0];
    if (cDis.checked && !(reps.indexOf(keep) >= 0)) {
      for (var i = 0; i < reps.length; i++) {
        var a = find(cA.value, cmpInstance, reps[i]), b = find(cB.value, cmpInstance, reps[i]);
        if (a && b && a.success !== b.success) { pick = reps[i]; break; }
      }
    }
    cRep.value = String(pick);
    left.show(find(cA.value, cmpInstance, pick), 0);
    right.show(find(cB.value, cmpInstance, pick), 0);
  }
  [cA, cB, cDis].forEach(function (s) { s.addEventListener("change", drawTasks); });
  cRep.addEventListener("change", drawTasks);
  drawTasks();

  // ------------------------------------------------------------------ keyboard
  document.addEventListener("keydown", function (ev) {
    var t = ev.target && ev.target.tagName;
    if (t === "SELECT" || t === "INPUT" || t === "TEXTAREA" || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    if (ev.key === "ArrowRight") { main.go(main.i + 1); ev.preventDefault(); }
    else if (ev.key === "ArrowLeft") { main.go(main.i - 1); ev.preventDefault(); }
    else if (ev.key === "ArrowDown" || ev.key === "j") { select(Math.min(shown.length - 1, cur + 1)); ev.preventDefault(); }
    else if (ev.key === "ArrowUp" || ev.key === "k") { select(Math.max(0, cur - 1)); ev.preventDefault(); }
  });
  }
  var idx = document.createElement("script");
  idx.nonce = NONCE;
  idx.src = DATA.index;
  idx.addEventListener("error", function () {
    document.getElementById("main-panel").textContent = DATA.index + " not found (keep the trajectories folder beside report.html)";
  });
  document.body.appendChild(idx);
})();
