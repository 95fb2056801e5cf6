// Coupon pages: grab buttons, live remaining stock, the reminder picker,
// cancelling reminders, the inbox, and the merchant's coupon forms.
(function () {
  "use strict";
  const S = window.seckill;
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const channelLabels = { app: "In app", email: "Email", webhook: "Webhook", sms: "SMS", wechat: "WeChat" };

  function localTime(iso) {
    const d = new Date(iso);
    return d.toLocaleString([], { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  }
  function localiseTimes(root) {
    $$("time[datetime]", root).forEach((el) => { el.textContent = localTime(el.getAttribute("datetime")); });
  }
  function requestID() {
    const b = new Uint8Array(12);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }

  // --- coupon centre ---
  function setRemaining(id, n) {
    $$(`[data-remaining="${id}"]`).forEach((el) => { el.textContent = String(n); });
    if (n <= 0) {
      $$(`[data-grab="${id}"]`).forEach((b) => { b.disabled = true; b.textContent = "Sold out"; });
    }
  }

  async function grab(btn) {
    const id = btn.dataset.grab;
    const out = document.querySelector(`[data-testid="grab-result-${id}"]`);
    btn.disabled = true;
    const headers = Object.assign({ "Accept": "application/json", "X-Request-ID": requestID() }, S.csrfHeaders("POST"));
    const opts = { method: "POST", headers, credentials: "same-origin" };
    let status = 0, body = null;
    try {
      const res = await fetch(`/api/coupons/${id}/grab`, opts);
      status = res.status;
      body = await res.json();
    } catch (e) { body = null; }
    if (status === 201) {
      const uc = body.user_coupon;
      out.className = "grab-result ok";
      out.innerHTML = "";
      out.append(`Got it! Valid until ${localTime(uc.valid_until)}. `);
      const a = document.createElement("a");
      a.href = "/me/coupons"; a.textContent = "See my coupons"; a.dataset.testid = "to-my-coupons";
      out.append(a);
      btn.disabled = false;
      return;
    }
    out.className = "grab-result error";
    out.textContent = (body && body.error && body.error.message) || "Something went wrong; try again.";
    const code = body && body.error && body.error.code;
    if (code === "sold_out") setRemaining(id, 0);
    else if (code !== "ended") btn.disabled = false;
  }

  function renderReminders(id, reminders) {
    const ul = document.querySelector(`[data-reminders="${id}"]`);
    if (!ul) return;
    ul.innerHTML = "";
    reminders.forEach((r) => {
      const li = document.createElement("li");
      li.dataset.testid = `reminder-${id}-${r.minutes_before}-${r.channel}`;
      const t = document.createElement("time");
      t.setAttribute("datetime", r.remind_at);
      t.textContent = localTime(r.remind_at);
      li.append(`${r.minutes_before} min before · ${channelLabels[r.channel] || r.channel} · at `, t);
      ul.append(li);
    });
  }

  async function toggleReminder(box) {
    const id = box.dataset.remind, minutes = Number(box.dataset.minutes), channel = box.dataset.channel;
    const errEl = document.querySelector(`[data-testid="picker-error-${id}"]`);
    box.disabled = true;
    const r = box.checked
      ? await S.api("PUT", `/api/coupons/${id}/reminders`, { minutes_before: minutes, channel })
      : await S.api("DELETE", `/api/coupons/${id}/reminders?minutes_before=${minutes}&channel=${encodeURIComponent(channel)}`);
    box.disabled = false;
    if (r.ok) {
      errEl.textContent = "";
      renderReminders(id, r.body.reminders);
      return;
    }
    box.checked = !box.checked;
    errEl.textContent = (r.body && r.body.error && r.body.error.message) || "Could not change the reminder.";
    if (r.body && r.body.error && (r.body.error.code === "too_late" || r.body.error.code === "not_configured")) {
      box.disabled = true;
      box.title = r.body.error.message;
    }
  }

  function initCentre() {
    $$("[data-coupon]").forEach((card) => S.live.subscribe("coupon:" + card.dataset.coupon));
    S.live.on("coupon", (ev) => setRemaining(ev.coupon_id, ev.remaining));
    $$("[data-grab]").forEach((b) => b.addEventListener("click", () => grab(b)));
    $$("[data-remind]").forEach((box) => box.addEventListener("change", () => toggleReminder(box)));
    // When an upcoming window opens, its Grab button comes alive.
    document.addEventListener("countdown-done", (e) => {
      const id = e.target.dataset && e.target.dataset.opens;
      if (!id) return;
      const card = document.querySelector(`[data-coupon="${id}"]`);
      const badge = document.querySelector(`[data-testid="coupon-state-${id}"]`);
      if (badge) { badge.textContent = "live"; badge.className = "badge live"; }
      if (card) card.dataset.state = "live";
      $$(`[data-grab="${id}"]`).forEach((b) => { if (b.textContent.trim() !== "Sold out") b.disabled = false; });
      $$(`[data-remind="${id}"]`).forEach((box) => { box.disabled = true; });
    });
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
      span.textContent = n.message;
      const t = document.createElement("time");
      t.setAttribute("datetime", n.created_at);
      t.textContent = localTime(n.created_at);
      li.append(span);
      if (n.goods_id) { const a = document.createElement("a"); a.href = `/goods/${n.goods_id}`; a.textContent = "See the goods"; a.dataset.testid = `notification-goods-${n.id}`; li.append(" ", a); }
      li.append(t);
      list.prepend(li);
      const empty = document.querySelector('[data-testid="no-notifications"]');
      if (empty) empty.hidden = true;
    });
    $$("[data-mark-read]").forEach((btn) => btn.addEventListener("click", async () => {
      const r = await S.api("POST", "/api/me/notifications/read");
      if (!r.ok) return;
      $$("li.unread", list).forEach((li) => li.classList.remove("unread"));
      document.dispatchEvent(new CustomEvent("seckill:inbox-read"));
    }));
  }

  // --- merchant forms ---
  function pad(n) { return String(n).padStart(2, "0"); }
  function toLocalInput(iso) {
    const d = new Date(iso);
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }
  function initMerchant() {
    $$("[data-tz-offset]").forEach((el) => { el.value = String(new Date().getTimezoneOffset()); });
    $$("[data-local-value]").forEach((el) => { el.value = toLocalInput(el.dataset.localValue); });
    const form = document.querySelector("[data-coupon-form]");
    if (!form) return;
    const kind = form.querySelector('[name="kind"]'), value = form.querySelector('[name="value"]');
    const hint = () => { value.placeholder = kind.value === "percent_off" ? "1–99 (%)" : "10.00 (¥)"; };
    kind.addEventListener("change", hint);
    hint();
    // Inline checks before the server's: each message sits under its field.
    const rules = {
      title: (v) => v.trim() ? "" : "title must be 1–100 characters",
      value: (v) => kind.value === "percent_off"
        ? (/^\d+$/.test(v) && +v >= 1 && +v <= 99 ? "" : "a percentage off must be 1–99")
        : (/^\d+(\.\d{1,2})?$/.test(v) && +v > 0 ? "" : "enter an amount like 10 or 9.90"),
      stock: (v) => /^\d+$/.test(v) && +v >= 1 && +v <= 10000000 ? "" : "stock must be 1–10,000,000",
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
        b.textContent = uc.status;
      });
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    localiseTimes(document);
    initMine();
    initCentre();
    initCancel();
    initInbox();
    initMerchant();
  });
})();
