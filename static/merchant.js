// Merchant pages: the live sales charts (hand-written SVG), the slot's
// totals kept live, the warning of a seckill price above the list price as
// it is typed, confirmations of "end now", and the picture's size check.
(function () {
  "use strict";
  const S = window.seckill;
  const T = window.T;
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const SVG = "http://www.w3.org/2000/svg";
  const W = 600, H = 200, PAD = 4;

  // ---- Charts ------------------------------------------------------------
  // A chart keeps each goods' samples by second; a slot's chart sums the
  // latest sample of every goods at each second.
  function Chart(fig) {
    this.fig = fig;
    this.kind = fig.dataset.chart;
    this.id = Number(fig.dataset.chartId);
    this.svg = fig.querySelector("[data-svg]");
    this.byGoods = new Map(); // goods ID → Map(second → sample)
    this.count = 0;
  }
  Chart.prototype.add = function (s) {
    if (this.kind === "goods" && s.goods_id !== this.id) return false;
    if (this.kind === "slot" && !slotGoods.has(s.goods_id)) return false;
    let m = this.byGoods.get(s.goods_id);
    if (!m) { m = new Map(); this.byGoods.set(s.goods_id, m); }
    const sec = Math.floor(s.at / 1000);
    if (m.has(sec)) return false;
    m.set(sec, s);
    this.count++;
    return true;
  };
  // series sums the goods' samples per second (a goods without a sample at a
  // second counts with its last one before it).
  Chart.prototype.series = function () {
    const secs = new Set();
    this.byGoods.forEach((m) => m.forEach((_, k) => secs.add(k)));
    const order = Array.from(secs).sort((a, b) => a - b).slice(-600);
    const last = new Map();
    const sorted = new Map();
    this.byGoods.forEach((m, g) => sorted.set(g, Array.from(m.keys()).sort((a, b) => a - b)));
    const idx = new Map();
    return order.map((sec) => {
      const sum = { at: sec, remaining: 0, unpaid: 0, paid: 0, grabs: 0 };
      this.byGoods.forEach((m, g) => {
        const keys = sorted.get(g);
        let i = idx.get(g) || 0;
        while (i < keys.length && keys[i] <= sec) { last.set(g, m.get(keys[i])); i++; }
        idx.set(g, i);
        const s = last.get(g);
        if (s) { sum.remaining += s.remaining; sum.unpaid += s.unpaid; sum.paid += s.paid; sum.grabs += s.grabs; }
      });
      return sum;
    });
  };
  Chart.prototype.draw = function () {
    const pts = this.series();
    this.fig.querySelector("[data-chart-empty]").hidden = pts.length > 0;
    this.fig.dataset.samples = String(this.count);
    while (this.svg.firstChild) this.svg.firstChild.remove();
    if (pts.length === 0) return;
    const rate = pts.map((p, i) => (i === 0 ? 0 : Math.max(0, (p.grabs - pts[i - 1].grabs) / Math.max(1, p.at - pts[i - 1].at))));
    const t0 = pts[0].at, t1 = Math.max(pts[pts.length - 1].at, t0 + 1);
    const top = Math.max(1, ...pts.map((p) => Math.max(p.remaining, p.unpaid, p.paid)));
    const rtop = Math.max(1, ...rate);
    const x = (t) => PAD + ((t - t0) / (t1 - t0)) * (W - 2 * PAD);
    const y = (v, max) => H - PAD - (v / max) * (H - 2 * PAD);
    // grabs a second as bars behind the lines, on their own scale
    const bw = Math.min(12, Math.max(1, (W - 2 * PAD) / Math.max(1, t1 - t0) - 1));
    pts.forEach((p, i) => {
      if (!rate[i]) return;
      const r = document.createElementNS(SVG, "rect");
      r.setAttribute("x", String(x(p.at) - bw / 2));
      r.setAttribute("y", String(y(rate[i], rtop)));
      r.setAttribute("width", String(bw));
      r.setAttribute("height", String(H - PAD - y(rate[i], rtop)));
      r.setAttribute("class", "k-rate");
      this.svg.append(r);
    });
    ["remaining", "unpaid", "paid"].forEach((k) => {
      const line = document.createElementNS(SVG, "polyline");
      line.setAttribute("points", pts.map((p) => `${x(p.at).toFixed(1)},${y(p[k], top).toFixed(1)}`).join(" "));
      line.setAttribute("class", "k-" + k);
      line.setAttribute("fill", "none");
      line.setAttribute("vector-effect", "non-scaling-stroke");
      this.svg.append(line);
    });
    // Axes: the units' and the grabs' scales, and the time at each end (local time).
    [0.5, 1].forEach((f) => {
      const g = document.createElementNS(SVG, "line");
      g.setAttribute("x1", "0"); g.setAttribute("x2", String(W));
      g.setAttribute("y1", String(y(top * f, top))); g.setAttribute("y2", String(y(top * f, top)));
      g.setAttribute("class", "grid"); g.setAttribute("vector-effect", "non-scaling-stroke");
      this.svg.prepend(g);
    });
    const round1 = (v) => String(Math.round(v * 10) / 10);
    const clock = (sec) => new Date(sec * 1000).toLocaleTimeString("en-GB", { hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
    const axes = { "y-max": String(top), "y-mid": round1(top / 2), "r-max": round1(rtop), "r-mid": round1(rtop / 2), "x-start": clock(t0), "x-end": clock(t1) };
    Object.entries(axes).forEach(([k, v]) => { const el = this.fig.querySelector(`[data-axis="${k}"]`); if (el) el.textContent = v; });
    const end = pts[pts.length - 1];
    const show = { remaining: end.remaining, unpaid: end.unpaid, paid: end.paid, rate: rate[rate.length - 1] };
    Object.entries(show).forEach(([k, v]) => {
      const b = this.fig.querySelector(`[data-last="${k}"]`);
      if (b) b.textContent = String(Math.round(v * 10) / 10);
    });
  };

  const slotGoods = new Set($$("[data-sales-for]").map((tr) => Number(tr.dataset.salesFor)));
  const charts = $$("[data-chart]").map((fig) => new Chart(fig));
  let ready = false; // the history is in; live samples before it are kept and drawn with it
  S.live.on("sample", (ev) => {
    let changed = false;
    charts.forEach((c) => { if (c.add(ev.sample)) changed = true; });
    if (changed && ready) charts.forEach((c) => c.draw());
  });
  (async function loadHistory() {
    for (const c of charts) {
      const r = await S.api("GET", `/api/admin/${c.kind === "goods" ? "goods" : "slots"}/${c.id}/samples`);
      if (r.ok) r.body.samples.forEach((s) => c.add(s));
      c.draw();
      c.fig.dataset.loaded = "on"; // tests wait for it
    }
    ready = true;
  })();

  // ---- Slot totals ---------------------------------------------------------
  // The sales rows are kept live by goods.js; the totals row sums them.
  const totals = document.querySelector("[data-slot-totals]");
  const salesBody = document.querySelector("[data-testid=sales-table] tbody");
  if (totals && salesBody) {
    const num = (td) => Number(String(td ? td.textContent : "0").replace(/[^0-9-]/g, "")) || 0;
    const sum = () => {
      ["stock", "sold", "remaining", "unpaid", "paid", "revenue_cents", "discount_cents", "net_cents"].forEach((k) => {
        const v = $$(`[data-sales-for] [data-k="${k}"]`, salesBody).reduce((a, td) => a + num(td), 0);
        const cell = totals.querySelector(`[data-total="${k}"]`);
        if (cell) cell.textContent = k.endsWith("_cents") ? S.money(v) : String(v);
      });
    };
    new MutationObserver(sum).observe(salesBody, { subtree: true, childList: true, characterData: true });
  }

  // ---- Forms ---------------------------------------------------------------
  // A seckill price above the list price is refused by the server; say so as it is typed.
  $$("form").forEach((form) => {
    const list = form.querySelector("[name=price_cents]");
    const sale = form.querySelector("[name=seckill_price_cents]");
    if (!list || !sale) return;
    const out = form.querySelector('[data-error-for="seckill_price_cents"]');
    const cents = (s) => (/^\d+(\.\d{1,2})?$/.test(s.trim()) ? Math.round(parseFloat(s) * 100) : NaN);
    const check = () => {
      const a = cents(list.value), b = cents(sale.value);
      const bad = !isNaN(a) && !isNaN(b) && b > a;
      sale.setCustomValidity(bad ? T("must not be above the list price") : "");
      sale.closest(".field").classList.toggle("invalid", bad);
      if (out && (bad || out.dataset.priceWarning)) out.textContent = bad ? T("must not be above the list price") : "";
      if (out) out.dataset.priceWarning = bad ? "on" : "";
      form.dataset.priceWarning = bad ? "on" : "";
      return bad;
    };
    // On the form, after goods.js's listener there, which clears a field's error as it is typed.
    form.addEventListener("input", (e) => { if (e.target === list || e.target === sale) check(); });
    form.addEventListener("submit", (e) => { if (check()) { e.preventDefault(); sale.focus(); } });
  });

  $$("[data-max-bytes]").forEach((input) => {
    input.addEventListener("change", () => {
      const f = input.files && input.files[0];
      const out = input.form.querySelector('[data-error-for="image"]');
      const bad = f && f.size > Number(input.dataset.maxBytes);
      input.setCustomValidity(bad ? T("The picture is larger than 2 MiB.") : "");
      if (out) out.textContent = bad ? T("The picture is larger than 2 MiB.") : "";
    });
  });

  // ---- Expected demand (issue 24 item 7) ---------------------------------
  // Choosing a demand clears the advanced shard count, which would override
  // it; the count's placeholder says what the demand stands for.
  $$("select[data-demand]").forEach((sel) => {
    const box = sel.form && sel.form.querySelector("[data-shards-override]");
    if (!box) return;
    const hint = () => { const o = sel.selectedOptions[0]; box.placeholder = o ? T("%s (from the expected demand)", o.dataset.shards) : ""; };
    hint();
    sel.addEventListener("change", () => { box.value = ""; hint(); });
  });
})();
