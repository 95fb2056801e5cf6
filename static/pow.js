// Proof of work for fair sales (GET /api/pow, X-Pow): find `solutions`
// distinct nonces, each such that SHA-256(challenge + nonce) starts with
// `bits` zero bits. This one
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

  // sha256 is SHA-256 in plain JavaScript (FIPS 180-4) over bytes, for the
  // browsers without crypto.subtle: it exists only in secure contexts
  // (HTTPS or localhost), and a shop served over plain HTTP on a LAN still
  // asks its proof of work. Returns the digest as 32 bytes.
  const K = new Uint32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);
  const W = new Uint32Array(64);
  function sha256(msg) {
    const n = ((msg.length + 9 + 63) >> 6) << 6; // padded to whole 64-byte blocks
    const p = new Uint8Array(n);
    p.set(msg);
    p[msg.length] = 0x80;
    const bitsLen = msg.length * 8;
    p[n - 4] = bitsLen >>> 24; p[n - 3] = bitsLen >>> 16; p[n - 2] = bitsLen >>> 8; p[n - 1] = bitsLen;
    let h0 = 0x6a09e667, h1 = 0xbb67ae85, h2 = 0x3c6ef372, h3 = 0xa54ff53a,
      h4 = 0x510e527f, h5 = 0x9b05688c, h6 = 0x1f83d9ab, h7 = 0x5be0cd19;
    for (let off = 0; off < n; off += 64) {
      for (let i = 0; i < 16; i++) {
        const j = off + i * 4;
        W[i] = (p[j] << 24) | (p[j + 1] << 16) | (p[j + 2] << 8) | p[j + 3];
      }
      for (let i = 16; i < 64; i++) {
        const x = W[i - 15], y = W[i - 2];
        const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
        const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
        W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
      }
      let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7;
      for (let i = 0; i < 64; i++) {
        const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
        const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
        const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
        const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
        h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      h0 = (h0 + a) | 0; h1 = (h1 + b) | 0; h2 = (h2 + c) | 0; h3 = (h3 + d) | 0;
      h4 = (h4 + e) | 0; h5 = (h5 + f) | 0; h6 = (h6 + g) | 0; h7 = (h7 + h) | 0;
    }
    const out = new Uint8Array(32), v = new DataView(out.buffer);
    [h0, h1, h2, h3, h4, h5, h6, h7].forEach((x, i) => v.setUint32(i * 4, x));
    return out;
  }

  // searchJS is the search with the plain-JavaScript digest.
  function searchJS(challenge, bits, n) {
    const enc = new TextEncoder(), nonces = [];
    for (let i = 0; ; i++) {
      if (zeroBits(sha256(enc.encode(challenge + i)).buffer) < bits) continue;
      nonces.push(String(i));
      if (nonces.length >= n) return { nonces, tries: i + 1 };
    }
  }

  // search runs in the worker: batches of nonces until n of them solve it
  // (crypto.subtle where the page is a secure context, else plain JavaScript).
  async function search(challenge, bits, n, js) {
    if (js || typeof crypto === "undefined" || !crypto.subtle) return Object.assign({ js: true }, searchJS(challenge, bits, n));
    const enc = new TextEncoder(), nonces = [];
    for (let base = 0; ; base += BATCH) {
      const batch = [];
      for (let i = 0; i < BATCH; i++) batch.push(crypto.subtle.digest("SHA-256", enc.encode(challenge + (base + i))));
      const ds = await Promise.all(batch);
      for (let i = 0; i < BATCH; i++) {
        if (zeroBits(ds[i]) < bits) continue;
        nonces.push(String(base + i));
        if (nonces.length >= n) return { nonces, tries: base + i + 1 };
      }
    }
  }

  if (typeof window === "undefined") { // the worker
    self.onmessage = async (e) => { self.postMessage(await search(e.data.challenge, e.data.bits, e.data.solutions || 1, e.data.js)); };
    return;
  }

  const script = document.currentScript && document.currentScript.src;

  // solveChallenge finds `solutions` nonces (1 when left out) in a Web
  // Worker: {nonces, tries, ms, js} (js: the plain-JavaScript digest did
  // it; opts.js asks for it).
  function solveChallenge(challenge, bits, solutions, opts) {
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const w = new Worker(script || "/static/pow.js");
      w.onmessage = (e) => { w.terminate(); resolve(Object.assign({ ms: performance.now() - started }, e.data)); };
      w.onerror = (e) => { w.terminate(); reject(e); };
      w.postMessage({ challenge, bits, solutions: solutions || 1, js: !!(opts && opts.js) });
    });
  }

  // header asks the server for a challenge for the goods and solves it:
  // the X-Pow header to send with the grab, "" when the goods asks for none.
  async function header(goodsID) {
    const res = await fetch(`/api/pow?goods=${encodeURIComponent(goodsID)}`, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (!res.ok) return "";
    const c = await res.json();
    if (!c.bits) return "";
    const s = await solveChallenge(c.challenge, c.bits, c.solutions);
    return `${c.challenge}:${s.nonces.join(",")}:${c.signature}`;
  }

  window.seckillPow = { solveChallenge, header };
})();
