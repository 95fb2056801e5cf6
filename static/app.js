// seckill's browser helpers: JSON API calls, one shared live WebSocket,
// countdowns and money formatting. Pages add their own behaviour in
// static/<area>.js using window.seckill.
(function () {
  "use strict";

  // csrfHeaders are what the server needs on a write riding on the session
  // cookie: the page's CSRF token (its <meta name="csrf-token">).
  function csrfHeaders(method) {
    if (/^(GET|HEAD|OPTIONS)$/i.test(method)) return {};
    const meta = document.querySelector('meta[name="csrf-token"]');
    return meta && meta.content ? { "X-CSRF-Token": meta.content } : {};
  }

  // api calls the JSON API with the session cookie; it resolves to
  // {status, body} and never throws on HTTP errors.
  async function api(method, path, body) {
    const opts = { method, headers: Object.assign({ "Accept": "application/json" }, csrfHeaders(method)), credentials: "same-origin" };
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
  let ws = null, backoff = 500;

  function connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    ws = new WebSocket(proto + "//" + location.host + "/ws");
    ws.onopen = () => {
      backoff = 500;
      topics.forEach((t) => ws.send(JSON.stringify({ op: "subscribe", topic: t })));
      document.documentElement.dataset.live = "on";
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
    return (d > 0 ? d + "d " : "") + hh + ":" + mm + ":" + ss;
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

  window.seckill = { api, csrfHeaders, live, money, countdown };
  document.addEventListener("DOMContentLoaded", () => {
    connect();
    tickCountdowns();
    setInterval(tickCountdowns, 1000);
  });
})();
