// The unread badge in the navigation: counted by the server, refreshed when
// a notification arrives live and whenever the live socket reconnects.
(function () {
  "use strict";
  const S = window.seckill;
  let unread = 0;

  function show() {
    document.querySelectorAll("[data-unread-badge]").forEach((el) => {
      el.textContent = String(unread);
      el.hidden = unread === 0;
      el.style.display = unread === 0 ? "none" : ""; // .badge's display would override [hidden]
    });
  }

  // A count asked for before the inbox was read must not bring the badge back.
  let readEpoch = 0;
  async function refresh() {
    const epoch = readEpoch;
    const r = await S.api("GET", "/api/me/notifications/unread");
    if (r.ok && r.body && epoch === readEpoch) { unread = r.body.unread; show(); }
    document.documentElement.dataset.unreadChecked = String(Number(document.documentElement.dataset.unreadChecked || 0) + 1);
  }

  S.live.on("notification", (ev) => {
    document.dispatchEvent(new CustomEvent("seckill:notification", { detail: ev.notification }));
    refresh();
  });
  document.addEventListener("seckill:inbox-read", () => { readEpoch++; unread = 0; show(); });
  document.addEventListener("DOMContentLoaded", () => {
    refresh();
    // A dropped socket may have missed events: count again when it is back.
    new MutationObserver(() => {
      if (document.documentElement.dataset.live === "on") refresh();
    }).observe(document.documentElement, { attributes: true, attributeFilter: ["data-live"] });
  });
})();
