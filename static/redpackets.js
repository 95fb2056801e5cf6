// Red packet pages: live remaining counts, the open button, the grab list
// that refreshes on each live event, the merchant's live figures, and the
// create form's inline validation. Uses window.seckill from app.js.
(function () {
  "use strict";
  const sk = window.seckill;

  // refresher runs fn now and coalesces calls that arrive while it runs into one more run.
  function refresher(fn) {
    let running = false, again = false;
    return async function run() {
      if (running) { again = true; return; }
      running = true;
      try { await fn(); } finally {
        running = false;
        if (again) { again = false; run(); }
      }
    };
  }

  // Every element with data-rp-watch shows the live remaining count of its packet.
  const watched = {};
  document.querySelectorAll("[data-rp-watch]").forEach((el) => {
    const id = el.dataset.rpWatch;
    (watched[id] = watched[id] || []).push(el);
    sk.live.subscribe("redpacket:" + id);
  });
  // data-rp-live="on" once the server confirms the subscription (tests wait for it).
  sk.live.on("subscribed", (ev) => {
    const m = /^redpacket:(\d+)$/.exec(ev.topic || "");
    if (m) (watched[m[1]] || []).forEach((el) => { el.dataset.rpLive = "on"; });
  });
  const onEvent = [];
  sk.live.on("redpacket", (ev) => {
    (watched[String(ev.redpacket_id)] || []).forEach((el) => {
      el.querySelectorAll("[data-rp-remaining]").forEach((n) => { n.textContent = ev.remaining_count; });
      if (el.matches("[data-rp-remaining]")) el.textContent = ev.remaining_count;
    });
    onEvent.forEach((fn) => fn(ev));
  });

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // renderGrabs redraws a grab list with the same markup as the server's.
  function renderGrabs(list, data, me) {
    list.replaceChildren();
    (data.grabs || []).forEach((g) => {
      const lucky = data.luckiest_user_id === g.user_id;
      const li = el("li", { "data-testid": "rp-grab", "data-user-id": g.user_id });
      if (lucky) li.classList.add("luckiest");
      if (me && g.user_id === me) li.classList.add("mine");
      li.append(el("span", { class: "rp-who" }, g.username));
      if (lucky) li.append(el("span", { class: "badge ok", "data-testid": "rp-luckiest" }, "👑 " + T("luckiest")));
      li.append(el("span", { class: "spacer" }));
      li.append(window.seckill.timeEl(g.grabbed_at, "muted"));
      li.append(el("span", { class: "rp-grab-amount" }, sk.money(g.amount_cents)));
      list.append(li);
    });
    if (!data.grabs || data.grabs.length === 0) {
      list.append(el("li", { class: "muted", "data-testid": "rp-no-grabs" }, T("Nobody has opened it yet.")));
    }
  }

  function grabList(root, id, me) {
    const list = root.querySelector("[data-testid=rp-grabs]");
    return refresher(async () => {
      const res = await sk.api("GET", "/api/redpackets/" + id + "/grabs");
      if (res.ok && list) renderGrabs(list, res.body, me);
    });
  }

  // The shopper's packet page.
  const page = document.querySelector("[data-rp-id]");
  if (page) {
    const id = page.dataset.rpId;
    const me = Number(page.dataset.rpMe || 0);
    const refreshGrabs = grabList(page, id, me);
    onEvent.push((ev) => { if (String(ev.redpacket_id) === id) refreshGrabs(); });
    const open = page.querySelector("[data-testid=rp-open]");
    const won = page.querySelector("[data-testid=rp-won]");
    const err = page.querySelector("[data-testid=rp-error]");
    if (open) {
      open.addEventListener("click", async () => {
        open.disabled = true;
        err.hidden = true;
        const res = await sk.api("POST", "/api/redpackets/" + id + "/grab");
        if (res.status === 201) {
          open.hidden = true;
          if (open.nextElementSibling) open.nextElementSibling.hidden = true;
          won.textContent = sk.money(res.body.grab.amount_cents);
          won.hidden = false;
          const label = page.querySelector("[data-rp-won-label]");
          if (label) label.hidden = false;
        } else {
          const e = (res.body && res.body.error) || {};
          const text = { sold_out: T("Too late: all shares are gone."), expired: T("This packet has expired."), already_grabbed: T("You have already opened this packet.") }[e.code];
          err.textContent = text || sk.sentence(e.message) || T("Something went wrong. Try again.");
          err.hidden = false;
          if (!e.code || e.code === "rate_limited" || e.code === "internal") open.disabled = false;
          else open.hidden = true;
        }
        refreshGrabs();
      });
    }
  }

  // The merchant's packet page: live figures and grabs.
  const admin = document.querySelector("[data-rp-admin]");
  if (admin) {
    const id = admin.dataset.rpAdmin;
    const refreshGrabs = grabList(admin, id, 0);
    const set = (tid, v) => { const n = admin.querySelector("[data-testid=" + tid + "]"); if (n) n.textContent = v; };
    const refreshStats = refresher(async () => {
      const res = await sk.api("GET", "/api/admin/redpackets/" + id + "/stats");
      if (!res.ok) return;
      const s = res.body;
      set("rp-stat-claimed", s.claimed);
      set("rp-stat-flushed", s.flushed);
      set("rp-stat-remaining", s.remaining_count);
      set("rp-stat-remaining-cents", sk.money(s.remaining_cents));
      set("rp-stat-refunded", sk.money(s.refunded_cents));
      const bar = admin.querySelector("[data-testid=rp-bar]");
      if (bar && s.count > 0) bar.style.width = Math.floor(100 * s.claimed / s.count) + "%";
    });
    onEvent.push((ev) => {
      if (String(ev.redpacket_id) !== id) return;
      refreshStats();
      refreshGrabs();
    });
  }

  // The create form: the server's rules, checked as the merchant types.
  const form = document.querySelector("[data-testid=rp-form]");
  if (form) {
    const units = { ns: 1e-9, us: 1e-6, "µs": 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
    function seconds(s) {
      if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(s)) return NaN;
      let total = 0;
      s.replace(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g, (_, n, u) => { total += Number(n) * units[u]; });
      return total;
    }
    // The bounds are the server's (db/model/limits.go), in the form's data-limits.
    const L = JSON.parse(form.dataset.limits);
    function check() {
      const v = (name) => form.elements[name].value.trim();
      const errs = {};
      const title = v("title");
      if (!title) errs.title = "is required";
      else if ([...title].length > L.title.max) errs.title = "must be at most " + L.title.max + " characters";
      const total = v("total").replace(/^¥/, "");
      let cents = NaN;
      if (!/^\d{1,9}(\.\d{1,2})?$/.test(total)) errs.total_cents = "must be an amount such as 88.88";
      else {
        const [y, f] = total.split(".");
        cents = Number(y) * 100 + Number(((f || "") + "00").slice(0, 2));
        if (cents < L.total_cents.min || cents > L.total_cents.max) errs.total_cents = "must be between " + L.total_cents.min + " and " + L.total_cents.max + " cents";
      }
      const count = Number(v("count"));
      if (!/^\d+$/.test(v("count")) || count < L.count.min || count > L.count.max) errs.count = "must be between " + L.count.min + " and " + L.count.max;
      else if (!errs.total_cents) {
        if (v("mode") === "random" && cents < count) errs.total_cents = "must be at least 1 cent per share in a random packet (" + count + " cents for " + count + " shares)";
        if (v("mode") === "fixed" && cents % count !== 0) errs.total_cents = "must be divisible by the count in a fixed packet (" + cents + " cents over " + count + " shares leaves " + (cents % count) + ")";
      }
      const exp = v("expires_in");
      if (exp === "at") {
        const at = form.elements.expires_at && form.elements.expires_at.value ? new Date(form.elements.expires_at.value) : null;
        if (!at || isNaN(at)) errs.expires_in = T("needs the date and time it expires");
        else if (at.getTime() <= Date.now()) errs.expires_in = T("must be a date and time in the future");
        else if (at.getTime() - Date.now() > L.expires_in_s.max * 1000) errs.expires_in = T("must be within " + L.expires_in_s.max / 86400 + " days from now");
      } else if (exp) {
        const s = seconds(exp);
        if (isNaN(s)) errs.expires_in = T("must be a duration such as 30m or 24h");
        else if (s < L.expires_in_s.min || s > L.expires_in_s.max) errs.expires_in = T("must be between 1s and " + L.expires_in_s.max / 3600 + "h0m0s");
      }
      const preview = form.querySelector("[data-testid=rp-preview]");
      if (preview) {
        preview.textContent = Object.keys(errs).length ? "" :
          T(v("mode") === "fixed" ? "Each share: %s" : "Average share: %s", sk.money(Math.floor(cents / count)));
      }
      return errs;
    }
    const touched = new Set();
    function show(all) {
      const errs = check();
      form.querySelectorAll("[data-error-for]").forEach((n) => {
        const f = n.dataset.errorFor;
        if (all || touched.has(f)) n.textContent = errs[f] || "";
      });
      return errs;
    }
    const fieldOf = { title: "title", total: "total_cents", count: "count", expires_in: "expires_in", expires_at: "expires_in" };
    // The date and time field shows only when "At a date and time" is chosen.
    const expiry = form.querySelector("[data-expiry]"), atBox = form.querySelector("[data-expires-at]");
    if (expiry && atBox) {
      const toggle = () => { atBox.hidden = expiry.value !== "at"; };
      toggle();
      expiry.addEventListener("change", toggle);
    }
    form.addEventListener("input", (e) => {
      if (fieldOf[e.target.name]) touched.add(fieldOf[e.target.name]);
      // The total's rule depends on the count and the mode, once there is a total.
      if ((e.target.name === "count" || e.target.name === "mode") && form.elements.total.value.trim()) touched.add("total_cents");
      show(false);
    });
    form.addEventListener("change", () => show(false));
    form.addEventListener("submit", (e) => {
      if (Object.keys(show(true)).length) e.preventDefault();
    });
  }
})();
