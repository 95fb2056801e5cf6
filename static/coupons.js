// Coupon pages: grab buttons, live remaining stock, the reminder picker,
// cancelling reminders, the inbox, and the merchant's coupon forms.
(function () {
  "use strict";
  const S = window.seckill;
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

  const localTime = (iso) => S.formatTime(iso);
  function requestID() {
    const b = new Uint8Array(12);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }

  // --- coupon centre ---
  // One record per coupon card; every path (the render, a stock event, a
  // grab answer, the opening countdown) updates it and calls showCoupon,
  // the one place that decides and draws the Grab button's state.
  const coupons = {}; // coupon ID → {state, remaining, held, limit}
  function couponRec(id) {
    if (coupons[id]) return coupons[id];
    const card = document.querySelector(`[data-coupon="${id}"]`);
    if (!card) return null;
    const rem = document.querySelector(`[data-remaining="${id}"]`);
    coupons[id] = {
      state: card.dataset.state,
      remaining: rem ? Number(rem.textContent) : 1,
      held: Number(card.dataset.held) || 0,
      limit: Number(card.dataset.limit) || 0,
    };
    return coupons[id];
  }
  function couponButton(c) {
    if (c.remaining <= 0) return [T("Sold out"), false];
    if (c.limit > 0 && c.held >= c.limit) return [T("Limit reached"), false];
    if (c.state === "ended") return [T("Ended"), false];
    return [T("Grab"), c.state === "live"];
  }
  function showCoupon(id) {
    const c = couponRec(id);
    if (!c) return;
    const [label, enabled] = couponButton(c);
    $$(`[data-remaining="${id}"]`).forEach((el) => { el.textContent = String(c.remaining); });
    $$(`[data-grab="${id}"]`).forEach((b) => { b.textContent = label; b.disabled = !enabled || b.dataset.busy === "1"; });
    const badge = document.querySelector(`[data-testid="coupon-state-${id}"]`);
    if (badge) { badge.textContent = S.stateLabel(c.state); badge.className = "badge " + c.state; }
    const card = document.querySelector(`[data-coupon="${id}"]`);
    if (card) { card.dataset.state = c.state; card.dataset.held = String(c.held); }
  }
  function setRemaining(id, n) {
    const c = couponRec(id);
    if (!c) return;
    c.remaining = Number(n);
    showCoupon(id);
  }

  async function grab(btn) {
    const id = btn.dataset.grab;
    const out = document.querySelector(`[data-testid="grab-result-${id}"]`);
    btn.dataset.busy = "1";
    showCoupon(id);
    const headers = Object.assign({ "Accept": "application/json", "X-Request-ID": requestID() }, S.csrfHeaders("POST"));
    const opts = { method: "POST", headers, credentials: "same-origin" };
    let status = 0, body = null;
    try {
      const res = await fetch(`/api/coupons/${id}/grab`, opts);
      status = res.status;
      body = await res.json();
    } catch (e) { body = null; }
    delete btn.dataset.busy;
    const c = couponRec(id);
    if (status === 201) {
      const uc = body.user_coupon;
      out.className = "grab-result ok";
      out.innerHTML = "";
      out.append(T("Got it! Valid until %s.", localTime(uc.valid_until)) + " ");
      const a = document.createElement("a");
      a.href = "/me/coupons"; a.textContent = T("See my coupons"); a.dataset.testid = "to-my-coupons";
      out.append(a);
      c.held += 1;
      showCoupon(id);
      return;
    }
    out.className = "grab-result error";
    out.textContent = S.sentence(body && body.error && body.error.message) || T("Something went wrong. Try again.");
    const code = body && body.error && body.error.code;
    if (code === "sold_out") c.remaining = 0;
    else if (code === "limit_reached") c.held = Math.max(c.held, c.limit);
    else if (code === "ended") c.state = "ended";
    showCoupon(id);
  }

  function initCentre() {
    $$("[data-coupon]").forEach((card) => S.live.subscribe("coupon:" + card.dataset.coupon));
    S.live.on("coupon", (ev) => setRemaining(ev.coupon_id, ev.remaining));
    $$("[data-grab]").forEach((b) => b.addEventListener("click", () => grab(b)));
    // "Remind me" is static/remind_picker.js, shared with the goods pages.
    // When an upcoming window opens, its Grab button comes alive.
    document.addEventListener("countdown-done", (e) => {
      const id = e.target.dataset && e.target.dataset.opens;
      const c = id && couponRec(id);
      if (!c) return;
      c.state = "live";
      showCoupon(id);
      $$(`[data-picker="coupon-${id}"]`).forEach((p) => p.dispatchEvent(new CustomEvent("picker-close")));
    });
    $$("[data-coupon]").forEach((card) => showCoupon(card.dataset.coupon));
  }

  // --- my reminders ---
  function initCancel() {
    $$("[data-cancel-reminder]").forEach((btn) => btn.addEventListener("click", async () => {
      const id = btn.dataset.cancelReminder;
      btn.disabled = true;
      const r = await S.api("DELETE", `/api/coupons/${id}/reminders?minutes_before=${btn.dataset.minutes}&channel=${encodeURIComponent(btn.dataset.channel)}`);
      if (r.ok) btn.closest("tr").remove();
      else btn.disabled = false;
    }));
  }

  // --- inbox ---
  function initInbox() {
    const list = document.querySelector("[data-inbox]");
    if (!list) return;
    document.addEventListener("seckill:notification", (e) => {
      const n = e.detail;
      const li = document.createElement("li");
      li.className = "unread";
      li.dataset.testid = `notification-${n.id}`;
      const span = document.createElement("span");
      // The UTC times written in the message show as the reader's, as the page's do (views/inbox_times.go).
      const msg = T(n.message), times = /\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} UTC|\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/g;
      let last = 0, m;
      while ((m = times.exec(msg))) {
        const d = new Date(m[0].replace(/^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}) UTC$/, "$1T$2:00Z"));
        span.append(msg.slice(last, m.index), isNaN(d) ? m[0] : S.timeEl(d.toISOString()));
        last = times.lastIndex;
      }
      span.append(msg.slice(last));
      li.append(span);
      if (n.goods_id) { const a = document.createElement("a"); a.href = `/goods/${n.goods_id}`; a.textContent = T("See the goods"); a.dataset.testid = `notification-goods-${n.id}`; li.append(" ", a); }
      li.append(S.timeEl(n.created_at));
      list.prepend(li);
      const empty = document.querySelector('[data-testid="no-notifications"]');
      if (empty) empty.hidden = true;
    });
    async function markRead() {
      const r = await S.api("POST", "/api/me/notifications/read");
      if (!r.ok) return;
      $$("li.unread", list).forEach((li) => li.classList.remove("unread"));
      document.dispatchEvent(new CustomEvent("seckill:inbox-read"));
    }
    $$("[data-mark-read]").forEach((btn) => btn.addEventListener("click", markRead));
    // Opening the inbox reads it (the server marked them read as it showed
    // them); one arriving while it is open is read as it appears.
    document.addEventListener("seckill:notification", () => { if (document.visibilityState !== "hidden") markRead(); });
    if (list.querySelector("li.unread")) document.dispatchEvent(new CustomEvent("seckill:inbox-read"));
  }

  // --- merchant forms ---
  function initMerchant() {
    $$("[data-tz-offset]").forEach((el) => { el.value = String(new Date().getTimezoneOffset()); });
    const form = document.querySelector("[data-coupon-form]");
    if (!form) return;
    const kind = form.querySelector('[name="kind"]'), value = form.querySelector('[name="value"]');
    const hint = () => { value.placeholder = kind.value === "percent_off" ? "1–99 (%)" : "10.00 (¥)"; };
    kind.addEventListener("change", hint);
    hint();
    // Inline checks before the server's: each message sits under its field.
    // The bounds are the server's (db/model/limits.go), in the form's data-limits.
    const L = JSON.parse(form.dataset.limits), n = (x) => x.toLocaleString("en-US");
    const within = (v, b) => /^\d+$/.test(v) && +v >= b.min && +v <= b.max;
    const rules = {
      title: (v) => v.trim() && [...v.trim()].length <= L.title.max ? "" : `title must be ${L.title.min}–${L.title.max} characters`,
      value: (v) => kind.value === "percent_off"
        ? (within(v, L.percent_off) ? "" : `a percentage off must be ${L.percent_off.min}–${L.percent_off.max}`)
        : (/^\d+(\.\d{1,2})?$/.test(v) && +v > 0 ? "" : "enter an amount like 10 or 9.90"),
      stock: (v) => within(v, L.stock) ? "" : `stock must be ${n(L.stock.min)}–${n(L.stock.max)}`,
      grab_end_at: (v) => {
        const s = form.querySelector('[name="grab_start_at"]').value;
        return v && s && v > s ? "" : "grab end must be after grab start";
      },
    };
    function check(name) {
      const input = form.querySelector(`[name="${name}"]`);
      const msg = rules[name](input.value);
      let el = input.closest("div").querySelector(".field-error");
      if (!el && msg) {
        el = document.createElement("small");
        el.className = "field-error";
        el.dataset.testid = "error-" + name;
        input.closest("div").append(el);
      }
      if (el) el.textContent = msg;
      return !msg;
    }
    Object.keys(rules).forEach((name) => form.querySelector(`[name="${name}"]`).addEventListener("blur", () => check(name)));
    form.addEventListener("submit", (e) => {
      const ok = Object.keys(rules).map(check).every(Boolean);
      if (!ok) e.preventDefault();
    });
  }

  // My coupons: a coupon the durable store refused (Redis had sold its unit
  // twice) turns failed in place; the inbox says why.
  function initMine() {
    if (!document.querySelector("[data-user-coupon]")) return;
    S.live.on("user_coupon", (ev) => {
      const uc = ev.user_coupon || {};
      $$(`[data-user-coupon="${uc.id}"] [data-user-coupon-status]`).forEach((b) => {
        b.className = "badge " + uc.status;
        b.textContent = S.stateLabel(uc.status);
      });
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    initMine();
    initCentre();
    initCancel();
    initInbox();
    initMerchant();
  });
})();
