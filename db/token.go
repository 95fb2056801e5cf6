package db

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// Claims is what a signed token says about its bearer; checking it needs no look-up.
type Claims struct {
	UserID   int64  `json:"uid"`
	Username string `json:"name"`
	Role     string `json:"role"`
	Expires  int64  `json:"exp"` // unix seconds
}

// Tokens signs and verifies stateless bearer tokens with HMAC-SHA256.
type Tokens struct {
	secret []byte
	ttl    time.Duration
	now    func() time.Time
}

// NewTokens returns a signer keyed with secret whose tokens live for ttl.
func NewTokens(secret []byte, ttl time.Duration) *Tokens {
	return &Tokens{secret: secret, ttl: ttl, now: time.Now}
}

// Sign returns a token for the user, valid for the signer's TTL.
func (t *Tokens) Sign(u *User) string {
	return t.SignClaims(Claims{UserID: u.ID, Username: u.Username, Role: u.Role, Expires: t.now().Add(t.ttl).Unix()})
}

// SignClaims returns a token carrying exactly these claims.
func (t *Tokens) SignClaims(c Claims) string {
	body, _ := json.Marshal(c)
	payload := base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + t.mac(payload)
}

// Verify checks the signature and expiry and returns the claims.
func (t *Tokens) Verify(token string) (Claims, error) {
	var c Claims
	payload, sig, ok := strings.Cut(token, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(t.mac(payload))) {
		return c, Errorf(EUNAUTHORIZED, "invalid token")
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(body, &c) != nil || c.UserID <= 0 {
		return Claims{}, Errorf(EUNAUTHORIZED, "invalid token")
	}
	if t.now().Unix() >= c.Expires {
		return Claims{}, Errorf(EUNAUTHORIZED, "token expired")
	}
	return c, nil
}

// MAC returns the hex-free base64 HMAC of msg under the signer's key, for other signed values (CSRF).
func (t *Tokens) MAC(msg string) string { return t.mac("x:" + msg) }

func (t *Tokens) mac(payload string) string {
	m := hmac.New(sha256.New, t.secret)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
