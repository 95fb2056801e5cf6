// Proof of work for fair sales (GET /api/pow, X-Pow): find a nonce such
// that SHA-256(challenge + nonce) starts with `bits` zero bits. This one
// file is both the page's helper (window.seckillPow) and the Web Worker it
// starts, so the search never blocks the page. Vendored: no CDN.
(function () {
  "use strict";
  const BATCH = 256; // digests in flight at once: crypto.subtle answers each through a promise

  function zeroBits(buf) {
    const b = new Uint8Array(buf);
    let n = 0;
    for (let i = 0; i < b.length; i++) {
      if (b[i] === 0) { n += 8; continue; }
      return n + Math.clz32(b[i]) - 24;
    }
    return n;
  }

  // search runs in the worker: batches of nonces until one solves it.
  async function search(challenge, bits) {
    const enc = new TextEncoder();
    for (let base = 0; ; base += BATCH) {
      const batch = [];
      for (let i = 0; i < BATCH; i++) batch.push(crypto.subtle.digest("SHA-256", enc.encode(challenge + (base + i))));
      const ds = await Promise.all(batch);
      for (let i = 0; i < BATCH; i++) if (zeroBits(ds[i]) >= bits) return { nonce: String(base + i), tries: base + i + 1 };
    }
  }

  if (typeof window === "undefined") { // the worker
    self.onmessage = async (e) => { self.postMessage(await search(e.data.challenge, e.data.bits)); };
    return;
  }

  const script = document.currentScript && document.currentScript.src;

  // solveChallenge finds a nonce in a Web Worker: {nonce, tries, ms}.
  function solveChallenge(challenge, bits) {
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const w = new Worker(script || "/static/pow.js");
      w.onmessage = (e) => { w.terminate(); resolve(Object.assign({ ms: performance.now() - started }, e.data)); };
      w.onerror = (e) => { w.terminate(); reject(e); };
      w.postMessage({ challenge, bits });
    });
  }

  // header asks the server for a challenge for the goods and solves it:
  // the X-Pow header to send with the grab, "" when the goods asks for none.
  async function header(goodsID) {
    const res = await fetch(`/api/pow?goods=${encodeURIComponent(goodsID)}`, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (!res.ok) return "";
    const c = await res.json();
    if (!c.bits) return "";
    const s = await solveChallenge(c.challenge, c.bits);
    return `${c.challenge}:${s.nonce}:${c.signature}`;
  }

  window.seckillPow = { solveChallenge, header };
})();
