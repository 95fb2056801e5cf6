// Waiting rooms (goods in mode queue): the shopper's page (join, position,
// wait and progress live from ticket events, the Grab button at their turn,
// sent with the admission) and the merchant's live view of the room.
(function () {
  "use strict";
  const S = window.seckill;

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, v));
    children.forEach((c) => e.append(c));
    return e;
  }

  function etaText(secs) {
    if (secs <= 0) return T("any moment");
    if (secs < 60) return T("about %s s", secs);
    return T("about %s min %s s", Math.floor(secs / 60), secs % 60);
  }

  const ERRORS = {
    queue_closed: "The queue is closed: every unit has gone or the sale is over.",
    not_admitted: "Your turn has not come yet, or it has passed.",
    pow_required: "The check against bots did not run. Reload the page and try again.",
    pow_invalid: "The check took too long or was used already. Try again.",
    forbidden: "This sale is open only to shoppers who pre-registered.",
    sold_out: "Sold out: every unit has been grabbed.",
    limit_reached: "You already hold as many of these as one customer may.",
    rate_limited: "Too many tries. Wait a moment and try again.",
  };

  function errorText(r) {
    const e = (r.body && r.body.error) || {};
    return T(ERRORS[e.code] || "") || S.sentence(e.message) || T("Something went wrong. Try again.");
  }

  // ---- The shopper's waiting room ----------------------------------------
  const room = document.querySelector("[data-queue]");
  if (room) {
    const id = room.dataset.queue;
    const $ = (sel) => room.querySelector(sel);
    const out = $("[data-testid=grab-result]");
    const limit = Number(room.dataset.limit) || 0;
    let held = Number(room.dataset.held) || 0;
    let ticket = null, furthest = 0, version = 0, untilTimer = null;
    let joined = room.dataset.joined === "on"; // the server knew a ticket: there is one to read
    const full = () => limit > 0 && held >= limit;

    const STATES = { waiting: "Waiting", admitted: "Your turn", closed: "Closed", lapsed: "Your turn passed", none: "Not in the queue", won: "You got it" };
    const NEXT = {
      none: "Join the queue: everyone who joins before the sale starts gets a random place at the start; later shoppers queue behind in the order they arrive.",
      waiting: "Keep this page open: shoppers are let in a few at a time, and the Grab button lights up here when it is your turn.",
      admitted: "It is your turn: grab before your admission runs out.",
      lapsed: "Your turn passed unused. Join again to take a place at the back of the line.",
      closed: "The queue is closed: every unit has gone or the sale is over. If units come back, the queue opens again.",
      won: "You hold as many of these as one customer may. Your orders are in My orders.",
    };

    function showUntil() {
      const u = $("[data-queue-until]");
      if (!ticket || ticket.state !== "admitted" || !ticket.admitted_until) return;
      const left = Math.max(0, Math.round((Date.parse(ticket.admitted_until) - Date.now()) / 1000));
      u.textContent = left >= 60 ? T("%s min %s s", Math.floor(left / 60), left % 60) : T("%s s", left);
    }

    // standing is the shopper's state as the page shows it: won once they
    // hold as many as one customer may, whatever their ticket says;
    // lapsed for a closed ticket whose admission ran out unused.
    function standing(t) {
      if (full()) return "won";
      if (!t) return "none";
      if (t.state === "closed" && t.lapsed) return "lapsed";
      return t.state;
    }

    function render(t) {
      if (t !== undefined) ticket = t;
      if (ticket) joined = true;
      const state = standing(ticket);
      room.dataset.ticketState = state;
      const badge = $("[data-queue-state]");
      badge.textContent = T(STATES[state]);
      badge.className = "badge " + ({ admitted: "live", won: "live", waiting: "upcoming" }[state] || "ended");
      $("[data-queue-join-box]").hidden = !(state === "none" || state === "lapsed");
      $("[data-queue-join]").textContent = T(state === "lapsed" ? "Join again" : "Join the queue");
      $("[data-queue-waiting]").hidden = state !== "waiting";
      $("[data-queue-admitted]").hidden = state !== "admitted";
      $("[data-queue-next]").textContent = T(NEXT[state]);
      const wonBox = $("[data-queue-won]");
      if (state === "won" && wonBox.hidden) { // the limit is held by orders made elsewhere
        wonBox.textContent = "";
        const [before, after] = T("You hold as many of these as one customer may: %s.", "\u0000").split("\u0000");
        wonBox.append(el("p", {}, el("strong", {}, T("You got it!") + " "), before, el("a", { href: "/me/orders" }, T("see My orders")), after));
        wonBox.hidden = false;
      }
      if (state === "waiting") {
        // Before the start places are drawn at random: no number until then.
        const placed = !!ticket.place;
        $("[data-queue-unplaced]").hidden = placed;
        $("[data-queue-placed]").hidden = !placed;
        $("[data-queue-progress]").hidden = !placed;
        if (placed) {
          furthest = Math.max(furthest, ticket.position);
          $("[data-queue-position]").textContent = ticket.position;
          $("[data-queue-eta]").textContent = etaText(ticket.eta_seconds);
          const done = furthest > 1 ? (furthest - ticket.position) / (furthest - 1) : 0;
          $("[data-queue-bar]").style.width = Math.round(Math.max(0.02, done) * 100) + "%";
        }
      }
      clearInterval(untilTimer);
      if (state === "admitted") {
        showUntil();
        untilTimer = setInterval(showUntil, 1000);
      }
    }

    // The shopper got an order: the page shows it, with its link, in place
    // of the admission (one more grab only while under the limit).
    function won(o) {
      held++;
      const box = $("[data-queue-won]");
      box.textContent = "";
      const [before, after] = T("Order %s is yours.", "\u0000").split("\u0000");
      const p = el("p", {}, el("strong", { "data-testid": "grab-success" }, T("You got it!") + " "), before,
        el("a", { href: `/orders/${o.id}/checkout`, "data-queue-order": "", "data-testid": "queue-order-link" }, `#${S.orderNumber(o.id)}`),
        after + " ",
        el("a", { class: "button", href: `/orders/${o.id}/checkout`, "data-testid": "grab-pay-link" }, T("Pay %s", S.money(o.amount_cents))));
      box.append(p);
      box.hidden = false;
      render();
    }

    // The ticket as the API answers it now; a live event that arrived
    // meanwhile is newer and wins. Only a shopper who joined has one to read.
    async function refresh() {
      if (!joined) return;
      const v = ++version;
      const r = await S.api("GET", `/api/goods/${id}/queue`);
      if (v !== version) return;
      if (r.status === 200) render(r.body.ticket);
      else if (r.status === 404) render(null);
    }

    // The start passed: its countdown line has said all it had to.
    room.addEventListener("countdown-done", () => { const st = $("[data-queue-start]"); if (st) st.hidden = true; });

    S.live.on("ticket", (ev) => {
      if (String(ev.ticket.goods_id) !== id) return;
      version++;
      render(ev.ticket);
    });
    S.live.onOpen(refresh);
    // Without a live socket (a proxy that drops it), read the ticket now and then.
    setInterval(() => { if (document.documentElement.dataset.live !== "on" && ticket && ticket.state !== "closed") refresh(); }, 5000);

    async function powHeaders() {
      if (Number(room.dataset.pow) > 0 && window.seckillPow) {
        out.className = "grab-result pending";
        out.textContent = T("Checking you are not a bot…");
        const pow = await window.seckillPow.header(id);
        if (pow) return { "X-Pow": pow };
      }
      return {};
    }

    $("[data-queue-join]").addEventListener("click", async (e) => {
      const btn = e.currentTarget;
      btn.disabled = true;
      out.textContent = "";
      let r;
      try {
        const headers = await powHeaders();
        out.textContent = "";
        r = await S.api("POST", `/api/goods/${id}/queue`, undefined, headers);
      } catch (err) {
        r = { status: 0, body: null };
      }
      btn.disabled = false;
      if (r.status === 200 || r.status === 201) {
        version++;
        render(r.body.ticket);
        return;
      }
      out.className = "grab-result bad";
      out.textContent = "";
      out.append(el("span", { "data-testid": "queue-error", "data-code": (r.body && r.body.error && r.body.error.code) || "" }, errorText(r)));
    });

    $("[data-queue-grab]").addEventListener("click", async (e) => {
      const btn = e.currentTarget;
      btn.disabled = true;
      out.textContent = "";
      let r;
      try {
        const headers = Object.assign(await powHeaders(), { "X-Admission": (ticket && ticket.admission) || "" });
        out.className = "grab-result pending";
        out.textContent = T("Grabbing…");
        r = await S.api("POST", `/api/goods/${id}/grab`, undefined, headers);
      } catch (err) {
        r = { status: 0, body: null };
      }
      btn.disabled = false;
      out.textContent = "";
      if (r.status === 201) {
        out.className = "grab-result";
        won(r.body.order);
        return;
      }
      const code = (r.body && r.body.error && r.body.error.code) || "";
      if (code === "limit_reached" && limit > 0) { // orders made elsewhere: the limit is held
        held = Math.max(held, limit);
        render();
      }
      out.className = "grab-result bad";
      out.append(el("span", { "data-testid": "grab-error", "data-code": code }, errorText(r)));
    });
  }

  // ---- The merchant's live view of the room ------------------------------
  const panel = document.querySelector("[data-queue-stats]");
  if (panel) {
    const id = panel.dataset.queueStats;
    const set = (k, v) => { const e = panel.querySelector(`[data-q="${k}"]`); if (e) e.textContent = v; };
    async function poll() {
      const r = await S.api("GET", `/api/admin/goods/${id}/queue`);
      if (!r.ok) return;
      const q = r.body.queue;
      set("waiting", q.waiting);
      set("admitted", q.admitted);
      set("joined", q.joined);
      set("rate", q.rate_now);
      set("inflow", q.inflow_per_s);
      set("outflow", q.outflow_per_s);
      set("no_shows", q.no_shows);
      set("expected_wait", T("%s s", q.expected_wait_s));
      set("actual_wait", T("%s s", q.actual_wait_p50_s));
      const paused = panel.querySelector('[data-q="paused"]');
      if (paused) paused.hidden = !q.paused;
      set("measured", q.measured ? " " + T("(measured capacity)") : "");
      set("state", T(q.closed ? "closed" : q.started ? "open" : "open, the start shuffles it"));
      set("shuffle", q.started ? T("%s early shoppers were shuffled at the start with seed %s.", q.shuffled, q.seed) : T("Shoppers who join before the start are shuffled then."));
      panel.dataset.loaded = "on";
    }
    poll();
    setInterval(poll, 1000);
  }
})();
