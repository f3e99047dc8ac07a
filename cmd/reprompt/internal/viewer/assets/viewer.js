// The step viewer: reads the run embedded in #run-data and renders the
// token chart, the timeline of steps and the selected step. No framework,
// no build step. Everything the page shows comes from the embedded JSON.
// The data is in two elements, each JSON or, when large, JSON gzipped in
// base64 (data-encoding="gzip-base64") that the browser inflates itself:
// #run-data, before this script, with what the chart and the timeline
// show, drawn at once; #run-detail, after it, with the steps in full and
// their messages, read once the document is parsed.
// A page served by "reprompt view --serve" has data-follow on its body: the
// URL it reads every second for the steps saved since (see viewer.Update),
// which it adds without a reload. A page written to a file reads nothing.
(function () {
  "use strict";
  var t0 = performance.now();
  function decode(id) {
    var node = document.getElementById(id);
    if (node.getAttribute("data-encoding") !== "gzip-base64") {
      return Promise.resolve(JSON.parse(node.textContent));
    }
    var bin = atob(node.textContent.trim()), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text().then(JSON.parse);
  }
  function fail(err) {
    document.getElementById("detail").textContent = "cannot read the page's data: " + err;
  }
  decode("run-data").then(function (run) {
    var view = show(run, t0);
    var rest = function () { decode("run-detail").then(view.detail).catch(fail); };
    if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", rest); } else { rest(); }
  }).catch(fail);
})();

function show(run, t0) {
  "use strict";
  var tParsed = performance.now();
  var steps = run.steps || [];
  var pool = null; // the messages, once read
  var selected = -1;

  function esc(s) {
    return String(s == null ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function el(id) { return document.getElementById(id); }

  // Header.
  function turnCount() {
    var n = 0;
    steps.forEach(function (s, i) { if (s.turn_start || i === 0) { n++; } });
    return n;
  }
  function drawHeader() {
    el("title").textContent = run.title;
    el("meta").textContent = run.source + " · " + (run.turns ? turnCount() + " turns · " : "") + steps.length + " steps" + (run.done ? " · done" : " · not finished");
    el("run-error").textContent = run.error ? "error: " + run.error : "";
    var notes = "";
    (run.notes || []).forEach(function (n) { notes += "<li>" + esc(n) + "</li>"; });
    el("notes").innerHTML = notes;
  }
  drawHeader();

  // steps are the summaries (chart, timeline); detail the steps in full,
  // once read.
  var detail = null;
  function isCompaction(s) { return !!s.compaction; }
  function isCommit(s) { return !!s.commit; }

  // split returns a step's input as [total, read from the cache, written
  // to it, the rest]: the provider's, when it reported its cache
  // (s.cache), else the runtime's count, its shared prefix as the read.
  function split(s) {
    if (s.cache) {
      var t = s.cache[0] || 0, r = Math.min(s.cache[1] || 0, t), wr = Math.min(s.cache[2] || 0, t - r);
      return [t, r, wr, t - r - wr];
    }
    var input = s.input || 0, prefix = Math.min(s.prefix || 0, input);
    return [input, prefix, 0, input - prefix];
  }

  // Chart: input tokens per step, the cache's reads (or the cached prefix),
  // its writes and the new tokens stacked (one path each, so that a long
  // run costs three elements, not three a step), commits and compactions
  // marked above the bars.
  function drawChart() {
    var svg = el("chart");
    var w = Math.max(document.documentElement.clientWidth - 32, 200), h = 130, top = 14, bottom = 4;
    var max = 1;
    steps.forEach(function (s) { var t = split(s)[0]; if (t > max) { max = t; } });
    var n = Math.max(steps.length, 1), bw = w / n, gap = bw > 4 ? 1 : 0;
    var scale = (h - top - bottom) / max, wd = Math.max(bw - gap, 0.5).toFixed(2);
    var pre = [], written = [], fresh = [], commits = [], parts = [];
    steps.forEach(function (s, i) {
      var x = (i * bw).toFixed(2), sp = split(s);
      var hp = sp[1] * scale, hw = sp[2] * scale, hn = sp[3] * scale;
      if (hp > 0) { pre.push("M" + x + " " + (h - bottom - hp).toFixed(2) + "h" + wd + "v" + hp.toFixed(2) + "h-" + wd + "z"); }
      if (hw > 0) { written.push("M" + x + " " + (h - bottom - hp - hw).toFixed(2) + "h" + wd + "v" + hw.toFixed(2) + "h-" + wd + "z"); }
      if (hn > 0) { fresh.push("M" + x + " " + (h - bottom - hp - hw - hn).toFixed(2) + "h" + wd + "v" + hn.toFixed(2) + "h-" + wd + "z"); }
      var cx = (i * bw + bw / 2).toFixed(2);
      if (isCompaction(s)) {
        parts.push('<line class="marker compaction" data-n="' + i + '" x1="' + cx + '" x2="' + cx + '" y1="0" y2="' + h + '"><title>step ' + s.n + ": compaction</title></line>");
      } else if (isCommit(s)) {
        commits.push("M" + cx + " 0v" + (top - 2));
      }
    });
    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    svg.innerHTML = '<path class="prefix" d="' + pre.join("") + '"></path><path class="write" d="' + written.join("") + '"></path>' +
      '<path class="new" d="' + fresh.join("") + '"></path>' +
      '<path class="marker commit" d="' + commits.join("") + '"></path>' + parts.join("") +
      '<rect class="cursor" id="cursor" x="-10" y="0" width="' + Math.max(bw, 2).toFixed(2) + '" height="' + h + '" pointer-events="none"></rect>';
    svg.setAttribute("data-bar", bw);
    // No step has token figures (a golden file, a recording without
    // usage): no chart, rather than an empty one.
    el("chart-wrap").hidden = !steps.some(function (s) { return s.input > 0; });
  }

  // Timeline: one entry a step; in a conversation, each turn's steps
  // under its user message.
  function drawTimeline() {
    var parts = [];
    steps.forEach(function (s, i) {
      if (run.turns && (s.turn_start || i === 0)) {
        parts.push('<li class="turn" data-n="' + i + '" data-turn="' + (s.turn || 0) + '"><span class="num">turn ' + (s.turn || 0) +
          '</span> <span class="user">' + esc(s.user || "") + "</span></li>");
      }
      var tags = "";
      if (isCompaction(s)) { tags += '<span class="tag compaction">compaction</span>'; }
      else if (isCommit(s)) { tags += '<span class="tag commit">commit</span>'; }
      if (s.resumed) { tags += '<span class="tag resumed" title="a crash interrupted the step after the model\'s reply; a resume completed it">crashed, resumed</span>'; }
      if (s.stopped === "interrupted") { tags += '<span class="tag interrupted" title="the run stopped here (a crash, or a stop) before the step\'s tool calls completed">interrupted</span>'; }
      if (s.stopped === "paused") { tags += '<span class="tag paused" title="the run waits here for a person\'s decision or answer">paused</span>'; }
      if (s.damage) { tags += '<span class="tag damage">!</span>'; }
      if (s.miss) { tags += '<span class="tag miss" title="' + esc("cache miss: " + s.miss) + '">cache miss</span>'; }
      if (s.sent) { tags += '<span class="tag sent" title="messages sent while the run went on">+' + s.sent + " sent</span>"; }
      if (s.asks) { tags += '<span class="tag ask">asked</span>'; }
      var what = s.what || "";
      parts.push('<li class="step" data-n="' + i + '"><span class="num">' + s.n + "</span>" + tags +
        ' <span class="calls">' + esc(what) + "</span></li>");
    });
    el("timeline").innerHTML = parts.join("");
  }

  function message(i, cls) {
    var m = pool[i] || {};
    var head = m.role + (m.call_id ? " " + m.call_id : "") + (m.name ? " " + m.name : "") + (m.is_error ? " (error)" : "");
    var meta = m.meta ? " " + Object.keys(m.meta).sort().map(function (k) {
      var v = String(m.meta[k]);
      return k + "=" + (v.length > 60 ? v.slice(0, 60) + "…" : v);
    }).join(" ") : "";
    var body = "";
    if (m.reasoning) { body += '<pre class="muted">' + esc(m.reasoning) + "</pre>"; }
    if (m.content) { body += "<pre>" + esc(m.content) + "</pre>"; }
    (m.calls || []).forEach(function (c) { body += "<pre>call " + esc(c.id + " " + c.name + " " + c.args) + "</pre>"; });
    return '<div class="msg ' + (cls || "") + '"><div class="role">' + esc(head) + '<span class="muted">' + esc(meta) + "</span></div>" + body + "</div>";
  }

  function pills(list, cls) {
    return (list || []).map(function (x) { return '<span class="pill ' + (cls || "") + '">' + esc(x) + "</span>"; }).join("");
  }

  // turnHTML renders the turn of top-level step i: the user's message,
  // the messages sent while the run went on that joined at the step.
  function turnHTML(i) {
    var s = detail[i], first = i;
    while (first > 0 && !detail[first].turn_start) { first--; }
    var msg = (detail[first].sent || [])[0], h = '<div class="conversation">';
    h += '<p class="turn-info">turn ' + (s.turn || 0) + (first === i ? "" : " · from step " + detail[first].n) + "</p>";
    h += '<div class="msg user-turn"><div class="role">user</div><pre>' + (msg == null ? '<span class="muted">not recorded</span>' : esc(msg)) + "</pre></div>";
    var sent = (s.sent || []).slice(s.turn_start ? 1 : 0);
    if (sent.length) {
      h += '<h3>Sent while the run went on</h3>';
      sent.forEach(function (m) { h += '<div class="msg sent"><div class="role">user</div><pre>' + esc(m) + "</pre></div>"; });
    }
    return h + "</div>";
  }

  function asksHTML(asks) {
    var h = '<h3>Questions and approvals</h3><table class="asks"><colgroup><col class="c-call"><col class="c-question"><col class="c-answer"></colgroup><tr><th>call</th><th>question</th><th>answer</th></tr>';
    asks.forEach(function (a) {
      var ans = a.decision === "answered" ? "<pre>" + esc(a.answer) + "</pre>" : esc(a.decision) + (a.reason ? ": " + esc(a.reason) : "");
      h += '<tr class="ask ' + esc(a.decision) + '"><td>' + esc(a.call_id) + "<br><b>" + esc(a.tool) + "</b></td><td>" +
        (a.question ? esc(a.question) : '<span class="muted">approval</span>') + "</td><td>" + ans + "</td></tr>";
    });
    return h + "</table>";
  }

  // stepHTML renders one step; sub-agents are <details> rendered when opened.
  function stepHTML(s, path) {
    var h = "";
    if (s.damage) { h += '<p class="damage">' + esc(s.damage) + "</p>"; }
    var tok = "";
    if (s.input) {
      tok = s.input + " input tokens: " + s.prefix + " cached prefix, " + (s.input - s.prefix) + " new" + (s.estimated ? " (provider's count)" : "");
    }
    if (s.output) { tok += (tok ? " · " : "") + s.output + " output"; }
    if (s.ms) { tok += (tok ? " · " : "") + s.ms.toFixed(1) + " ms"; }
    // s.record: the step's record (internal/steprec) as the source holds
    // it, but for what the fields of s show in their own form. A field
    // added to the record is read here.
    var rec = s.record || {};
    var u = rec.usage || {};
    if (u.cached || u.cache_write) {
      var read = u.cached || 0, wr = u.cache_write || 0, inp = u.input || 0;
      tok += (tok ? " · " : "") + "provider: " + inp + " input tokens: " + read + " cache read, " + wr + " cache write" +
        (u.cache_write_1h ? " (" + u.cache_write_1h + " for 1 h)" : "") + ", " + Math.max(inp - read - wr, 0) + " uncached";
    }
    if (rec.billed_input) { tok += (tok ? " · " : "") + "billed as " + rec.billed_input.toFixed(0) + " full-price input tokens"; }
    if (tok) { h += '<p class="tokens">' + esc(tok) + "</p>"; }
    if (s.cache_miss) { h += '<p class="miss">cache miss: ' + esc(s.cache_miss) + "</p>"; }

    h += '<h3>Effects</h3>';
    if ((s.effects || []).length) {
      h += '<table class="effects"><tr><th>effect</th><th>phase</th><th>site</th><th>why</th></tr>';
      s.effects.forEach(function (e) {
        h += '<tr class="effect"><td>' + esc(e.id) + "</td><td>" + esc(e.phase) + "</td><td>" + esc(e.site) + '</td><td class="reason">' + esc(e.reason) + "</td></tr>";
      });
      h += "</table>";
    } else { h += '<p class="muted">none ran' + (s.estimated && !s.effects ? " (or not recorded)" : "") + "</p>"; }

    h += '<h3>Request</h3><div class="request">';
    // request_n: how many messages the request has (a step of the page's
    // data); request: the indices themselves (a sub-agent's step).
    var nreq = s.request_n != null ? s.request_n : (s.request ? s.request.length : null);
    if (nreq != null) {
      var d = s.diff || {};
      h += "<p>" + nreq + " messages: " + (d.shared || 0) + " as in the previous step, " +
        (d.added || []).length + " added, " + (d.removed || []).length + " removed, " + (d.rewritten || []).length + " rewritten</p>";
      (d.added || []).forEach(function (i) { h += message(i, "added"); });
      (d.removed || []).forEach(function (i) { h += message(i, "removed"); });
      (d.rewritten || []).forEach(function (p) { h += message(p[0], "removed") + message(p[1], "rewritten"); });
    } else { h += '<p class="muted">not in the source</p>'; }
    if (s.system_changed) { h += "<p>system prompt changed</p>"; }
    if (s.system && path === "") { h += '<details><summary>system prompt</summary><pre>' + esc(s.system) + "</pre></details>"; }
    if ((s.tools_on || []).length || (s.tools_off || []).length) {
      h += "<p>tools " + pills(s.tools_on, "on") + pills(s.tools_off, "off") + "</p>";
    }
    if ((s.disabled || []).length) { h += '<p class="disabled">disabled ' + pills(s.disabled, "off") + "</p>"; }
    if ((s.reminded || []).length) { h += '<p class="reminded">reminded ' + pills(s.reminded) + "</p>"; }
    (s.commits || []).forEach(function (c) {
      var comp = c.after < c.before;
      h += '<p class="' + (comp ? "compaction" : "commit") + '">' + (comp ? "compaction" : "commit") + ": the transcript was rewritten, " + c.before + " → " + c.after + " messages</p>";
    });
    if (s.resumed) {
      h += '<p class="resumed">resumed: the run stopped after the model\'s reply and a resume completed the step; interrupted calls: ' +
        esc((s.interrupted || []).join(", ") || "none") + "</p>";
    }
    if (s.recovered) { h += "<p>recovered: the provider found the request too long; it was sent again after compaction</p>"; }
    if (s.summaries) { h += "<p>" + s.summaries + " summary request(s)</p>"; }
    (s.notes || []).forEach(function (n) { h += '<p class="note">' + esc(n) + "</p>"; });
    h += "</div>";

    if ((s.asks || []).length) { h += asksHTML(s.asks); }

    h += "<h3>Reply" + (s.finish ? ' <span class="muted">(' + esc(s.finish) + ")</span>" : "") + "</h3>";
    h += s.reply >= 0 ? message(s.reply, "reply") : '<p class="muted">none</p>';

    if ((s.calls || []).length) {
      h += '<h3>Tool calls</h3><table class="calls"><colgroup><col class="c-call"><col class="c-args"><col class="c-result"><col class="c-time"></colgroup><tr><th>call</th><th>arguments</th><th>result</th><th>time</th></tr>';
      s.calls.forEach(function (c) {
        if (c.res != null) { c.result = (pool[c.res] || {}).content; }
        h += '<tr class="call"><td>' + esc(c.id) + "<br><b>" + esc(c.name) + "</b></td><td><pre>" + esc(c.args) + "</pre></td><td>" +
          (c.is_error ? '<b class="damage">error</b>' : "") + "<pre>" + esc(c.result) + "</pre>" +
          (c.error ? '<div class="damage">Go error: ' + esc(c.error) + "</div>" : "") + "</td><td>" + (c.ms ? c.ms.toFixed(1) + " ms" : "") + "</td></tr>";
      });
      h += "</table>";
    }
    (s.agents || []).forEach(function (a, k) {
      h += '<details class="agent" data-path="' + esc(path + "a" + k) + '"><summary>sub-agent ' + esc(a.name) + " (call " + esc(a.call_id) + "): " +
        (a.steps || []).length + " steps" + (a.error ? " · failed: " + esc(a.error) : "") + '</summary><div class="agent-body"></div></details>';
    });

    if (s.state) {
      h += '<h3>State</h3><table class="state"><colgroup><col class="c-key"><col class="c-value"></colgroup><tr><th>key</th><th>value</th></tr>';
      var changed = {};
      (s.changes || []).forEach(function (c) { changed[c.key] = c; });
      Object.keys(s.state).sort().forEach(function (k) {
        var c = changed[k];
        h += '<tr class="' + (c ? "change" : "") + '"><td>' + esc(k) + "</td><td>" +
          (c ? (c.before ? '<span class="before">' + esc(c.before) + "</span> → " : '<span class="muted">new</span> ') + '<span class="after">' + esc(c.after) + "</span>" : "<pre>" + esc(s.state[k]) + "</pre>") + "</td></tr>";
      });
      (s.changes || []).forEach(function (c) {
        if (!c.after) { h += '<tr class="change"><td>' + esc(c.key) + '</td><td><span class="before">' + esc(c.before) + "</span> removed</td></tr>"; }
      });
      h += "</table>";
    }
    return h;
  }

  // stateAt rebuilds the state after top-level step i from the keys each
  // step set and removed; before is the state after the step before (null
  // when unknown).
  function stateAt(i) {
    var st = null, prev = null;
    for (var j = 0; j <= i; j++) {
      var s = detail[j];
      if (!s.has_state) { st = null; continue; }
      prev = st;
      var del = s.del || [];
      st = Object.assign({}, del[0] === "*" ? {} : st || {});
      del.forEach(function (k) { delete st[k]; });
      Object.keys(s.set || {}).forEach(function (k) { st[k] = s.set[k]; });
    }
    return { state: st, before: prev };
  }

  function changes(before, after) {
    var out = [];
    Object.keys(after).sort().forEach(function (k) {
      if (!before || before[k] !== after[k]) { out.push({ key: k, before: before ? before[k] : undefined, after: after[k] }); }
    });
    Object.keys(before || {}).sort().forEach(function (k) {
      if (!(k in after)) { out.push({ key: k, before: before[k] }); }
    });
    return out;
  }

  function agentAt(path) {
    // path: "a0" / "a0s1a2": agent k of the selected step, its step j, …
    var s = detail[selected], a = null, re = /([as])(\d+)/g, m;
    while ((m = re.exec(path))) {
      if (m[1] === "a") { a = s.agents[+m[2]]; } else { s = a.steps[+m[2]]; }
    }
    return a;
  }

  function select(i, quiet) {
    if (i < 0 || i >= steps.length || !pool) { return; }
    var tl = el("timeline");
    var old = tl.querySelector("li.selected");
    if (old) { old.classList.remove("selected"); }
    var li = tl.querySelector('li.step[data-n="' + i + '"]');
    li.classList.add("selected");
    if (!quiet) { li.scrollIntoView({ block: "nearest" }); }
    selected = i;
    var s = detail[i];
    if (s.has_state) {
      var sc = stateAt(i);
      s.state = sc.state;
      s.changes = changes(sc.before, sc.state);
    }
    el("detail").innerHTML = '<div class="nav"><button id="prev">◀ step</button><button id="next">step ▶</button></div>' +
      '<h2 id="step-title">Step ' + s.n + (s.label ? " (" + esc(s.label) + ")" : "") + "</h2>" + (run.turns ? turnHTML(i) : "") + stepHTML(s, "");
    el("prev").onclick = function () { select(selected - 1); };
    el("next").onclick = function () { select(selected + 1); };
    var cur = el("cursor");
    if (cur) { cur.setAttribute("x", (i * +el("chart").getAttribute("data-bar")).toFixed(2)); }
    if (location.hash !== "#step-" + s.n) { history.replaceState(null, "", "#step-" + s.n); }
  }

  // Sub-agents render when opened (a long run's agents cost nothing until then).
  el("detail").addEventListener("toggle", function (ev) {
    var d = ev.target;
    if (!d.classList || !d.classList.contains("agent") || !d.open) { return; }
    var body = d.querySelector(".agent-body");
    if (body.childElementCount) { return; }
    var path = d.getAttribute("data-path"), a = agentAt(path), h = "";
    (a.steps || []).forEach(function (s, j) {
      h += '<div class="substep"><h4>step ' + s.n + "</h4>" + stepHTML(s, path + "s" + j) + "</div>";
    });
    body.innerHTML = h;
  }, true);

  el("timeline").addEventListener("click", function (ev) {
    var li = ev.target.closest("li.step, li.turn");
    if (li) { select(+li.getAttribute("data-n")); }
  });
  el("chart").addEventListener("click", function (ev) {
    var r = el("chart").getBoundingClientRect();
    select(Math.min(steps.length - 1, Math.floor((ev.clientX - r.left) / r.width * steps.length)));
  });
  el("chart").addEventListener("mousemove", function (ev) {
    var r = el("chart").getBoundingClientRect(), s = steps[Math.floor((ev.clientX - r.left) / r.width * steps.length)];
    if (s) {
      var sp = split(s);
      el("chart").setAttribute("title", "step " + s.n + ": " + sp[0] + " input tokens, " + (s.cache ? sp[1] + " cache read, " + sp[2] + " cache write" : sp[1] + " cached prefix"));
    }
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "ArrowDown" || ev.key === "j") { select(selected + 1); ev.preventDefault(); }
    if (ev.key === "ArrowUp" || ev.key === "k") { select(selected - 1); ev.preventDefault(); }
  });
  window.addEventListener("resize", function () { drawChart(); if (selected >= 0) { var i = selected; selected = -1; select(i); } });

  drawChart();
  var tChart = performance.now();
  drawTimeline();
  var tTimeline = performance.now();
  // When the timeline was drawn, in ms since navigation began (for tests).
  window.repromptViewer = { readyMs: performance.now(), steps: steps.length,
    scriptMs: t0, parseMs: tParsed - t0, chartMs: tChart - tParsed, timelineMs: tTimeline - tChart };
  // update adds what a followed run saved since the page read it: the
  // steps from u.from on replace the page's, the pool keeps its first
  // u.messages_from messages and takes the rest.
  function update(u) {
    if (pool.length < u.messages_from) { location.reload(); return; }
    var following = selected < 0 || selected >= steps.length - 1, changedFrom = u.from;
    run.title = u.title; run.source = u.source; run.notes = u.notes; run.done = u.done; run.error = u.error; run.turns = u.turns;
    steps.length = u.from;
    detail.length = u.from;
    pool.length = u.messages_from;
    (u.steps || []).forEach(function (s) { steps.push(s); });
    (u.detail || []).forEach(function (s) { detail.push(s); });
    (u.messages || []).forEach(function (m) { pool.push(m); });
    drawHeader();
    drawChart();
    drawTimeline();
    window.repromptViewer.steps = steps.length;
    document.body.setAttribute("data-steps", steps.length);
    if (!steps.length) { return; }
    var i = following ? steps.length - 1 : Math.min(selected, steps.length - 1);
    if (i !== selected || i >= changedFrom) { selected = -1; select(i, !following); } else {
      var li = el("timeline").querySelector('li.step[data-n="' + i + '"]');
      if (li) { li.classList.add("selected"); }
    }
  }

  var version = "";
  function follow(url) {
    var poll = function () {
      var from = Math.max(steps.length - 1, 0);
      fetch(url + (url.indexOf("?") < 0 ? "?" : "&") + "from=" + from + "&v=" + encodeURIComponent(version), { cache: "no-store" })
        .then(function (resp) {
          if (resp.status === 204) { return null; }
          if (!resp.ok) { throw new Error("HTTP " + resp.status); }
          return resp.json();
        })
        .then(function (u) { if (u) { version = u.version; update(u); } })
        .catch(function (err) { el("meta").setAttribute("title", "following the run: " + err); })
        .then(function () { setTimeout(poll, 1000); });
    };
    poll();
  }

  return {
    detail: function (d) {
      detail = d.steps || [];
      pool = d.messages || [];
      var start = 0, m = /^#step-(\d+)$/.exec(location.hash);
      if (m) { steps.forEach(function (s, i) { if (s.n === +m[1]) { start = i; } }); }
      if (steps.length) { select(start, start === 0); } else { el("detail").innerHTML = '<p class="muted">no steps</p>'; }
      window.repromptViewer.detailMs = performance.now();
      document.body.setAttribute("data-steps", steps.length);
      document.body.setAttribute("data-ready", "1");
      var url = document.body.getAttribute("data-follow");
      if (url) { follow(url); }
    }
  };
}
