// Seckill goods pages: live stock bars, the Grab button, My orders (pay,
// cancel, live status), the merchant's live sales dashboard and
// reconciliation view, and inline validation of the admin forms.
(function () {
  "use strict";
  const S = window.seckill;
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

  // The texts below are English: T puts each in the page's language where it is shown.
  const LABELS = { unpaid: "Awaiting payment", paid: "Paid", expired: "Expired", cancelled: "Cancelled", failed: "Failed", refunded: "Refunded" };
  // Why the durable unit guard failed an order (its "failure" field).
  const FAILURES = { sold_twice: "Failed: sold twice, nothing charged", refund_due: "Failed: sold twice, refund due" };
  const GRAB_ERRORS = {
    sold_out: "Sold out: every unit has been grabbed.",
    limit_reached: "You already hold as many of these as one customer may.",
    not_started: "The sale has not started yet.",
    ended: "The sale has ended.",
    unauthorized: "Please log in to grab.",
    rate_limited: "Too many tries. Wait a moment and try again.",
    pow_invalid: "The check took too long or was used already. Try again.",
  };

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, v));
    children.forEach((c) => e.append(c));
    return e;
  }

  // ---- Live stock bars -------------------------------------------------
  function showStock(goodsID, remaining) {
    $$(`[data-stock-for="${goodsID}"]`).forEach((box) => {
      const total = Number(box.dataset.stockTotal) || 1;
      const pct = Math.max(0, Math.min(100, Math.floor((remaining * 100) / total)));
      box.querySelector("[data-remaining]").textContent = remaining;
      box.querySelector("[data-bar]").style.width = pct + "%";
    });
    // A raffle's "N left after the draw" line counts down with the stock.
    $$(`[data-left-after-draw="${goodsID}"]`).forEach((n) => { n.textContent = remaining; });
    if (goodsRec[goodsID]) {
      goodsRec[goodsID].remaining = Number(remaining);
      showGrabState(String(goodsID));
    }
  }
  const stockEvents = {}; // goods ID → live stock events shown
  const stockVersions = {}; // goods ID → newest stock version shown
  S.live.on("stock", (ev) => {
    // Events of one goods may arrive out of order (two web processes send
    // them); the version (Redis's clock at the change) says which is newer.
    if (ev.version && ev.version < (stockVersions[ev.goods_id] || 0)) return;
    if (ev.version) stockVersions[ev.goods_id] = ev.version;
    stockEvents[ev.goods_id] = (stockEvents[ev.goods_id] || 0) + 1;
    showStock(ev.goods_id, ev.remaining);
  });

  // catchUp shows the figures the API answers, except for goods whose live
  // event arrived meanwhile: the answer may have been read before that change.
  async function catchUp(path, goodsOf) {
    const before = Object.assign({}, stockEvents);
    const r = await S.api("GET", path);
    if (!r.ok) return false;
    goodsOf(r.body).forEach((g) => {
      if ((stockEvents[g.id] || 0) === (before[g.id] || 0)) showStock(g.id, g.remaining);
    });
    return true;
  }

  // Every page section names its live topic. After (re)subscribing, fetch the
  // current figures once, so nothing that happened before is missed; then the
  // section is marked data-subscribed="on" (tests wait for it).
  $$("[data-live-topic]").forEach((sec) => S.live.subscribe(sec.dataset.liveTopic));
  S.live.on("subscribed", async (ev) => {
    const [kind, id] = String(ev.topic).split(":");
    let ok = false;
    if (kind === "goods") ok = await catchUp(`/api/goods/${id}`, (b) => [b.goods]);
    else if (kind === "slot") ok = await catchUp(`/api/slots/${id}/goods`, (b) => b.goods);
    if (ok) $$(`[data-live-topic="${ev.topic}"]`).forEach((sec) => { sec.dataset.subscribed = "on"; });
  });

  // ---- Grab state ------------------------------------------------------
  // Each goods on the page (the goods page's grab box, the slot page's
  // cards) is one record; every path that learns something (the render, a
  // stock event, a grab answer, an order event, the start or end timer)
  // changes the record and calls showGrabState, the one place that decides
  // the state (as views.GrabState does on the server) and draws it.
  const goodsRec = {}; // goods ID → {start, end, limit, held, remaining, price, ended}
  $$("[data-goods-state]").forEach((box) => {
    const id = box.dataset.goodsState;
    goodsRec[id] = goodsRec[id] || {
      start: new Date(box.dataset.start).getTime(),
      end: new Date(box.dataset.end).getTime(),
      limit: Number(box.dataset.limit) || 0,
      held: Number(box.dataset.held) || 0,
      remaining: Number(box.dataset.remaining),
      price: Number(box.dataset.price) || 0,
      ended: box.dataset.state === "ended",
    };
  });

  // An admin's steering switch may pause every sale: the page says so and
  // holds the Grab buttons until it is lifted (the live "sale_paused"
  // event, which each socket also gets when it opens).
  let salePaused = document.documentElement.hasAttribute("data-sale-paused");
  function grabState(g) {
    const now = Date.now();
    if (g.ended || now >= g.end) return "ended";
    if (now < g.start) return "upcoming";
    if (g.remaining <= 0) return "sold_out";
    if (g.limit > 0 && g.held >= g.limit) return "limit_reached";
    if (salePaused) return "paused";
    return "live";
  }
  const BADGES = { upcoming: "Soon", live: "Live", sold_out: "Sold out", limit_reached: "Limit reached", ended: "Ended", paused: "Paused" };
  // The sale's state in words (the goods page and the front page's cards), as views.homeStateText.
  const STATE_TEXT = { upcoming: "Upcoming", live: "On sale", limit_reached: "On sale", sold_out: "Sold out", ended: "Ended", paused: "Paused" };

  function countdownEl(until, testid) {
    const attrs = { class: "countdown", "data-countdown": new Date(until).toISOString() };
    if (testid) attrs["data-testid"] = testid;
    return el("span", attrs, S.countdown(until));
  }
  function saleStateLine(st, g) {
    switch (st) {
      case "upcoming": return [T("Starts in") + " ", countdownEl(g.start, "start-countdown"), " · ", S.timeEl(new Date(g.start).toISOString())];
      case "sold_out": return [T("Sold out: every unit has been grabbed.")];
      case "ended": return [T("This sale has ended.")];
      case "limit_reached": return [T("On sale now, ends in") + " ", countdownEl(g.end), T(". You hold %d of %d, the limit per customer.", g.held, g.limit)];
      case "paused": return [T("The sale is paused for a moment. Grabbing opens again shortly; this page shows it at once.")];
    }
    return [T("On sale now, ends in") + " ", countdownEl(g.end)];
  }
  function grabLabel(st, g) {
    const label = { sold_out: "Sold out", limit_reached: "Limit reached", ended: "Sale ended", paused: "Paused" }[st];
    return label ? T(label) : T("Grab for %s", S.money(g.price));
  }

  let grabbing = false; // a grab in flight keeps the button disabled
  function showGrabState(id) {
    const g = goodsRec[id];
    if (!g) return;
    const st = grabState(g);
    $$(`[data-goods-state="${id}"]`).forEach((box) => {
      const changed = box.dataset.state !== st || box.dataset.held !== String(g.held);
      const moved = box.dataset.state !== st;
      box.dataset.state = st;
      box.dataset.held = String(g.held);
      if (moved) box.dispatchEvent(new CustomEvent("grab-state", { bubbles: true, detail: { id, state: st } }));
      const line = box.querySelector("[data-sale-state]");
      if (line && (changed || !line.dataset.drawn)) {
        line.dataset.drawn = "1";
        line.replaceChildren(...saleStateLine(st, g));
      }
      const badge = box.querySelector("[data-state-badge]");
      if (badge) { badge.className = "badge " + st; badge.textContent = T(BADGES[st]); }
      $$("[data-state-text]", box).forEach((t) => { t.className = "badge " + st; t.textContent = T(STATE_TEXT[st]); });
      const btn = box.querySelector("[data-grab]");
      if (btn) {
        btn.textContent = grabLabel(st, g);
        btn.disabled = st !== "live" || grabbing;
      }
    });
  }
  function showAllGrabStates() { Object.keys(goodsRec).forEach(showGrabState); }
  showAllGrabStates();
  // A socket opened while the sale is paused is told so before anything
  // else; one that opens without it finds the sale running (it may have
  // resumed while the socket was down).
  S.live.onOpen(() => {
    if (!salePaused) return;
    salePaused = false;
    document.documentElement.removeAttribute("data-sale-paused");
    showAllGrabStates();
  });
  S.live.on("sale_paused", (ev) => {
    salePaused = !!ev.paused;
    document.documentElement.toggleAttribute("data-sale-paused", salePaused);
    showAllGrabStates();
  });
  // The start and the end: a countdown inside a goods' box fires when due.
  document.addEventListener("countdown-done", (e) => {
    const box = e.target.closest && e.target.closest("[data-goods-state]");
    if (box) showGrabState(box.dataset.goodsState);
  });
  // Not every state shows a countdown (a sold-out goods still ends, a
  // slot card has none): each second, a goods whose state the clock has
  // changed is drawn again.
  if (Object.keys(goodsRec).length) {
    setInterval(() => Object.keys(goodsRec).forEach((id) => {
      const st = grabState(goodsRec[id]);
      if ($$(`[data-goods-state="${id}"]`).some((box) => box.dataset.state !== st)) showGrabState(id);
    }), 1000);
  }

  // ---- Slot headers (the front page) -----------------------------------
  // "coming up · starts in", "on sale now · ends in", "ended": turned over
  // by the clock, each second as the cards below them are.
  const SLOT_BADGES = { upcoming: "Coming up", live: "On sale now", ended: "Ended" };
  function showSlotWhen(box) {
    const now = Date.now();
    const st = now >= Date.parse(box.dataset.end) ? "ended" : now >= Date.parse(box.dataset.start) ? "live" : "upcoming";
    if (box.dataset.state === st) return;
    box.dataset.state = st;
    const badge = box.querySelector("[data-slot-badge]");
    badge.className = "badge " + st;
    badge.textContent = T(SLOT_BADGES[st]);
    const line = box.querySelector("[data-slot-line]");
    const until = st === "live" ? box.dataset.end : box.dataset.start;
    line.replaceChildren(...(st === "ended" ? [] : [T(st === "live" ? "ends in" : "starts in") + " ",
      el("span", { class: "countdown", "data-countdown": until }, S.countdown(until))]));
  }
  const slotHeads = $$("[data-slot-when]");
  if (slotHeads.length) {
    slotHeads.forEach(showSlotWhen);
    setInterval(() => slotHeads.forEach(showSlotWhen), 1000);
  }

  // The shopper's live orders of each goods: what the limit counts.
  const orderStatus = {}; // order ID → [goods ID, status]
  $$("[data-goods-order]").forEach((li) => {
    const box = li.closest("[data-testid=goods-page]");
    const gs = box && box.querySelector("[data-goods-state]");
    if (gs) orderStatus[li.dataset.goodsOrder] = [gs.dataset.goodsState, li.dataset.status];
  });
  const holds = (status) => status === "unpaid" || status === "paid";
  function noteOrder(o) {
    const gid = String(o.goods_id), g = goodsRec[gid];
    if (!g) return;
    const before = orderStatus[o.id];
    if (before) {
      if (holds(before[1]) && !holds(o.status)) g.held = Math.max(0, g.held - 1);
      else if (!holds(before[1]) && holds(o.status)) g.held += 1;
    } else if (holds(o.status)) {
      g.held += 1;
    }
    orderStatus[o.id] = [gid, o.status];
    showGrabState(gid);
  }

  // listGoodsOrder adds an order of the goods page's goods to "Your orders
  // of this item" (and shows the list).
  function listGoodsOrder(o) {
    const ul = document.querySelector("[data-testid=my-goods-orders]");
    const page = ul && ul.closest("[data-testid=goods-page]");
    const gs = page && page.querySelector("[data-goods-state]");
    if (!gs || String(o.goods_id) !== gs.dataset.goodsState || ul.querySelector(`[data-goods-order="${o.id}"]`)) return;
    ul.append(el("li", { "data-goods-order": o.id, "data-status": o.status }, T("Order %s:", "#" + S.orderNumber(o.id)) + " ",
      el("span", { class: "badge " + o.status, "data-order-status": o.id }, T(FAILURES[o.failure] || LABELS[o.status] || o.status))));
    const box = ul.closest("[data-my-goods-orders]");
    if (box) box.hidden = false;
  }

  const grabBtn = document.querySelector("[data-grab]");
  const grabOut = document.querySelector("[data-testid=grab-result]");
  if (grabBtn) {
    const id = grabBtn.dataset.grab;
    grabBtn.addEventListener("click", async () => {
      grabbing = true;
      showGrabState(id);
      grabOut.className = "grab-result pending";
      grabOut.textContent = T("Grabbing…");
      let r;
      try {
        // Goods that ask a proof of work: solve it first (static/pow.js).
        let headers;
        if (Number(grabBtn.dataset.pow) > 0 && window.seckillPow) {
          grabOut.textContent = T("Checking you are not a bot…");
          const pow = await window.seckillPow.header(id);
          if (pow) headers = { "X-Pow": pow };
          grabOut.textContent = T("Grabbing…");
        }
        r = await S.api("POST", `/api/goods/${id}/grab`, undefined, headers);
      } catch (e) {
        r = { status: 0, body: null };
      }
      grabbing = false;
      grabOut.textContent = "";
      const g = goodsRec[id];
      if (r.status === 201) {
        const o = r.body.order;
        grabOut.className = "grab-result ok";
        grabOut.append(
          el("strong", { "data-testid": "grab-success" }, T("You got it!") + " "),
          T("Order %s for %s. Pay within", "#" + S.orderNumber(o.id), S.money(o.amount_cents)) + " ",
          countdownEl(o.expires_at),
          " — ",
          el("a", { href: `/orders/${o.id}/checkout`, "data-testid": "grab-pay-link" }, T("pay now")),
        );
        noteOrder(o);
        listGoodsOrder(o);
        return;
      }
      const code = (r.body && r.body.error && r.body.error.code) || "";
      grabOut.className = "grab-result bad";
      grabOut.append(el("span", { "data-testid": "grab-error", "data-code": code },
        T(GRAB_ERRORS[code] || "") || S.sentence(r.body && r.body.error && r.body.error.message) || T("Something went wrong. Try again.")));
      if (g && code === "sold_out") g.remaining = 0;
      else if (g && code === "limit_reached") g.held = Math.max(g.held, g.limit);
      else if (g && code === "ended") g.ended = true;
      showGrabState(id);
    });
  }

  // A raffle's units left after the draw went on sale first come: the goods
  // page is drawn again with its Grab button (once, a moment apart across
  // the crowd, so they do not all ask at once).
  S.live.on("raffle_leftovers", (ev) => {
    const page = document.querySelector(`[data-testid=goods-page][data-live-topic="goods:${ev.goods_id}"]`);
    if (!page || page.querySelector("[data-testid=raffle-leftovers]") || page.dataset.reloading) return;
    page.dataset.reloading = "1";
    setTimeout(() => location.reload(), 200 + Math.random() * 1300);
  });

  // The merchant ended or hid the sale: it is over for this page.
  S.live.on("goods_state", (ev) => {
    const page = document.querySelector(`[data-testid=goods-page][data-live-topic="goods:${ev.goods_id}"]`);
    if (!page) return;
    const g = goodsRec[String(ev.goods_id)];
    if (g) { g.ended = true; showGrabState(String(ev.goods_id)); }
    const state = page.querySelector("[data-testid=sale-state]");
    if (state) state.textContent = T(ev.state === "ended" ? "The sale has ended." : "This sale is no longer available.");
    if (grabBtn) { grabBtn.dataset.state = "ended"; grabBtn.disabled = true; }
    page.dispatchEvent(new CustomEvent("sale-ended", { bubbles: true, detail: ev }));
  });

  // ---- Orders ----------------------------------------------------------
  // The newest state of each order shown: an answer read before a live
  // event (My orders' catch-up) must not put an older state back.
  const shownAt = {};
  function showOrder(o) {
    const at = Date.parse(o.updated_at || "") || 0;
    if (at && shownAt[o.id] && at < shownAt[o.id]) return;
    if (at) shownAt[o.id] = at;
    $$(`[data-order-status="${o.id}"]`).forEach((b) => {
      b.className = "badge " + o.status;
      b.textContent = T(FAILURES[o.failure] || LABELS[o.status] || o.status);
    });
    const row = document.querySelector(`[data-order-row="${o.id}"]`);
    if (row && o.status !== "unpaid") {
      $$("[data-cancel-link],[data-countdown]", row).forEach((x) => x.remove());
    }
    if (!row && o.status === "unpaid" && document.querySelector("[data-testid=orders-page]")) {
      location.reload(); // an order made elsewhere: show it with its buttons
    }
  }
  S.live.on("order", (ev) => { showOrder(ev.order); noteOrder(ev.order); listGoodsOrder(ev.order); });

  // A page made once for every signed-in shopper holds none of the reader's
  // orders: they are read from the API once, what a live event changed
  // meanwhile kept, then <html data-own="loaded"> (tests wait for it).
  if (document.querySelector("meta[name=seckill-fetch-own]") && Object.keys(goodsRec).length) {
    (async () => {
      const r = await S.api("GET", "/api/me/orders");
      if (r.ok) {
        r.body.orders.forEach((o) => {
          const at = Date.parse(o.updated_at || "") || 0;
          if (at && shownAt[o.id] && at < shownAt[o.id]) return; // a live event told newer
          showOrder(o);
          noteOrder(o);
          listGoodsOrder(o);
        });
      }
      document.documentElement.dataset.own = "loaded";
    })();
  }

  // My orders catches up on changes made while its socket was not up.
  if (document.querySelector("[data-testid=orders-page]")) {
    S.live.onOpen(async () => {
      const r = await S.api("GET", "/api/me/orders");
      if (!r.ok) return;
      r.body.orders.filter((o) => document.querySelector(`[data-order-row="${o.id}"]`)).forEach(showOrder);
    });
  }

  // Cancel (and refund) are links to their confirm pages: nothing to do here.

  // ---- Merchant: live sales dashboard and reconciliation -------------
  // One fetch of a goods' stats at a time; events meanwhile ask for one more.
  const inFlight = {}, again = {};
  async function refreshStats(id, show) {
    if (inFlight[id]) { again[id] = true; return; }
    inFlight[id] = true;
    try {
      const r = await S.api("GET", `/api/admin/goods/${id}/stats`);
      if (r.ok) show(id, r.body);
    } finally {
      inFlight[id] = false;
      if (again[id]) { again[id] = false; refreshStats(id, show); }
    }
  }

  function showSales(id, st) {
    const row = document.querySelector(`[data-sales-for="${id}"]`);
    if (!row) return;
    const vals = { sold: st.unpaid + st.paid, remaining: st.remaining, unpaid: st.unpaid, paid: st.paid, expired: st.expired, revenue_cents: st.revenue_cents, discount_cents: st.discount_cents || 0, net_cents: st.net_cents || 0 };
    Object.entries(vals).forEach(([k, v]) => {
      const cell = row.querySelector(`[data-k="${k}"]`);
      if (cell) cell.textContent = cell.hasAttribute("data-money") ? S.money(v) : v;
    });
  }
  if (document.querySelector("[data-dashboard]")) {
    S.live.on("stock", (ev) => refreshStats(ev.goods_id, showSales));
    // A payment moves no stock: the merchant's chart sample says paid moved.
    const sampled = {};
    S.live.on("sample", (ev) => {
      const s = ev.sample || {}, mark = s.unpaid + "/" + s.paid;
      if (!document.querySelector(`[data-sales-for="${s.goods_id}"]`) || sampled[s.goods_id] === mark) return;
      sampled[s.goods_id] = mark;
      refreshStats(s.goods_id, showSales);
    });
  }

  function showReconcile(id, st) {
    const pairs = { remaining: [st.remaining, st.db.stock], unpaid: [st.unpaid, st.db.unpaid], paid: [st.paid, st.db.paid], expired: [st.expired, st.db.expired], cancelled: [st.cancelled, st.db.cancelled] };
    Object.entries(pairs).forEach(([k, [live, durable]]) => {
      const row = document.querySelector(`[data-row="${k}"]`);
      if (!row) return;
      row.querySelector("[data-side=redis]").textContent = live;
      row.querySelector("[data-side=db]").textContent = durable;
      const d = live - durable;
      row.querySelector("[data-side=diff]").textContent = d === 0 ? "" : (d > 0 ? "+" : "") + d;
      row.classList.toggle("drift", (st.drift || []).includes(k));
    });
    const c = document.querySelector("[data-row=conflicts]");
    if (c) {
      c.querySelector("[data-side=redis]").textContent = T("%d cancelled", st.failed);
      c.querySelector("[data-side=db]").textContent = st.db.conflicts;
      c.classList.toggle("drift", (st.drift || []).includes("conflicts"));
    }
    const sum = document.querySelector("[data-drift-summary]");
    if (sum) sum.textContent = st.drift && st.drift.length ? T("live and recorded differ: %s", st.drift.join(", ")) : T("live and recorded agree");
    const p = document.querySelector("[data-k=pending]");
    if (p) p.textContent = st.pending;
    const lag = document.querySelector("[data-k=durable_lag]");
    if (lag) lag.textContent = (st.durable_lag_ms / 1000).toFixed(1) + " s";
  }
  const rec = document.querySelector("[data-reconcile]");
  if (rec) {
    const id = rec.dataset.reconcile;
    S.live.on("stock", (ev) => { if (String(ev.goods_id) === id) refreshStats(id, showReconcile); });
    // The durable side changes with the flush, which sends no event: look again every 2 s.
    setInterval(() => { if (!document.hidden) refreshStats(id, showReconcile); }, 2000);
  }

  // ---- Admin forms: inline validation (static/app.js posts times as instants)
  function fieldError(form, name, msg) {
    const box = form.querySelector(`[data-error-for="${name}"]`);
    if (box) box.textContent = msg;
    const f = box && box.closest(".field");
    if (f) f.classList.toggle("invalid", !!msg);
  }
  function check(form) {
    let ok = true;
    $$("input[name],textarea[name]", form).forEach((inp) => {
      if (inp.type === "hidden") return;
      let msg = "";
      const v = inp.validity;
      if (v.valueMissing) msg = T("is required");
      else if (v.patternMismatch) msg = T("must be an amount like 49.99");
      else if (v.rangeUnderflow) msg = T("must be at least %s", inp.min);
      else if (v.rangeOverflow) msg = T("must be at most %s", inp.max);
      else if (v.stepMismatch || v.badInput) msg = T("must be a whole number");
      else if (v.tooLong) msg = T("is longer than %d characters", inp.maxLength);
      fieldError(form, inp.name, msg);
      if (msg) ok = false;
    });
    const start = form.querySelector("[name=start_at]"), end = form.querySelector("[name=end_at]");
    if (start && end && start.value && end.value && new Date(end.value) <= new Date(start.value)) {
      fieldError(form, "end_at", T("must be after the start"));
      ok = false;
    }
    return ok;
  }
  $$("form[data-validate]").forEach((form) => {
    form.addEventListener("input", (e) => { if (e.target.name) fieldError(form, e.target.name, ""); });
    form.addEventListener("submit", (e) => {
      if (!check(form)) { e.preventDefault(); return; }
      const start = form.querySelector("[name=start_at]");
      const tz = form.querySelector("[data-tz-offset]");
      if (tz) tz.value = String(start && start.value ? new Date(start.value).getTimezoneOffset() : new Date().getTimezoneOffset());
    });
  });
})();
