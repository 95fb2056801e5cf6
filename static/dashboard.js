// The merchant dashboard (/admin): each live or upcoming slot's totals move
// without a reload. A grab, cancel, expiry or refund moves stock, which the
// slot's public topic carries; a payment moves no stock, and arrives as the
// once-a-second chart sample the hub sends to the merchant's (and admins')
// sockets. Either way the slot's figures are read again from the API.
(function () {
  "use strict";
  const S = window.seckill;
  const rows = {}; // slot ID → its row
  const slotOf = {}; // goods ID → slot ID, learnt from the stats answers
  const seen = {}; // goods ID → "unpaid/paid" of its last sample
  document.querySelectorAll("[data-dashboard-slot]").forEach((tr) => {
    rows[tr.dataset.dashboardSlot] = tr;
    S.live.subscribe("slot:" + tr.dataset.dashboardSlot);
  });
  if (!Object.keys(rows).length) return;

  // One read of a slot at a time; changes meanwhile ask for one more.
  const busy = {}, again = {};
  async function refresh(id) {
    if (busy[id]) { again[id] = true; return; }
    busy[id] = true;
    try {
      const r = await S.api("GET", `/api/admin/slots/${id}/stats`);
      if (r.ok) show(id, r.body);
    } finally {
      busy[id] = false;
      if (again[id]) { again[id] = false; refresh(id); }
    }
  }
  function show(id, body) {
    (body.goods || []).forEach((g) => { slotOf[g.id] = id; });
    const row = rows[id], t = body.totals || {};
    row.querySelectorAll("[data-total]").forEach((cell) => {
      const k = cell.dataset.total;
      if (!(k in t)) return;
      cell.textContent = k.endsWith("_cents") ? S.money(t[k]) : String(t[k]);
    });
    row.dataset.live = "on"; // tests wait for it
  }

  // After (re)subscribing, read the figures once: nothing before is missed.
  S.live.on("subscribed", (ev) => {
    const [kind, id] = String(ev.topic).split(":");
    if (kind === "slot" && rows[id]) refresh(id);
  });
  S.live.on("stock", (ev) => {
    const id = slotOf[ev.goods_id];
    if (id) refresh(id);
    else Object.keys(rows).forEach(refresh); // a goods added since the page was drawn
  });
  S.live.on("sample", (ev) => {
    const s = ev.sample || {}, id = slotOf[s.goods_id];
    const mark = s.unpaid + "/" + s.paid;
    if (!id || seen[s.goods_id] === mark) return;
    seen[s.goods_id] = mark;
    refresh(id);
  });
})();
