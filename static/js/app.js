/* volcanoweb dashboard: live updates over the WebSocket, editor niceties, small charts.
 *
 * Live: every element with data-live="kind kind..." (optionally data-live-id / data-live-prefix)
 * and hx-trigger="live" is refreshed (htmx re-fetches its fragment) when a message about a
 * matching object arrives on /ws/live/. The server sends frames {"kind": "changes", "t0", "items": [...]}
 * whose items are {"kind", "id", ...} (latest state per object); kinds are compared lower-case; a burst
 * the server folded arrives as {"kind", "id": "*", "count"} and matches every id, and {"kind": "*"} (the
 * server lost track) refreshes every live region. On open the page subscribes to what its live regions
 * show ({"kind": "subscribe", "topics": [[kind, id or prefix], ...]}), again when a swap changes that set.
 * A socket closed with 4408 (too far behind) reconnects and refetches every live region.
 * Refreshes are debounced per element and postponed while the user is interacting
 * inside the element (focus or checked boxes), so nothing is lost and nothing needs a reload.
 */
(function () {
  "use strict";

  var statusEl = null;
  function setStatus(state, label) {
    statusEl = statusEl || document.getElementById("live-status");
    if (!statusEl) return;
    statusEl.dataset.state = state;
    var l = statusEl.querySelector(".label");
    if (l) l.textContent = label;
  }

  function idsOf(msg) {
    var out = [];
    var id = msg.id;
    if (id && typeof id === "object") {
      if (id.namespace && id.name) out.push(id.namespace + "/" + id.name);
      if (id.name) out.push(String(id.name));
    } else if (id !== undefined && id !== null) {
      out.push(String(id));
    }
    if (msg.namespace && msg.name) out.push(msg.namespace + "/" + msg.name);
    else if (msg.name) out.push(String(msg.name));
    return out;
  }

  function matches(el, kind, ids) {
    var kinds = (el.dataset.live || "").toLowerCase().split(/\s+/);
    if (kinds.indexOf(kind) < 0 && kinds.indexOf("*") < 0) return false;
    var exact = el.dataset.liveId, prefix = el.dataset.livePrefix;
    if (!exact && !prefix) return true;
    if (ids.indexOf("*") >= 0) return true; // a collapsed burst ({"id": "*", "count": n}): any object may have changed
    for (var i = 0; i < ids.length; i++) {
      if (exact && ids[i] === exact) return true;
      if (prefix && ids[i].indexOf(prefix) === 0) return true;
    }
    return false;
  }

  function busy(el) {
    var active = document.activeElement;
    if (active && active !== document.body && el.contains(active) && /INPUT|SELECT|TEXTAREA/.test(active.tagName)) return true;
    return !!el.querySelector("input[name=ids]:checked");
  }

  var timers = new WeakMap();
  function refresh(el) {
    if (timers.get(el)) return;
    timers.set(el, setTimeout(function run() {
      if (busy(el)) { timers.set(el, setTimeout(run, 1500)); return; }
      timers.delete(el);
      if (window.htmx) window.htmx.trigger(el, "live");
    }, 250));
  }

  function onChange(msg) {
    if (!msg || typeof msg !== "object" || !msg.kind) return;
    var kind = String(msg.kind).toLowerCase();
    var ids = idsOf(msg);
    document.querySelectorAll("[data-live]").forEach(function (el) {
      if (kind === "*" || matches(el, kind, ids)) refresh(el);
    });
    document.dispatchEvent(new CustomEvent("volcano:live", { detail: msg }));
  }
  function onMessage(msg) {
    if (!msg || typeof msg !== "object" || !msg.kind) return;
    if (msg.kind === "changes" && Array.isArray(msg.items)) { msg.items.forEach(onChange); return; }
    if (/^(pong|subscribed|stats|error)$/.test(String(msg.kind))) return;
    onChange(msg);
  }

  /* What this page's live regions show, as [kind, id or id prefix] pairs ("" = every id): the same test
     as matches(), so that the server sends nothing the page would ignore. */
  function topics() {
    var seen = {}, out = [];
    document.querySelectorAll("[data-live]").forEach(function (el) {
      var keys = [el.dataset.liveId, el.dataset.livePrefix].filter(Boolean);
      (el.dataset.live || "").toLowerCase().split(/\s+/).filter(Boolean).forEach(function (kind) {
        (keys.length ? keys : [""]).forEach(function (key) {
          var t = kind + "\u0000" + key;
          if (!seen[t]) { seen[t] = 1; out.push([kind, key]); }
        });
      });
    });
    return out.length > 64 ? [["*", ""]] : out;
  }
  var subscribed = null;
  function subscribe() {
    if (!ws || ws.readyState !== 1) return;
    var t = topics(), text = JSON.stringify(t);
    if (text === subscribed) return;
    subscribed = text;
    ws.send(JSON.stringify({ kind: "subscribe", topics: t }));
  }

  var ws = null, attempt = 0, pingTimer = null, connected = false;
  function connect() {
    if (!document.getElementById("live-status")) return; // not logged in
    var proto = location.protocol === "https:" ? "wss://" : "ws://";
    var livePort = document.body.dataset.livePort; // the stack's live processes, on a port of their own
    var host = livePort ? location.hostname + ":" + livePort : location.host;
    // the first socket starts at the revision the page was rendered at: what changed while the page loaded
    // comes too (a reconnect refetches every region instead)
    var rev = connected ? "" : (document.body.dataset.liveRev || "");
    var query = /^\d+$/.test(rev) ? "?since=" + rev : "";
    try { ws = new WebSocket(proto + host + "/ws/live/" + query); } catch (e) { schedule(); return; }
    setStatus("connecting", attempt ? "Reconnecting…" : "Connecting…");
    ws.onopen = function () {
      connected = true;
      var wasDown = attempt > 0;
      attempt = 0;
      subscribed = null;
      subscribe();
      setStatus("live", "Live");
      clearInterval(pingTimer);
      pingTimer = setInterval(function () { if (ws && ws.readyState === 1) ws.send('{"kind":"ping"}'); }, 25000);
      if (wasDown) { // catch up on anything missed while disconnected
        document.querySelectorAll("[data-live]").forEach(refresh);
      }
    };
    ws.onmessage = function (ev) {
      try { onMessage(JSON.parse(ev.data)); } catch (e) { /* ignore malformed */ }
    };
    ws.onclose = function (ev) {
      clearInterval(pingTimer);
      if (ev.code === 4401) { setStatus("off", "Signed out"); return; }
      if (ev.code === 4408) attempt = 0; // too far behind: reconnect soon, then refetch every live region
      schedule();
    };
    ws.onerror = function () { try { ws.close(); } catch (e) { /* already closed */ } };
  }
  function schedule() {
    attempt += 1;
    var delay = Math.min(30000, 500 * Math.pow(2, Math.min(attempt, 6))) * (0.75 + Math.random() * 0.5);
    setStatus("offline", "Offline — retrying");
    setTimeout(connect, delay);
  }

  /* ---- editor: line numbers, error line, templates, Ctrl+Enter ---------------------- */
  function gutter(editor) {
    var ta = editor.querySelector("textarea"), g = editor.querySelector(".gutter");
    if (!ta || !g) return;
    var n = ta.value.split("\n").length, bad = parseInt(editor.dataset.errorLine || "0", 10), out = [];
    for (var i = 1; i <= n; i++) out.push(i === bad ? "<b>" + i + "</b>" : String(i));
    g.innerHTML = out.join("\n");
    g.scrollTop = ta.scrollTop;
  }
  function initEditors(root) {
    (root || document).querySelectorAll("[data-editor]").forEach(function (ed) {
      if (ed.dataset.ready) return;
      ed.dataset.ready = "1";
      var ta = ed.querySelector("textarea");
      ta.addEventListener("input", function () { gutter(ed); });
      ta.addEventListener("scroll", function () { ed.querySelector(".gutter").scrollTop = ta.scrollTop; });
      ta.addEventListener("keydown", function (e) {
        if (e.key === "Tab" && !e.shiftKey && !e.ctrlKey && !e.altKey && !e.metaKey && !ed.dataset.tabEscape) {
          e.preventDefault(); // insert two spaces; press Escape first to move focus with Tab
          var s = ta.selectionStart;
          ta.setRangeText("  ", s, ta.selectionEnd, "end");
          ta.dispatchEvent(new Event("input", { bubbles: true }));
        } else if (e.key === "Escape") {
          ed.dataset.tabEscape = "1";
        } else if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && ta.form) {
          e.preventDefault();
          ta.form.requestSubmit();
        }
      });
      ta.addEventListener("blur", function () { delete ed.dataset.tabEscape; });
      gutter(ed);
    });
  }

  function initTemplates() {
    var sel = document.getElementById("template-select");
    if (!sel || sel.dataset.ready) return;
    sel.dataset.ready = "1";
    sel.addEventListener("change", function () {
      var ta = document.getElementById("manifest");
      if (!sel.value) { ta.value = ""; ta.dispatchEvent(new Event("input", { bubbles: true })); return; }
      fetch(sel.dataset.templateBase + encodeURIComponent(sel.value), { credentials: "same-origin" })
        .then(function (r) {
          if (!r.ok) throw new Error(r.status);
          var ns = r.headers.get("X-Default-Namespace");
          return r.text().then(function (text) { return { text: text, ns: ns }; });
        })
        .then(function (got) {
          var text = got.text, nsInput = document.getElementById("ns-input");
          if (got.ns && nsInput) nsInput.value = got.ns; // the namespace follows the template's queue
          ta.value = text;
          ta.dispatchEvent(new Event("input", { bubbles: true }));
          if (window.htmx) window.htmx.trigger(ta, "revalidate");
          var u = new URL(location.href); u.searchParams.set("template", sel.value); history.replaceState(null, "", u);
        })
        .catch(function () { document.getElementById("dry-run").innerHTML = '<div class="alert bad" role="alert">Could not load the template.</div>'; });
    });
  }

  function markErrorLine() {
    var box = document.querySelector("[data-dry-run]"), ed = document.querySelector("#submit-form [data-editor]");
    if (!ed) return;
    var m = box && box.dataset.dryRun === "error" ? /line (\d+)/.exec(box.dataset.errorLine || "") : null;
    if (m) ed.dataset.errorLine = m[1]; else delete ed.dataset.errorLine;
    gutter(ed);
  }

  /* ---- charts ---------------------------------------------------------------------- */
  var TONES = { Pending: "#d99a1e", Inqueue: "#d99a1e", Restarting: "#d99a1e", Running: "#2f6fdf", Completing: "#2f6fdf",
    Completed: "#2e9e6a", Failed: "#d64545", Aborting: "#e07b39", Aborted: "#8a94a6", Terminating: "#e07b39", Terminated: "#8a94a6" };
  function initCharts(root) {
    if (!window.Chart) return;
    (root || document).querySelectorAll("canvas[data-chart=doughnut]").forEach(function (c) {
      var labels = (c.dataset.labels || "").split(",").filter(Boolean);
      var values = (c.dataset.values || "").split(",").filter(Boolean).map(Number);
      var existing = window.Chart.getChart(c);
      if (existing) existing.destroy();
      new window.Chart(c, {
        type: "doughnut",
        data: { labels: labels, datasets: [{ data: values, backgroundColor: labels.map(function (l) { return TONES[l] || "#8a94a6"; }), borderWidth: 0 }] },
        options: { animation: false, responsive: false, cutout: "62%", plugins: { legend: { display: false } } }
      });
    });
  }

  /* ---- select all -------------------------------------------------------------------- */
  document.addEventListener("change", function (e) {
    var t = e.target;
    if (t && t.matches && t.matches("[data-select-all]")) {
      t.closest("form").querySelectorAll("input[name=ids]").forEach(function (b) { b.checked = t.checked; });
    }
    /* a select that submits its form when changed (the tenant switch); no inline handlers (CSP) */
    if (t && t.matches && t.matches("select[data-autosubmit]") && t.form) t.form.requestSubmit();
  });

  /* ---- confirmations ------------------------------------------------------------------
     A submit button (or a bulk form's chosen <option>) with data-confirm="text" asks in a modal dialog
     before htmx sends the request; Cancel (or Escape) sends nothing. In the text, {n} is the number of
     checked rows and {names} their labels (bulk forms). htmx's own hx-confirm only reads the attribute on
     the element that issues the request (the form), which is why the buttons' confirmations never showed. */
  var confirmDialog = null;
  function dialogEl() {
    if (confirmDialog) return confirmDialog;
    var d = document.createElement("dialog");
    d.id = "confirm-dialog";
    d.className = "confirm-dialog card";
    d.setAttribute("aria-labelledby", "confirm-title");
    d.setAttribute("aria-describedby", "confirm-text");
    d.innerHTML = '<form method="dialog"><h2 id="confirm-title"></h2><p id="confirm-text"></p>' +
      '<div class="confirm-buttons"><button class="btn" value="cancel" data-confirm-cancel>Cancel</button>' +
      '<button class="btn danger" value="ok" data-confirm-ok></button></div></form>';
    document.body.appendChild(d);
    confirmDialog = d;
    return d;
  }
  function askConfirm(title, text, okLabel, onOk) {
    var d = dialogEl();
    d.querySelector("#confirm-title").textContent = title;
    d.querySelector("#confirm-text").textContent = text;
    d.querySelector("[data-confirm-ok]").textContent = okLabel;
    d.returnValue = "cancel";
    d.onclose = function () { if (d.returnValue === "ok") onOk(); };
    d.showModal();
    d.querySelector("[data-confirm-cancel]").focus();
  }
  function confirmSource(form, submitter) {
    if (submitter && submitter.dataset && submitter.dataset.confirm) return submitter;
    var sel = form && form.querySelector("select[data-confirm-select]");
    var opt = sel && sel.options[sel.selectedIndex];
    return opt && opt.dataset.confirm ? opt : null;
  }
  /* Plain (non-htmx) forms: a submitter with data-confirm asks the same dialog before the browser posts. */
  document.addEventListener("submit", function (e) {
    var form = e.target, submitter = e.submitter;
    if (!form || form.hasAttribute("hx-post") || form.hasAttribute("hx-get")) return; // htmx asks via htmx:confirm
    if (!submitter || !submitter.dataset || !submitter.dataset.confirm || form.dataset.confirmed) return;
    e.preventDefault();
    var label = submitter.dataset.confirmLabel || submitter.textContent.trim() || "Confirm";
    askConfirm(label + "?", submitter.dataset.confirm, label, function () {
      form.dataset.confirmed = "1";
      form.requestSubmit(submitter);
    });
  });
  document.addEventListener("htmx:confirm", function (e) {
    var trig = e.detail.triggeringEvent, form = e.detail.elt;
    if (e.detail.question) { // hx-confirm on the requesting element itself: the same dialog, not window.confirm
      var own = (form.textContent || "").trim() || "Confirm";
      e.preventDefault();
      askConfirm(own + "?", e.detail.question, own, function () { e.detail.issueRequest(true); });
      return;
    }
    if (!trig || trig.type !== "submit" || !form || form.tagName !== "FORM") return;
    var src = confirmSource(form, trig.submitter);
    if (!src) return;
    var checked = Array.prototype.slice.call(form.querySelectorAll("input[name=ids]:checked"));
    if (src.tagName === "OPTION" && !checked.length) return; // the server answers "choose at least one job"
    var names = checked.map(function (b) { return b.dataset.label || b.value; });
    var shown = names.slice(0, 5).join(", ") + (names.length > 5 ? " and " + (names.length - 5) + " more" : "");
    var text = src.dataset.confirm.replace(/\{n\}/g, String(checked.length)).replace(/\{names\}/g, shown);
    var label = src.dataset.confirmLabel || src.textContent.trim() || "Confirm";
    e.preventDefault();
    var submitter = trig.submitter;
    askConfirm(label + "?", text, label, function () {
      if (submitter && submitter.focus) submitter.focus(); // htmx sends the focused button's name=value
      e.detail.issueRequest(true);
    });
  });

  /* A panel loaded by a user action (edit, who uses, save, cancel) takes the focus and scrolls into view;
     live refreshes of other regions never move the focus. */
  function focusPanel(e) {
    var panel = e.target;
    if (!panel || panel.id !== "queue-panel") return;
    var target = panel.querySelector("#queue-edit-form input:not([type=hidden])") || panel.querySelector("[data-panel-heading]");
    if (!target) return;
    if (panel.getBoundingClientRect().top > window.innerHeight * 0.6 || panel.getBoundingClientRect().bottom < 0) {
      panel.scrollIntoView({ block: "start", behavior: window.matchMedia("(prefers-reduced-motion: reduce)").matches ? "auto" : "smooth" });
    }
    target.focus({ preventScroll: true });
  }
  /* A streaming pod log keeps its newest line in view unless the reader scrolled up. */
  var logPinned = true;
  document.addEventListener("scroll", function (e) {
    var t = e.target;
    if (t && t.matches && t.matches("#pod-log-body pre.log")) logPinned = t.scrollTop + t.clientHeight >= t.scrollHeight - 8;
  }, true);
  function followLog() {
    var pre = document.querySelector("#pod-log-body pre.log");
    if (pre && logPinned) pre.scrollTop = pre.scrollHeight;
  }
  /* The queue preview carries the parsed meaning of every quantity field (the server parses as Save does):
     copy it next to the fields, if the form is still open. */
  function placeUnitHints(root) {
    var box = root && root.querySelector ? root.querySelector("[data-unit-hints]") : null;
    if (!box) return;
    box.querySelectorAll("[data-hint-for]").forEach(function (h) {
      var slot = document.getElementById("hint-" + h.dataset.hintFor);
      if (!slot) return;
      slot.className = h.className;
      slot.textContent = h.textContent;
    });
  }
  /* Queue tree: the arrows collapse and expand a queue's subtree (rows are in tree order with data-depth);
     the choice survives live refreshes of the table. */
  var collapsed = {};
  function applyTree() {
    var rows = document.querySelectorAll("table.tree tr[data-depth]");
    var hideBelow = null;
    rows.forEach(function (tr) {
      var depth = parseInt(tr.dataset.depth || "0", 10);
      if (hideBelow !== null && depth > hideBelow) { tr.hidden = true; return; }
      hideBelow = null;
      tr.hidden = false;
      var toggle = tr.querySelector("[data-tree-toggle]");
      if (!toggle) return;
      var name = toggle.dataset.treeToggle, closed = !!collapsed[name];
      toggle.setAttribute("aria-expanded", closed ? "false" : "true");
      toggle.setAttribute("aria-label", (closed ? "Expand " : "Collapse ") + name);
      toggle.textContent = closed ? "\u25b8" : "\u25be";
      if (closed) hideBelow = depth;
    });
  }
  document.addEventListener("click", function (e) {
    var t = e.target && e.target.closest ? e.target.closest("[data-tree-toggle]") : null;
    if (!t) return;
    collapsed[t.dataset.treeToggle] = !collapsed[t.dataset.treeToggle];
    applyTree();
  });
  /* A live refresh may replace the element that holds the keyboard focus (a tree's Edit button, say):
     remember it before the swap and give the focus to its counterpart (same id, else same aria-label or
     name) in the new content, so a keyboard user never falls back to the top of the page. */
  var focusKey = null;
  function keyOf(el) {
    if (!el || el === document.body) return null;
    return { id: el.id, label: el.getAttribute("aria-label"), name: el.getAttribute("name"), tag: el.tagName };
  }
  function counterpart(root, k) {
    if (k.id) { var byId = document.getElementById(k.id); if (byId && root.contains(byId)) return byId; }
    var all = root.querySelectorAll(k.tag);
    for (var i = 0; i < all.length; i++) {
      if (k.label && all[i].getAttribute("aria-label") === k.label) return all[i];
      if (!k.label && k.name && all[i].getAttribute("name") === k.name) return all[i];
    }
    return null;
  }
  /* Open <details> (a node's pod list) stay open across a live refresh and reload their content. */
  var openKeys = null;
  document.addEventListener("htmx:beforeSwap", function (e) {
    var t = e.detail && e.detail.target, a = document.activeElement;
    focusKey = t && a && t.contains(a) ? { target: t, key: keyOf(a) } : null;
    openKeys = t ? { target: t, labels: Array.prototype.map.call(t.querySelectorAll("details[open] > summary[aria-label]"),
      function (s) { return s.getAttribute("aria-label"); }) } : null;
  });
  function keepOpen(e) {
    var saved = openKeys;
    openKeys = null;
    if (!saved || saved.target !== e.target || !saved.labels.length) return;
    var reload = [];
    e.target.querySelectorAll("details > summary[aria-label]").forEach(function (s) {
      if (saved.labels.indexOf(s.getAttribute("aria-label")) < 0) return;
      s.parentElement.open = true;
      if (s.hasAttribute("hx-get")) reload.push(s);
    });
    if (!reload.length || !window.htmx) return;
    /* htmx wires the new content's triggers when it settles: ask for the content then */
    e.target.addEventListener("htmx:afterSettle", function () {
      reload.forEach(function (s) { window.htmx.trigger(s, "reopen"); });
    }, { once: true });
  }
  function keepFocus(e) {
    var saved = focusKey;
    focusKey = null;
    if (!saved || !saved.key || saved.target !== e.target) return;
    var a = document.activeElement;
    if (a && a !== document.body && document.body.contains(a)) return; // still focused (htmx kept an id'd element)
    var next = counterpart(e.target, saved.key);
    if (next) next.focus({ preventScroll: true });
  }
  function init(root) { initEditors(root); initTemplates(); initCharts(root); }
  document.addEventListener("DOMContentLoaded", function () {
    init(document);
    connect();
    document.body.addEventListener("htmx:afterSwap", function (e) { keepFocus(e); keepOpen(e); init(e.target); markErrorLine(); focusPanel(e); followLog(); placeUnitHints(e.target); applyTree(); subscribe(); });
    document.addEventListener("keydown", function (e) {
      if (e.key !== "Escape" || document.querySelector("dialog[open]")) return;
      /* Esc cancels an open queue edit from anywhere on the page (not only from inside the form: a live
         refresh or a click elsewhere may have moved the focus) */
      var form = document.getElementById("queue-edit-form");
      var cancel = form && form.querySelector("[data-cancel]");
      if (cancel) { e.preventDefault(); cancel.click(); }
    });
    document.body.addEventListener("htmx:responseError", function (e) {
      var flash = document.getElementById("flash");
      if (e.detail.xhr && e.detail.xhr.status >= 400 && e.detail.xhr.status < 500) return; // swapped: our error partials
      if (flash) {
        flash.innerHTML = '<div class="alert bad" role="alert">The server could not complete the request (' + (e.detail.xhr ? e.detail.xhr.status : "network") + "). Try again.</div>";
      }
    });
    /* The object this page shows was deleted: every live partial gets a small fragment and this trigger; say so
       once, at the top, and stop refreshing (the page has nothing left to show). */
    document.body.addEventListener("objectGone", function (e) {
      document.querySelectorAll("[data-live]").forEach(function (el) { el.removeAttribute("data-live"); });
      if (document.getElementById("gone-notice")) return;
      var flash = document.getElementById("flash");
      if (!flash) return;
      var note = document.createElement("div");
      note.id = "gone-notice";
      note.className = "alert warn";
      note.setAttribute("role", "alert");
      note.textContent = (e.detail && e.detail.message) || "This object no longer exists.";
      flash.innerHTML = "";
      flash.appendChild(note);
    });
    document.body.addEventListener("htmx:sendError", function () {
      var flash = document.getElementById("flash");
      if (flash) flash.innerHTML = '<div class="alert bad" role="alert">Cannot reach the server. Check your connection.</div>';
    });
  });
  window.volcanoLive = { onMessage: onMessage };
})();
