// Sign-in and sign-up: while sign-in is locked after failed attempts, count
// the seconds down on the form (from the server's Retry-After) and keep its
// button off until then. Without this script the form still works: the
// server answers a try too early with the wait again.
(function () {
  "use strict";
  const box = document.querySelector("[data-lockout]");
  if (!box) return;
  const form = document.querySelector("[data-testid=login-form],[data-testid=register-form]");
  const button = form && form.querySelector("button[type=submit]");
  const out = box.querySelector("[data-lockout-seconds]");
  const until = Date.now() + Number(box.dataset.lockout) * 1000;
  function tick() {
    const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
    if (out) out.textContent = String(left);
    if (left > 0) {
      if (button) button.disabled = true;
      setTimeout(tick, Math.min(1000, until - Date.now() - (left - 1) * 1000));
      return;
    }
    if (button) button.disabled = false;
    box.className = "flash flash-success";
    box.dataset.lockoutDone = "1";
    box.textContent = T("You can try again now.");
  }
  tick();
})();
