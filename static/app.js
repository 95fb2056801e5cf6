// seckill's browser helpers: JSON API calls, one shared live WebSocket,
// countdowns and money formatting. Pages add their own behaviour in
// static/<area>.js using window.seckill.
(function () {
  "use strict";

  // ---- Language -----------------------------------------------------------
  // The page's language is <html lang>. A Chinese page carries the scripts'
  // translations in <script id="i18n-catalog"> (views/i18n, addJS). T is an
  // English message in the page's language, each %s or %d in it taking the
  // next argument; every script's words go through it.
  const lang = document.documentElement.lang || "en";
  let catalog = {};
  try {
    const el = document.getElementById("i18n-catalog");
    if (el) catalog = JSON.parse(el.textContent) || {};
  } catch (e) { catalog = {}; }
  // verb is a fmt verb in a catalog's format (views/i18n: the same rule).
  const verb = /%(\[\d+\])?[-+# 0]*\d*(\.\d+)?[sdvqgf%]/g;
  // fill puts args into a format: in order, or by index (%[2]s).
  function fill(format, args) {
    let i = 0;
    return format.replace(verb, (v, idx) => v === "%%" ? "%" : String(args[idx ? Number(idx.slice(1, -1)) - 1 : i++]));
  }
  // formats are the catalog's keys with verbs as patterns, most specific
  // (most text outside the verbs) first: a finished message from the server
  // (a notice pushed live) is translated through the first it fits.
  let formats = null;
  function match(msg) {
    if (!formats) {
      const quote = (t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      formats = Object.keys(catalog).filter((k) => k.includes("%")).map((k) => {
        let re = "^", last = 0, lits = 0;
        for (const m of k.matchAll(verb)) {
          const lit = k.slice(last, m.index);
          lits += lit.length;
          re += quote(lit) + (m[0] === "%%" ? "%" : "(.+?)");
          last = m.index + m[0].length;
        }
        lits += k.length - last;
        return { re: new RegExp(re + quote(k.slice(last)) + "$"), to: catalog[k], lits };
      }).filter((f) => f.lits >= 3).sort((a, b) => b.lits - a.lits);
    }
    for (const f of formats) {
      const m = f.re.exec(msg);
      if (m) return fill(f.to, m.slice(1));
    }
    return msg;
  }
  // T is msg in the page's language: its translation (args filled in), or a
  // finished message translated through the format it was made from.
  function T(msg, ...args) {
    if (args.length) return fill(catalog[msg] || msg, args);
    if (catalog[msg] !== undefined) return catalog[msg];
    return msg && lang === "zh-CN" ? match(String(msg)) : msg;
  }
  window.T = T;
  // locale is what Intl formats dates and numbers for.
  const locale = lang === "zh-CN" ? "zh-CN" : "en-GB";

  // csrfHeaders are what the server needs on a write riding on the session
  // cookie: the page's CSRF token (its <meta name="csrf-token">).
  function csrfHeaders(method) {
    if (/^(GET|HEAD|OPTIONS)$/i.test(method)) return {};
    const meta = document.querySelector('meta[name="csrf-token"]');
    return meta && meta.content ? { "X-CSRF-Token": meta.content } : {};
  }

  // api calls the JSON API with the session cookie; it resolves to
  // {status, body} and never throws on HTTP errors.
  async function api(method, path, body, headers) {
    const opts = { method, headers: Object.assign({ "Accept": "application/json" }, csrfHeaders(method), headers || {}), credentials: "same-origin" };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const res = await fetch(path, opts);
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    return { status: res.status, ok: res.ok, body: data };
  }

  // The live connection: one socket per page, re-subscribed after reconnects.
  const handlers = {};   // topic or event type → [fn]
  const topics = new Set();
  const opened = []; // run each time the socket opens
  let ws = null, backoff = 500;

  function connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    ws = new WebSocket(proto + "//" + location.host + "/ws");
    ws.onopen = () => {
      backoff = 500;
      topics.forEach((t) => ws.send(JSON.stringify({ op: "subscribe", topic: t })));
      document.documentElement.dataset.live = "on";
      // What changed before the socket was up (a page still loading, a
      // reconnect after a drop) came with no event: pages read it again.
      opened.forEach((fn) => fn());
    };
    ws.onmessage = (m) => {
      let ev;
      try { ev = JSON.parse(m.data); } catch (e) { return; }
      (handlers[ev.type] || []).forEach((fn) => fn(ev));
    };
    ws.onclose = () => {
      document.documentElement.dataset.live = "off";
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 10000);
    };
  }

  const live = {
    // subscribe asks for a public topic such as "goods:42".
    subscribe(topic) {
      if (topics.has(topic)) return;
      topics.add(topic);
      if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ op: "subscribe", topic }));
    },
    // on registers fn for events of a type ("stock", "order", "redpacket", "coupon", "notification").
    on(type, fn) { (handlers[type] = handlers[type] || []).push(fn); },
    // onOpen registers fn to run each time the socket opens, so a page
    // catches up on what it missed while it had none.
    onOpen(fn) { opened.push(fn); },
  };

  function money(cents) {
    const neg = cents < 0; cents = Math.abs(cents);
    return (neg ? "-" : "") + "¥" + Math.floor(cents / 100) + "." + String(cents % 100).padStart(2, "0");
  }

  // countdown renders "1d 02:03:04" style text until the given time.
  function countdown(until) {
    let s = Math.max(0, Math.floor((new Date(until).getTime() - Date.now()) / 1000));
    const d = Math.floor(s / 86400); s %= 86400;
    const hh = String(Math.floor(s / 3600)).padStart(2, "0");
    const mm = String(Math.floor((s % 3600) / 60)).padStart(2, "0");
    const ss = String(s % 60).padStart(2, "0");
    return (d > 0 ? T("%dd", d) + " " : "") + hh + ":" + mm + ":" + ss;
  }

  // Elements with data-countdown="<RFC 3339>" tick every second; when the
  // time comes they fire a "countdown-done" event (pages enable buttons on it).
  function tickCountdowns() {
    document.querySelectorAll("[data-countdown]").forEach((el) => {
      const until = el.dataset.countdown;
      el.textContent = countdown(until);
      if (new Date(until).getTime() <= Date.now() && !el.dataset.done) {
        el.dataset.done = "1";
        el.dispatchEvent(new CustomEvent("countdown-done", { bubbles: true }));
      }
    });
  }

  // ---- Times ------------------------------------------------------------
  // Every instant on a page is a <time datetime="RFC 3339"> (views.Time);
  // its text is rewritten here in the browser's time zone, in one format
  // ("1 Dec 2026, 14:05"), also for elements other scripts add later.
  const timeFormat = new Intl.DateTimeFormat(locale, {
    day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit", hourCycle: "h23",
  });
  const zoneFormat = new Intl.DateTimeFormat(locale, { timeZoneName: "long" });
  // formatTime is an instant (a Date or an RFC 3339 string) as pages show it.
  function formatTime(at) {
    const d = at instanceof Date ? at : new Date(at);
    return isNaN(d) ? "" : timeFormat.format(d);
  }
  function formatTimes(root) {
    const els = root.matches && root.matches("time[datetime]") ? [root] : Array.from((root.querySelectorAll ? root : document).querySelectorAll("time[datetime]"));
    els.forEach((el) => {
      const iso = el.getAttribute("datetime");
      if (el.dataset.shown === iso) return;
      const d = new Date(iso);
      if (isNaN(d)) return;
      el.textContent = formatTime(d);
      el.title = zoneFormat.formatToParts(d).filter((p) => p.type === "timeZoneName").map((p) => p.value).join("") || "";
      el.dataset.shown = iso;
    });
  }
  // timeEl makes a <time> for scripts that add rows; it is formatted at once.
  function timeEl(iso, cls) {
    const t = document.createElement("time");
    t.setAttribute("datetime", iso);
    if (cls) t.className = cls;
    t.textContent = formatTime(iso);
    return t;
  }
  new MutationObserver((records) => {
    records.forEach((r) => {
      if (r.type === "attributes") formatTimes(r.target);
      else r.addedNodes.forEach((n) => { if (n.nodeType === 1) formatTimes(n); });
    });
  }).observe(document.documentElement, { childList: true, subtree: true, attributes: true, attributeFilter: ["datetime"] });

  // An orders export's link (the goods' and the desk's orders.csv) carries
  // the reader's time zone, so the times it downloads are theirs
  // (handlers/exports.go).
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (zone) document.querySelectorAll('a[href*="/orders.csv"]').forEach((a) => {
    const u = new URL(a.href, location.href);
    u.searchParams.set("tz", zone);
    a.href = u.pathname + u.search;
  });

  // ---- Date and time inputs ----------------------------------------------
  // A datetime-local input is the browser's local time. The server renders
  // its value as an instant (data-utc: RFC 3339, or a bare value meaning
  // UTC); here it is shown in local time, and on submit each such field is
  // posted as RFC 3339 with the offset, so the server reads one instant.
  function pad(n) { return String(n).padStart(2, "0"); }
  function localInputValue(d) {
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }
  const zoned = /(Z|[+-]\d\d:\d\d)$/i;
  function instantOf(raw, bareIsUTC) {
    raw = (raw || "").trim();
    if (!raw) return null;
    const d = new Date(zoned.test(raw) ? raw : bareIsUTC ? raw + "Z" : raw);
    return isNaN(d) ? null : d;
  }
  function localiseInputs(root) {
    root.querySelectorAll('input[type="datetime-local"]').forEach((inp) => {
      const d = inp.dataset.utc !== undefined ? instantOf(inp.dataset.utc, true)
        : inp.dataset.localValue !== undefined ? instantOf(inp.dataset.localValue, true)
          : zoned.test(inp.getAttribute("value") || "") ? instantOf(inp.getAttribute("value"), true) : null;
      if (d) inp.value = localInputValue(d);
    });
  }
  // rfc3339Local is a local date and time with the browser's offset then, e.g. "2026-12-01T14:05:00+08:00".
  function rfc3339Local(d) {
    const off = -d.getTimezoneOffset(), sign = off < 0 ? "-" : "+", a = Math.abs(off);
    return `${localInputValue(d)}:${pad(d.getSeconds())}${sign}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
  }
  // Runs after the forms' own submit checks (they listen on the form).
  document.addEventListener("submit", (e) => {
    const form = e.target;
    if (e.defaultPrevented || !(form instanceof HTMLFormElement)) return;
    form.querySelectorAll('input[type="datetime-local"][name]').forEach((inp) => {
      const d = inp.value ? new Date(inp.value) : null; // a bare date-time is local time
      if (!d || isNaN(d)) return;
      const hidden = document.createElement("input");
      hidden.type = "hidden";
      hidden.name = inp.name;
      hidden.value = rfc3339Local(d);
      hidden.dataset.instantFor = inp.name;
      inp.dataset.name = inp.name;
      inp.removeAttribute("name");
      inp.after(hidden);
    });
  });
  // Back to a page from the history cache: the fields get their names back.
  window.addEventListener("pageshow", () => {
    document.querySelectorAll("input[data-instant-for]").forEach((h) => h.remove());
    document.querySelectorAll('input[type="datetime-local"][data-name]').forEach((inp) => { inp.name = inp.dataset.name; });
  });

  // ---- Phone menu --------------------------------------------------------
  function initMenu() {
    const btn = document.querySelector("[data-menu-toggle]");
    const bar = document.querySelector(".topbar");
    if (!btn || !bar) return;
    const set = (open) => {
      bar.classList.toggle("menu-open", open);
      btn.setAttribute("aria-expanded", open ? "true" : "false");
    };
    btn.addEventListener("click", () => set(!bar.classList.contains("menu-open")));
    document.addEventListener("keydown", (e) => { if (e.key === "Escape") set(false); });
  }

  // orderNumber is an order's short number, "G12-0007" (goods 12, its 7th
  // order), as views.orderNo renders it; the API keeps the integer ID.
  function orderNumber(id) {
    const n = Number(id), span = 1e9;
    return "G" + Math.floor(n / span) + "-" + String(n % span).padStart(4, "0");
  }

  // stateLabel is how a state code reads on a badge ("sold_out" → "Sold out"), as views.stateLabel.
  function stateLabel(code) {
    const s = String(code || "").replace(/_/g, " ");
    return s ? T(s[0].toUpperCase() + s.slice(1)) : "";
  }

  // sentence is a server's message as pages show it, as views.sentence:
  // "sold out" → "Sold out.".
  function sentence(msg) {
    msg = String(msg || "").trim();
    if (!msg) return "";
    msg = msg[0].toUpperCase() + msg.slice(1);
    msg = /[.!?。！？]$/.test(msg) ? msg : msg + (/[\u3400-\u9fff]/.test(msg) ? "。" : ".");
    return T(msg);
  }

  // ---- Table cards on phones (issue 24, item 8) ---------------------------
  // A table of class "stack" is a list of cards under 720 px, each cell
  // labelled by CSS from its data-label; a cell a view (or a script adding
  // rows) left without one takes its column's heading.
  function labelCells(root) {
    (root.matches && root.matches("table.stack") ? [root] : Array.from((root.querySelectorAll ? root : document).querySelectorAll("table.stack"))).forEach((table) => {
      const heads = [];
      table.querySelectorAll("thead tr:first-child th, thead tr:first-child td").forEach((th) => {
        for (let i = 0; i < (th.colSpan || 1); i++) heads.push(th.textContent.trim());
      });
      table.querySelectorAll("tbody tr, tfoot tr").forEach((tr) => {
        let col = 0;
        Array.from(tr.cells).forEach((td) => {
          if (!td.hasAttribute("data-label") && heads[col]) td.dataset.label = heads[col];
          col += td.colSpan || 1;
        });
      });
    });
  }
  new MutationObserver((records) => {
    records.forEach((r) => { const t = r.target.closest && r.target.closest("table.stack"); if (t) labelCells(t); });
  }).observe(document.documentElement, { childList: true, subtree: true });

  window.seckill = { api, csrfHeaders, live, money, countdown, formatTime, formatTimes, timeEl, orderNumber, stateLabel, sentence, T, lang, locale };
  formatTimes(document);
  document.addEventListener("DOMContentLoaded", () => {
    formatTimes(document);
    localiseInputs(document);
    labelCells(document);
    initMenu();
    connect();
    tickCountdowns();
    setInterval(tickCountdowns, 1000);
  });
})();
