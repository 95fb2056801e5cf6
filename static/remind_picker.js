// "Remind me" for coupons and seckill goods alike (views/remind_picker.templ):
// the button books the chosen lead time on each chosen channel through the
// item's API (data-remind-path), a reminder's Cancel deletes it, and the
// item's list of reminders is redrawn from the answer; lead times that pass
// while the page is open leave the list (the picker says so when none is left).
(function () {
  "use strict";
  const S = window.seckill;
  const T = window.T || ((s) => s);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const channelLabels = { app: "In app", email: "Email", webhook: "Webhook", sms: "SMS", wechat: "WeChat" };

  function setError(picker, text) {
    const errEl = document.querySelector(`[data-picker-error="${picker.dataset.remindKey}"]`);
    if (errEl) errEl.textContent = text || "";
  }

  function renderReminders(picker, reminders) {
    const key = picker.dataset.remindKey;
    const ul = document.querySelector(`[data-reminders-key="${key}"]`);
    if (!ul) return;
    ul.innerHTML = "";
    reminders.forEach((r) => {
      const li = document.createElement("li");
      li.dataset.testid = `${ul.dataset.reminderPrefix}-${r.minutes_before}-${r.channel}`;
      const text = document.createElement("span");
      text.append(`${T("%d min before", r.minutes_before)} · ${T(channelLabels[r.channel] || r.channel)} · ${T("at")} `, S.timeEl(r.remind_at));
      const cancel = document.createElement("button");
      cancel.type = "button";
      cancel.className = "small secondary";
      cancel.dataset.remindCancel = "";
      cancel.dataset.minutes = String(r.minutes_before);
      cancel.dataset.channel = r.channel;
      cancel.dataset.testid = `${ul.dataset.reminderPrefix}-cancel-${r.minutes_before}-${r.channel}`.replace(/reminder-(\d+)-cancel-/, "reminder-cancel-$1-");
      cancel.textContent = T("Cancel");
      li.append(text, cancel);
      ul.append(li);
    });
    ul.dataset.booked = String(reminders.length);
    const box = document.querySelector(`[data-booked="${key}"]`);
    if (box) box.hidden = reminders.length === 0;
  }

  function failed(picker, r) {
    setError(picker, S.sentence(r.body && r.body.error && r.body.error.message) || T("Could not change the reminder."));
  }

  async function book(picker, btn) {
    const lead = picker.querySelector("[data-remind-lead]");
    const channels = $$("[data-remind-channel]", picker).filter((c) => c.checked).map((c) => c.dataset.remindChannel);
    if (!lead || !lead.value) return;
    if (channels.length === 0) { setError(picker, T("Choose at least one channel.")); return; }
    btn.disabled = true;
    let last = null;
    for (const channel of channels) {
      const r = await S.api("PUT", picker.dataset.remindPath, { minutes_before: Number(lead.value), channel });
      if (!r.ok) { failed(picker, r); btn.disabled = false; if (last) renderReminders(picker, last); markLate(); return; }
      last = r.body.reminders;
    }
    btn.disabled = false;
    setError(picker, "");
    renderReminders(picker, last);
  }

  async function cancel(picker, btn) {
    btn.disabled = true;
    const r = await S.api("DELETE", `${picker.dataset.remindPath}?minutes_before=${btn.dataset.minutes}&channel=${encodeURIComponent(btn.dataset.channel)}`);
    btn.disabled = false;
    if (!r.ok) { failed(picker, r); return; }
    setError(picker, "");
    renderReminders(picker, r.body.reminders);
  }

  // markLate takes out of the list the lead times whose remind time has
  // passed, and the whole form when none is left.
  function markLate() {
    const now = Date.now();
    $$("details[data-remind-path]").forEach((picker) => {
      const lead = picker.querySelector("[data-remind-lead]");
      if (!lead) return;
      const start = new Date(picker.dataset.remindAt).getTime();
      $$("option", lead).forEach((o) => { if (start - Number(o.value) * 60000 <= now) o.remove(); });
      if (lead.options.length === 0) closePicker(picker);
    });
  }

  // closePicker says no reminder can be set any more (the item opened, or
  // every lead time passed).
  function closePicker(picker) {
    const form = picker.querySelector(".picker-form");
    if (!form) return;
    const p = document.createElement("p");
    p.className = "muted";
    p.textContent = T("No reminder can be set any more: it opens too soon.");
    form.replaceWith(p);
  }

  // fetchOwn lists the reader's reminders of the item on a page made once
  // for every shopper (it holds none of theirs); the section it sits in is
  // then marked data-ready="1".
  async function fetchOwn(picker) {
    const r = await S.api("GET", picker.dataset.remindPath);
    if (r.ok) {
      renderReminders(picker, r.body.reminders);
      if (r.body.reminders.length) picker.open = true;
    }
    const sec = picker.closest("[data-ready]");
    if (sec) sec.dataset.ready = "1";
  }

  document.addEventListener("DOMContentLoaded", () => {
    $$("details[data-remind-path]").forEach((picker) => {
      const btn = picker.querySelector("[data-remind-book]");
      if (btn) btn.addEventListener("click", () => book(picker, btn));
      const key = picker.dataset.remindKey;
      const ul = document.querySelector(`[data-reminders-key="${key}"]`);
      if (ul) ul.addEventListener("click", (e) => {
        const b = e.target.closest("[data-remind-cancel]");
        if (b) cancel(picker, b);
      });
      picker.addEventListener("picker-close", () => closePicker(picker));
      if (picker.hasAttribute("data-fetch-own")) fetchOwn(picker);
    });
    markLate();
    setInterval(markLate, 15000);
  });
})();
