package account

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

func TestTokens(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tk := NewTokens([]byte("0123456789abcdef0123"), time.Hour)
	tk.now = func() time.Time { return now }
	good := tk.Sign(&model.User{ID: 7, Username: "ann", Role: model.RoleMerchant})
	other := NewTokens([]byte("another-secret-0123456"), time.Hour).Sign(&model.User{ID: 7, Username: "ann", Role: model.RoleAdmin})
	for _, tc := range []struct {
		name  string
		token string
		at    time.Time
		ok    bool
	}{
		{"valid", good, now, true},
		{"just before expiry", good, now.Add(time.Hour - time.Second), true},
		{"expired", good, now.Add(time.Hour), false},
		{"tampered payload", "x" + good[1:], now, false},
		{"tampered signature", tamperSignature(good), now, false},
		{"other key", other, now, false},
		{"no dot", "abc", now, false},
		{"empty", "", now, false},
	} {
		tk.now = func() time.Time { return tc.at }
		c, err := tk.Verify(tc.token)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err=%v, want ok=%v", tc.name, err, tc.ok)
		}
		if tc.ok && (c.UserID != 7 || c.Role != model.RoleMerchant || c.Username != "ann") {
			t.Errorf("%s: claims %+v", tc.name, c)
		}
		if !tc.ok && db.ErrorCode(err) != db.EUNAUTHORIZED {
			t.Errorf("%s: code %q, want unauthorized", tc.name, db.ErrorCode(err))
		}
	}
}

// tamperSignature changes the first character of the token's signature to
// another: that character carries six bits of the MAC, so the signature is
// always wrong (a changed last character may differ only in padding bits,
// and a fixed replacement, as "AA" was, is the real one about once in 4,096
// tokens, each signed with a random session ID).
func tamperSignature(token string) string {
	payload, sig, _ := strings.Cut(token, ".")
	c := byte('A')
	if sig[0] == 'A' {
		c = 'B'
	}
	return payload + "." + string(c) + sig[1:]
}

// The verified-token cache must never widen what Verify accepts: once a
// token is cached, a forged one is still refused, an expired one still
// lapses, and emptying the full cache loses nothing but speed.
func TestTokensCache(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tk := NewTokens([]byte("0123456789abcdef0123"), time.Hour)
	tk.now = func() time.Time { return now }
	good := tk.Sign(&model.User{ID: 7, Username: "ann", Role: model.RoleMerchant})
	for i := 0; i < 3; i++ {
		if _, err := tk.Verify(good); err != nil {
			t.Fatalf("verify %d: %v", i, err)
		}
	}
	forged := tk.SignClaims(model.Claims{UserID: 7, Username: "ann", Role: model.RoleAdmin, Expires: now.Add(time.Hour).Unix()})
	forged = tamperSignature(forged)
	if _, err := tk.Verify(forged); err == nil {
		t.Fatal("a forged token passed once a genuine one was cached")
	}
	for i := 0; i < verifiedCap+10; i++ { // overflow: the cache empties and refills
		tk.Verify(tk.SignClaims(model.Claims{UserID: int64(i + 1), Expires: now.Add(time.Hour).Unix()}))
	}
	if n := tk.cached.Load(); n > verifiedCap {
		t.Fatalf("cache holds %d entries, cap %d", n, verifiedCap)
	}
	if c, err := tk.Verify(good); err != nil || c.UserID != 7 || c.Role != model.RoleMerchant {
		t.Fatalf("after overflow: %+v %v", c, err)
	}
	tk.now = func() time.Time { return now.Add(time.Hour) }
	if _, err := tk.Verify(good); db.ErrorCode(err) != db.EUNAUTHORIZED {
		t.Fatalf("cached token past expiry: %v", err)
	}
}

// Every token names a session and when it was issued; one without a session
// (minted before sessions could end) is refused, and the verified-token
// cache never lets a revoked session through.
func TestTokensRevoked(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tk := NewTokens([]byte("0123456789abcdef0123"), time.Hour)
	tk.now = func() time.Time { return now }
	tk.Revocations = NewRevocations(nil, time.Hour)
	a, b := tk.Sign(&model.User{ID: 7, Username: "ann"}), tk.Sign(&model.User{ID: 7, Username: "ann"})
	ca, err := tk.Verify(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := tk.Verify(b)
	if ca.SessionID == "" || ca.SessionID == cb.SessionID || ca.IssuedAt != now.UnixMicro() {
		t.Fatalf("claims %+v and %+v: want distinct sessions issued now", ca, cb)
	}
	if tk.CSRF(ca) == tk.CSRF(cb) {
		t.Fatal("two sessions share a CSRF token")
	}
	body, _ := json.Marshal(model.Claims{UserID: 7, Expires: now.Add(time.Hour).Unix()})
	payload := base64.RawURLEncoding.EncodeToString(body)
	if _, err := tk.Verify(payload + "." + tk.mac(payload)); db.ErrorCode(err) != db.EUNAUTHORIZED {
		t.Fatalf("token without a session: %v", err)
	}

	tk.Revocations.applySession(ca.SessionID, ca.Expires) // a (cached) is logged out
	if _, err := tk.Verify(a); db.ErrorCode(err) != db.EUNAUTHORIZED {
		t.Fatalf("cached token of an ended session: %v", err)
	}
	if _, err := tk.Verify(b); err != nil {
		t.Fatalf("another session of the same user: %v", err)
	}
	tk.Revocations.applyUser(7, now.Add(time.Microsecond).UnixMicro()) // password changed
	if _, err := tk.Verify(b); db.ErrorCode(err) != db.EUNAUTHORIZED {
		t.Fatalf("session issued before the password change: %v", err)
	}
	now = now.Add(time.Second)
	if _, err := tk.Verify(tk.Sign(&model.User{ID: 7, Username: "ann"})); err != nil {
		t.Fatalf("session issued after the password change: %v", err)
	}
}

// A session's CSRF token is remembered, never another's: each call, cached
// or not, is the MAC of its own session, and the memory stays bounded.
func TestTokensCSRFCache(t *testing.T) {
	tk := NewTokens([]byte("0123456789abcdef0123"), time.Hour)
	a := model.Claims{UserID: 7, Username: "ann", SessionID: "session-a"}
	b := model.Claims{UserID: 7, Username: "ann", SessionID: "session-b"}
	for i := 0; i < 2; i++ { // the second round answers from memory
		for _, c := range []model.Claims{a, b} {
			if got, want := tk.CSRF(c), tk.MAC("csrf:"+c.SessionID); got != want {
				t.Fatalf("round %d, %s: CSRF %q, want %q", i, c.SessionID, got, want)
			}
		}
	}
	for i := 0; i < verifiedCap+10; i++ {
		tk.CSRF(model.Claims{SessionID: strconv.Itoa(i)})
	}
	if n := tk.csrfCached.Load(); n > verifiedCap {
		t.Fatalf("CSRF cache holds %d entries, cap %d", n, verifiedCap)
	}
	if got, want := tk.CSRF(a), tk.MAC("csrf:"+a.SessionID); got != want {
		t.Fatalf("after overflow: %q, want %q", got, want)
	}
}

// TestMACsFromThePoolAreFresh signs many messages at once with the pooled,
// reused HMACs: each must equal a freshly keyed HMAC's, so nothing one
// signature wrote is left in the next.
func TestMACsFromThePoolAreFresh(t *testing.T) {
	secret := []byte("0123456789abcdef0123")
	tk := NewTokens(secret, time.Hour)
	want := func(msg string) string {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(msg))
		return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan string, 64)
	for g := range 16 {
		wg.Go(func() {
			<-start
			for i := range 200 {
				msg := strings.Repeat("p", (g*200+i)%97) + strconv.Itoa(i)
				if got, w := tk.mac(msg), want(msg); got != w {
					select {
					case errs <- msg + ": " + got + " != " + w:
					default:
					}
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
