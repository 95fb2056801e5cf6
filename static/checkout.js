// Checkout: the total as a coupon is picked and Pay (on /orders/{id}/checkout)
// — the simulated pay, or a method at the payment provider: a card or
// Alipay goes on to the provider's page, WeChat Pay comes back here to show
// its QR code, and the page waits for the payment to reach the receipt —
// and Refund on My orders. Uses window.seckill (app.js).
(function () {
  "use strict";
  const S = window.seckill;
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const REASONS = { conflict: T("This coupon has been used already."), expired: T("Too late: this has expired."), invalid: T("This coupon does not apply to this order."), not_found: T("That coupon is not yours.") };

  // ---- Checkout page -----------------------------------------------------
  const page = document.querySelector("[data-checkout]");
  const form = document.querySelector("[data-checkout-form]");
  if (page && form) {
    const id = page.dataset.checkout, amount = Number(page.dataset.amount);
    const total = form.querySelector("[data-total]"), discount = form.querySelector("[data-discount-out]");
    const msg = form.querySelector("[data-checkout-msg]"), pay = form.querySelector("button[type=submit]");
    const provider = "providerForm" in form.dataset;
    const picked = () => form.querySelector("input[name=coupon]:checked");
    function update() {
      const r = picked();
      const d = r ? Number(r.dataset.discount) : 0;
      discount.textContent = "−" + S.money(d);
      total.textContent = S.money(amount - d);
      form.dataset.coupon = r ? r.value : "0";
      if (!provider) pay.textContent = T("Pay %s", S.money(amount - d));
    }
    form.addEventListener("change", update);
    update();
    const buttons = $$("button[type=submit]", form);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      buttons.forEach((b) => { b.disabled = true; });
      msg.textContent = "";
      const r = picked();
      const coupon = r ? Number(r.value) : 0;
      let res;
      if (provider) {
        const method = e.submitter ? e.submitter.value : "";
        res = await S.api("POST", `/api/orders/${id}/checkout`, coupon ? { method, user_coupon_id: coupon } : { method });
        if (res.ok) {
          const co = res.body.checkout;
          if (co.url) location.href = co.url; // the provider's page (a card, Alipay)
          else location.reload(); // this page shows the QR code (WeChat Pay)
          return;
        }
      } else {
        res = await S.api("POST", `/api/orders/${id}/pay`, coupon ? { user_coupon_id: coupon } : undefined);
        if (res.ok) {
          location.href = `/orders/${id}/receipt`; // paying ends on the receipt
          return;
        }
      }
      const code = (res.body && res.body.error && res.body.error.code) || "";
      msg.dataset.code = code;
      msg.textContent = REASONS[code] || (res.body && res.body.error ? S.sentence(res.body.error.message) : T("Something went wrong — try again."));
      buttons.forEach((b) => { b.disabled = false; });
    });
  }

  // ---- Waiting for a payment at the provider -----------------------------
  // The webhook pays the order: the page hears it live (or asks every few
  // seconds) and goes on to the receipt, or shows the order ended unpaid.
  const wait = document.querySelector("[data-pay-wait]");
  if (wait) {
    const id = wait.dataset.payWait;
    let done = false;
    const settle = (o) => {
      if (done || !o || String(o.id) !== id) return;
      if (o.paid_at) { done = true; location.href = `/orders/${id}/receipt`; }
      else if (o.status !== "unpaid") { done = true; location.reload(); }
    };
    const ask = async () => {
      const res = await S.api("GET", `/api/orders/${id}`);
      if (res.ok) settle(res.body.order);
    };
    S.live.on("order", (ev) => settle(ev.order));
    S.live.onOpen(ask);
    (function poll() { if (!done) ask().finally(() => setTimeout(poll, 3000)); })();
  }

  // ---- My orders: rows following their order live ------------------------
  // Refund and cancel are links to their confirm pages (no script needed);
  // here they come and go with the order's status.
  function link(o, verb, label, cls) {
    const a = document.createElement("a");
    Object.assign(a, { href: `/orders/${o.id}/${verb}`, className: cls, textContent: label });
    a.dataset[verb + "Link"] = o.id;
    a.setAttribute("data-testid", verb + "-" + o.id);
    return a;
  }
  function follow(o) {
    const row = document.querySelector(`[data-order-row="${o.id}"]`);
    if (!row) return;
    if (o.status !== "unpaid") $$("[data-pay-link],[data-cancel-link]", row).forEach((x) => x.remove());
    if (o.status !== "paid") $$("[data-refund-link]", row).forEach((x) => x.remove());
    const msg = row.querySelector("[data-order-msg]");
    if (o.status === "paid" && !row.querySelector("[data-refund-link]") && msg) { // paid elsewhere: refundable here too
      msg.before(link(o, "refund", T("Refund"), "button small secondary"));
    }
    if (o.paid_at && !row.querySelector("[data-receipt-link]") && msg) {
      msg.before(link(o, "receipt", T("Receipt"), "small"));
    }
    if (o.status === "refunded") {
      $$(`[data-order-status="${o.id}"]`).forEach((b) => { b.className = "badge refunded"; b.textContent = T("Refunded"); });
    }
  }
  if (document.querySelector("[data-testid=orders-page]")) {
    S.live.on("order", (ev) => follow(ev.order));
  }
})();
