// Checkout: the total as a coupon is picked and Pay (on /orders/{id}/checkout),
// and Refund on My orders. Uses window.seckill (app.js).
(function () {
  "use strict";
  const S = window.seckill;
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const REASONS = { conflict: "This coupon has been used already.", expired: "Too late: this has expired.", invalid: "This coupon does not apply to this order.", not_found: "That coupon is not yours." };

  // ---- Checkout page -----------------------------------------------------
  const page = document.querySelector("[data-checkout]");
  const form = document.querySelector("[data-checkout-form]");
  if (page && form) {
    const id = page.dataset.checkout, amount = Number(page.dataset.amount);
    const total = form.querySelector("[data-total]"), discount = form.querySelector("[data-discount-out]");
    const msg = form.querySelector("[data-checkout-msg]"), pay = form.querySelector("button[type=submit]");
    const picked = () => form.querySelector("input[name=coupon]:checked");
    function update() {
      const r = picked();
      const d = r ? Number(r.dataset.discount) : 0;
      discount.textContent = "−" + S.money(d);
      total.textContent = S.money(amount - d);
      form.dataset.coupon = r ? r.value : "0";
      pay.textContent = "Pay " + S.money(amount - d);
    }
    form.addEventListener("change", update);
    update();
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      pay.disabled = true;
      msg.textContent = "";
      const r = picked();
      const coupon = r ? Number(r.value) : 0;
      const res = await S.api("POST", `/api/orders/${id}/pay`, coupon ? { user_coupon_id: coupon } : undefined);
      if (res.ok) {
        location.href = "/me/orders";
        return;
      }
      const code = (res.body && res.body.error && res.body.error.code) || "";
      msg.dataset.code = code;
      msg.textContent = REASONS[code] || (res.body && res.body.error ? res.body.error.message : "Something went wrong — try again.");
      pay.disabled = false;
    });
  }

  // ---- My orders: refunds, and rows following their order live -----------
  function follow(o) {
    const row = document.querySelector(`[data-order-row="${o.id}"]`);
    if (!row) return;
    if (o.status !== "unpaid") $$("[data-pay-link]", row).forEach((x) => x.remove());
    if (o.status !== "paid") $$("[data-refund]", row).forEach((x) => x.remove());
    const msg = row.querySelector("[data-order-msg]");
    if (o.status === "paid" && !row.querySelector("[data-refund]") && msg) { // paid elsewhere: refundable here too
      const b = document.createElement("button");
      Object.assign(b, { type: "button", className: "small secondary", textContent: "Refund" });
      b.dataset.refund = o.id;
      b.setAttribute("data-testid", "refund-" + o.id);
      msg.before(b);
    }
    if (o.status === "refunded") {
      $$(`[data-order-status="${o.id}"]`).forEach((b) => { b.className = "badge refunded"; b.textContent = "Refunded"; });
    }
  }
  if (document.querySelector("[data-testid=orders-page]")) {
    S.live.on("order", (ev) => follow(ev.order));
  }
  document.addEventListener("click", async (e) => {
    const b = e.target.closest("[data-refund]");
    if (!b) return;
    const id = b.dataset.refund;
    const msg = document.querySelector(`[data-order-msg="${id}"]`);
    b.disabled = true;
    const r = await S.api("POST", `/api/orders/${id}/refund`);
    if (r.ok) {
      follow(r.body.order);
      if (msg) { msg.textContent = "Refunded."; msg.setAttribute("data-testid", "refund-done-" + id); }
      return;
    }
    if (msg) msg.textContent = (r.body && r.body.error && r.body.error.message) || "Something went wrong — try again.";
    b.disabled = false;
  });
})();
