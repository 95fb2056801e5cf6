// Raffles: the shopper's raffle page (enter, then the result and the draw's
// proof) and the merchant's live view of a raffle on the goods' page. Both
// read the JSON API and stay current by polling every two seconds and on
// the live events that concern them (entry, order).
(function () {
  "use strict";
  const S = window.seckill;
  if (!S) return;
  const POLL_MS = 2000;

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    });
    kids.forEach((k) => e.append(k));
    return e;
  }

  function badge(cls, text) { return el("span", { class: "badge " + cls }, text); }

  // ---- The shopper's page ---------------------------------------------------
  const page = document.querySelector("[data-raffle]");
  if (page) {
    const id = page.dataset.raffle;
    const me = page.dataset.user ? Number(page.dataset.user) : 0;
    const status = page.querySelector("[data-raffle-status]");
    const button = page.querySelector("[data-raffle-enter]");
    let entry = null, order = null, draw = null, busy = false, message = "";

    const phase = () => {
      if (draw && draw.drawn_at) return "drawn";
      const now = Date.now();
      if (now >= new Date(page.dataset.drawAt).getTime()) return "closed";
      if (now < new Date(page.dataset.entriesOpen).getTime()) return "soon";
      return "open";
    };

    function renderStatus() {
      const p = el("p");
      if (entry && entry.state === "won" && entry.order_id && order && order.status === "paid") {
        p.append(badge("won", T("You won")), " " + T("Order %s is paid:", "#" + S.orderNumber(entry.order_id)) + " ",
          el("a", { href: "/me/orders", "data-testid": "raffle-paid" }, T("see My orders")));
      } else if (entry && entry.state === "won" && entry.order_id) {
        p.append(badge("won", T("You won")), " " + T("Order %s is yours:", "#" + S.orderNumber(entry.order_id)) + " ",
          el("a", { class: "button", href: "/orders/" + entry.order_id + "/checkout", "data-testid": "raffle-pay" }, T("Pay now")));
      } else if (entry && entry.state === "won") {
        p.append(badge("won", T("You won")), " " + T("Your order is being made…"));
      } else if (entry && entry.state === "waitlisted") {
        p.append(badge("waitlisted", T("Waitlisted")), " " + T("You are number %d in the draw's order. If a winner does not pay, their unit passes to the next entry: you are told at once.", entry.position));
      } else if (entry && entry.state === "lost" && entry.order_id) { // won, then the order ended unpaid
        const st = order && order.id === entry.order_id ? order.status : "";
        const text = st === "expired" ? "Your order %s expired unpaid." : st === "cancelled" ? "Your order %s was cancelled." : "Your order %s ended unpaid.";
        p.setAttribute("data-testid", "raffle-won-unpaid");
        p.append(badge("won", T("You won")), " " + T(text, "#" + S.orderNumber(entry.order_id)));
      } else if (entry && entry.state === "lost") {
        p.append(badge("lost", T("Not this time")), " " + T("No unit reached you in this draw."));
      } else if (entry) {
        p.append(badge("entered", T("Entered")), " " + T("You are in the draw, made at") + " ", S.timeEl(page.dataset.drawAt));
      } else if (phase() === "soon") {
        const [before, after] = T("Entries open in %s.", "\u0000").split("\u0000");
        p.append(before, el("span", { class: "countdown", "data-countdown": page.dataset.entriesOpen, "data-testid": "entries-countdown" }, S.countdown(page.dataset.entriesOpen)), after);
      } else if (phase() === "open") {
        p.append(T("Entries are open until") + " ", S.timeEl(page.dataset.drawAt));
      } else if (phase() === "closed") {
        p.append(T("Entries are closed: the draw is being made."));
      } else {
        p.append(T("Entries are closed."));
      }
      const kids = [p];
      if (message) kids.push(el("p", { class: "flash flash-error", "data-testid": "raffle-error" }, message));
      status.replaceChildren(...kids);
      page.dataset.entryState = entry ? entry.state : "none";
      page.dataset.phase = phase();
      if (button) {
        button.hidden = !!entry || phase() === "closed" || phase() === "drawn";
        button.disabled = busy || phase() !== "open";
      }
    }

    function renderDraw() {
      if (!draw) return;
      page.querySelector("[data-raffle-entries]").textContent = String(draw.entries);
      page.querySelector("[data-seed-hash]").textContent = draw.seed_hash;
      if (draw.entries_root) {
        page.querySelector("[data-entries-root]").textContent = draw.entries_root;
        page.querySelector("[data-entries-root-line]").hidden = false;
      }
      // The plain count shows; the proof's technical parts wait in the fairness details.
      const shown = page.querySelectorAll("[data-raffle-proof], [data-raffle-proof-detail]");
      shown.forEach((e) => { e.hidden = !draw.drawn_at; });
      if (!draw.drawn_at) return;
      page.querySelector("[data-raffle-seed]").textContent = draw.seed;
      page.querySelector("[data-raffle-randomness]").textContent = draw.randomness || "";
      page.querySelector("[data-raffle-winners]").textContent = String(draw.winners);
      page.querySelector("[data-raffle-passed]").textContent = String(draw.passed);
      const list = page.querySelector("[data-raffle-order]");
      if (list.children.length !== draw.order.length) showOrder(list, draw);
    }

    // showOrder lists the draw's order by each entry's leaf in the entries
    // root, SHA-256("entry:" + goods + ":" + user), never by user ID (as the
    // page does: views/raffle.go); the reader's own is marked.
    async function showOrder(list, d) {
      if (!(window.crypto && crypto.subtle)) return; // no hashing here: the page's list comes with the next load
      const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
      const leaves = await Promise.all(d.order.map((u) => crypto.subtle.digest("SHA-256", new TextEncoder().encode(`entry:${id}:${u}`)).then(hex)));
      if (list.children.length === d.order.length) return;
      list.replaceChildren(...leaves.map((leaf, i) => {
        const cls = [i < d.winners ? "winner" : "", d.order[i] === me ? "you" : ""].filter(Boolean).join(" ");
        const li = el("li", cls ? { class: cls, title: leaf } : { title: leaf }, el("code", {}, leaf.slice(0, 12)));
        li.dataset.leaf = leaf;
        return li;
      }));
    }

    async function refresh() {
      const d = await S.api("GET", `/api/goods/${id}/draw`);
      if (d.ok) draw = d.body;
      if (me && (entry || page.dataset.entryState !== "none")) { // one who has not entered has no entry to read
        const e = await S.api("GET", `/api/goods/${id}/entries/me`);
        if (e.ok) entry = e.body.entry;
        else if (e.status === 404) entry = null;
        if (entry && entry.order_id && !(order && order.id === entry.order_id && order.status === "paid")) {
          const o = await S.api("GET", `/api/orders/${entry.order_id}`);
          if (o.ok) order = o.body.order;
        }
      }
      renderDraw();
      renderStatus();
      page.dataset.loaded = "1";
    }

    if (button) {
      button.addEventListener("click", async () => {
        busy = true; message = ""; renderStatus();
        try {
          const headers = {};
          if (Number(page.dataset.pow) > 0 && window.seckillPow) {
            button.textContent = T("Checking your browser…");
            const pow = await window.seckillPow.header(id);
            if (pow) headers["X-Pow"] = pow;
          }
          const r = await S.api("POST", `/api/goods/${id}/entries`, undefined, headers);
          if (r.ok) entry = r.body.entry;
          else message = (r.body && r.body.error && r.body.error.message) || T("Could not enter: try again.");
        } catch (e) {
          message = T("Could not enter: try again.");
        }
        busy = false;
        button.textContent = T("Enter the raffle");
        await refresh();
      });
    }

    S.live.on("entry", (ev) => { if (ev.entry && String(ev.entry.goods_id) === id) refresh(); });
    S.live.on("order", (ev) => { if (ev.order && String(ev.order.goods_id) === id) refresh(); });
    S.live.onOpen(refresh);
    document.addEventListener("countdown-done", refresh);
    setInterval(refresh, POLL_MS);
    refresh();
  }

  // ---- The merchant's live view -------------------------------------------
  const box = document.querySelector("[data-raffle-admin]");
  if (box) {
    const id = box.dataset.raffleAdmin;
    const set = (k, v) => { const c = box.querySelector(`[data-k="${k}"]`); if (c) c.textContent = v; };
    async function poll() {
      const r = await S.api("GET", `/api/admin/goods/${id}/raffle`);
      if (!r.ok) return;
      const st = r.body.raffle;
      set("entries", String(st.draw.entries));
      set("won", String(st.won));
      set("paid", String(st.paid));
      set("waitlisted", String(st.waitlisted));
      set("lost", String(st.lost));
      set("passed", String(st.draw.passed));
      set("seed_hash", st.draw.seed_hash);
      const drawn = box.querySelector('[data-k="drawn_at"]');
      if (st.draw.drawn_at) drawn.replaceChildren(S.timeEl(st.draw.drawn_at), " · " + T("%d winners", st.draw.winners));
      box.dataset.loaded = "1";
    }
    setInterval(poll, POLL_MS);
    poll();
  }
})();
