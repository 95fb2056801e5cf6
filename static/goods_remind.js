// "Remind me" for seckill goods (views/goods_remind.templ) beside the shared
// picker (static/remind_picker.js): the reminder when it arrives live, and
// cancelling goods reminders on My reminders.
(function () {
  "use strict";
  const S = window.seckill;
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

  // The goods page: booking is the shared picker's (static/remind_picker.js);
  // here the reminder is shown when it arrives live, and the box goes once
  // the sale starts.
  function initGoodsPage(box) {
    const id = box.dataset.goodsRemind;
    const arrived = box.querySelector("[data-remind-arrived]");
    if (arrived) {
      S.live.on("notification", (ev) => {
        const n = ev.notification;
        if (!n || n.kind !== "goods_reminder" || String(n.goods_id) !== id) return;
        arrived.textContent = T(n.message);
        arrived.hidden = false;
      });
    }
    // goods.js announces each change of the goods' sale state (the start,
    // whichever path noticed it first): past upcoming, nothing is left to remind of.
    document.addEventListener("grab-state", (e) => {
      if (String(e.detail.id) === id && e.detail.state !== "upcoming") box.hidden = true;
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
