// "Remind me" for coupons and seckill goods alike (views/remind_picker.templ):
// each checkbox of the grid books or cancels one reminder through its item's
// API (data-remind-path), and the item's list of reminders is redrawn from
// the answer; lead times that pass while the page is open are disabled.
(function () {
  "use strict";
  const S = window.seckill;
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const channelLabels = { app: "In app", email: "Email", webhook: "Webhook", sms: "SMS", wechat: "WeChat" };

  function renderReminders(key, reminders) {
    const ul = document.querySelector(`[data-reminders-key="${key}"]`);
    if (!ul) return;
    ul.innerHTML = "";
    reminders.forEach((r) => {
      const li = document.createElement("li");
      li.dataset.testid = `${ul.dataset.reminderPrefix}-${r.minutes_before}-${r.channel}`;
      li.append(`${r.minutes_before} min before · ${channelLabels[r.channel] || r.channel} · at `, S.timeEl(r.remind_at));
      ul.append(li);
    });
    ul.dataset.booked = String(reminders.length);
  }

  async function toggle(box) {
    const key = box.dataset.remindKey, minutes = Number(box.dataset.minutes), channel = box.dataset.channel;
    const errEl = document.querySelector(`[data-picker-error="${key}"]`);
    box.disabled = true;
    const r = box.checked
      ? await S.api("PUT", box.dataset.remindPath, { minutes_before: minutes, channel })
      : await S.api("DELETE", `${box.dataset.remindPath}?minutes_before=${minutes}&channel=${encodeURIComponent(channel)}`);
    box.disabled = false;
    if (r.ok) {
      if (errEl) errEl.textContent = "";
      renderReminders(key, r.body.reminders);
      return;
    }
    box.checked = !box.checked;
    if (errEl) errEl.textContent = S.sentence(r.body && r.body.error && r.body.error.message) || "Could not change the reminder.";
    if (r.body && r.body.error && (r.body.error.code === "too_late" || r.body.error.code === "not_configured")) {
      box.disabled = true;
      box.title = r.body.error.message;
    }
  }

  // markLate disables the unbooked lead times whose remind time has passed.
  function markLate() {
    const now = Date.now();
    $$("input[data-remind-path]").forEach((box) => {
      const at = new Date(box.dataset.remindAt).getTime() - Number(box.dataset.minutes) * 60000;
      if (!box.checked && at <= now && !box.disabled) {
        box.disabled = true;
        box.title = "too late for this reminder";
      }
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    $$("input[data-remind-path]").forEach((box) => box.addEventListener("change", () => toggle(box)));
    markLate();
    setInterval(markLate, 15000);
  });
})();
