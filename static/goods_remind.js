// "Remind me" for seckill goods (views/goods_remind.templ): book a reminder
// before an upcoming sale, list and cancel the booked ones, show the reminder
// when it arrives live; and cancelling goods reminders on My reminders.
(function () {
  "use strict";
  const S = window.seckill;
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

  // One date format on every page: app.js's ("1 Dec 2026, 14:05").
  const localTime = (iso) => S.formatTime(iso);
  function errorOf(r, fallback) {
    return (r.body && r.body.error && r.body.error.message) || fallback;
  }
  function say(el, text) {
    el.textContent = text;
    el.hidden = text === "";
  }

  function initGoodsPage(box) {
    const id = box.dataset.goodsRemind;
    const form = box.querySelector("[data-goods-remind-form]");
    if (!form) return; // logged out
    const list = box.querySelector("[data-remind-list]");
    const err = box.querySelector("[data-remind-error]");
    const arrived = box.querySelector("[data-remind-arrived]");
    const start = new Date(box.dataset.start).getTime();

    // Lead times whose reminder time has passed cannot be booked any more.
    function markLate() {
      const now = Date.now();
      $$("option", form).forEach((o) => { o.disabled = start - Number(o.value) * 60000 <= now; });
      const sel = form.elements.minutes_before;
      if (sel.selectedOptions[0] && sel.selectedOptions[0].disabled) {
        const ok = $$("option", form).find((o) => !o.disabled);
        if (ok) sel.value = ok.value;
      }
      form.querySelector("button").disabled = !$$("option", form).some((o) => !o.disabled);
    }

    function render(reminders) {
      list.innerHTML = "";
      reminders.forEach((r) => {
        const li = document.createElement("li");
        li.dataset.testid = `goods-reminder-${r.minutes_before}-${r.channel}`;
        const t = document.createElement("time");
        t.setAttribute("datetime", r.remind_at);
        t.textContent = localTime(r.remind_at);
        const cancel = document.createElement("button");
        cancel.type = "button";
        cancel.className = "small secondary";
        cancel.textContent = "Cancel";
        cancel.dataset.testid = `cancel-goods-reminder-${r.minutes_before}-${r.channel}`;
        cancel.addEventListener("click", async () => {
          cancel.disabled = true;
          const res = await S.api("DELETE", `/api/goods/${id}/reminders?minutes_before=${r.minutes_before}&channel=${encodeURIComponent(r.channel)}`);
          if (res.ok) { say(err, ""); render(res.body.reminders); } else { cancel.disabled = false; say(err, errorOf(res, "Could not cancel the reminder.")); }
        });
        li.append(`${r.minutes_before} min before, in the app, at `, t, " ", cancel);
        list.append(li);
      });
      box.dataset.booked = String(reminders.length);
    }

    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const btn = form.querySelector("button");
      btn.disabled = true;
      const res = await S.api("PUT", `/api/goods/${id}/reminders`,
        { minutes_before: Number(form.elements.minutes_before.value), channel: form.elements.channel.value });
      btn.disabled = false;
      if (res.ok) { say(err, ""); render(res.body.reminders); } else { say(err, errorOf(res, "Could not book the reminder.")); }
      markLate();
    });

    S.live.on("notification", (ev) => {
      const n = ev.notification;
      if (!n || n.kind !== "goods_reminder" || String(n.goods_id) !== id) return;
      arrived.textContent = n.message;
      arrived.hidden = false;
    });
    // goods.js announces each change of the goods' sale state (the start,
    // whichever path noticed it first): past upcoming, nothing is left to remind of.
    document.addEventListener("grab-state", (e) => {
      if (String(e.detail.id) === id && e.detail.state !== "upcoming") box.hidden = true;
    });

    markLate();
    setInterval(markLate, 15000);
    S.api("GET", `/api/goods/${id}/reminders`).then((res) => {
      if (res.ok) render(res.body.reminders);
      box.dataset.ready = "1";
    });
  }

  function initMyReminders() {
    $$("[data-cancel-goods-reminder]").forEach((btn) => btn.addEventListener("click", async () => {
      btn.disabled = true;
      const r = await S.api("DELETE", `/api/goods/${btn.dataset.cancelGoodsReminder}/reminders?minutes_before=${btn.dataset.minutes}&channel=${encodeURIComponent(btn.dataset.channel)}`);
      if (r.ok) btn.closest("tr").remove();
      else btn.disabled = false;
    }));
  }

  document.addEventListener("DOMContentLoaded", () => {
    $$("[data-goods-remind]").forEach(initGoodsPage);
    initMyReminders();
  });
})();
