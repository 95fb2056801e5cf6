package account

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"hash"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// Tokens signs and verifies stateless bearer tokens with HMAC-SHA256.
type Tokens struct {
	ttl time.Duration
	now func() time.Time
	// macs are HMACs keyed with the secret once: Reset takes one back to its
	// keyed state, so a signature costs neither the key's two digests
	// nor the allocations of hmac.New (half of a first Verify).
	macs sync.Pool // hash.Hash

	// verified remembers the claims of tokens whose signature checked out,
	// so a shopper's repeated grabs skip the HMAC, base64 and JSON (a tenth
	// of the grab path's CPU). Only genuine tokens get in, expiry is still
	// checked on every use, and the map is emptied when it reaches
	// verifiedCap, which bounds its memory.
	verified sync.Map // token → model.Claims
	cached   atomic.Int64

	// csrf remembers each session's CSRF token, which every page of a
	// signed-in reader carries: an HMAC of the session ID alone, so the
	// same for every use (emptied at verifiedCap, like verified).
	csrf       sync.Map // session ID → its CSRF token
	csrfCached atomic.Int64

	// Revocations, when set, refuses tokens of ended sessions; it is
	// consulted on every use, cached or not, and costs no look-up.
	Revocations *Revocations
}

// verifiedCap bounds the verified-token cache (about 250 bytes an entry).
const verifiedCap = 1 << 16

// NewTokens returns a signer keyed with secret whose tokens live for ttl.
func NewTokens(secret []byte, ttl time.Duration) *Tokens {
	t := &Tokens{ttl: ttl, now: time.Now}
	t.macs.New = func() any { return hmac.New(sha256.New, secret) }
	return t
}

// Sign returns a token for a new session of the user, valid for the signer's TTL.
func (t *Tokens) Sign(u *model.User) string {
	return t.SignClaims(model.Claims{UserID: u.ID, Username: u.Username, Role: u.Role, Expires: t.now().Add(t.ttl).Unix()})
}

// SignClaims returns a token carrying these claims, with a new session ID
// and the time of issue filled in when they are missing.
func (t *Tokens) SignClaims(c model.Claims) string {
	if c.SessionID == "" {
		c.SessionID = newSessionID()
	}
	if c.IssuedAt == 0 {
		c.IssuedAt = t.now().UnixMicro()
	}
	body, _ := json.Marshal(c)
	payload := base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + t.mac(payload)
}

// Verify checks the signature, expiry and revocation and returns the claims.
func (t *Tokens) Verify(token string) (model.Claims, error) {
	if v, ok := t.verified.Load(token); ok {
		return t.live(v.(model.Claims))
	}
	var c model.Claims
	payload, sig, ok := strings.Cut(token, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(t.mac(payload))) {
		return c, db.Errorf(db.EUNAUTHORIZED, "invalid token")
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err == nil {
		c, err = decodeClaims(body)
	}
	if err != nil || c.UserID <= 0 || c.SessionID == "" {
		return model.Claims{}, db.Errorf(db.EUNAUTHORIZED, "invalid token")
	}
	if t.cached.Add(1) > verifiedCap {
		t.verified.Clear()
		t.cached.Store(1)
	}
	// Clone: Fiber hands out strings that alias its reused request buffers.
	t.verified.Store(strings.Clone(token), c)
	return t.live(c)
}

// Live reports whether claims verified earlier still hold: unexpired, and
// their session not ended (a memory check; for long-lived connections).
func (t *Tokens) Live(c model.Claims) bool {
	_, err := t.live(c)
	return err == nil
}

// live refuses claims that have expired or whose session has ended.
func (t *Tokens) live(c model.Claims) (model.Claims, error) {
	if t.now().Unix() >= c.Expires {
		return model.Claims{}, db.Errorf(db.EUNAUTHORIZED, "token expired")
	}
	if t.Revocations != nil && t.Revocations.Revoked(c) {
		return model.Claims{}, db.Errorf(db.EUNAUTHORIZED, "session ended; log in again")
	}
	return c, nil
}

// CSRF returns the anti-forgery token of the session: pages of a logged-in
// user carry it, and cookie-authenticated writes must send it back.
func (t *Tokens) CSRF(c model.Claims) string {
	if v, ok := t.csrf.Load(c.SessionID); ok {
		return v.(string)
	}
	token := t.MAC("csrf:" + c.SessionID)
	if t.csrfCached.Add(1) > verifiedCap {
		t.csrf.Clear()
		t.csrfCached.Store(1)
	}
	t.csrf.Store(c.SessionID, token)
	return token
}

// newSessionID returns a random session ID (128 bits, URL-safe).
func newSessionID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// MAC returns the hex-free base64 HMAC of msg under the signer's key, for other signed values (CSRF).
func (t *Tokens) MAC(msg string) string { return t.mac("x:" + msg) }

func (t *Tokens) mac(payload string) string {
	m := t.macs.Get().(hash.Hash)
	m.Reset()
	m.Write([]byte(payload))
	var sum [sha256.Size]byte
	s := m.Sum(sum[:0])
	t.macs.Put(m)
	return base64.RawURLEncoding.EncodeToString(s)
}
