package fair

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/db/model"
)

// Proof of work: a goods' pow_bits asks each grab for a nonce such that
// SHA-256(challenge + nonce) starts with that many zero bits. The challenge
// is stateless: it names the goods, the bits and its expiry, with random
// bytes, and is signed with the server's key; checking a solution is one
// HMAC and one SHA-256 (BenchmarkCheckPow). Each solution is good once: its
// random part is set in Redis (fair.go) until the challenge expires.
const (
	// MaxPowBits is the most a merchant may ask (and the automatic raise reaches).
	MaxPowBits = model.MaxPowBits
	// DefaultPowBits is what the merchant's form suggests: solved in the
	// browser in about a quarter of a second at the median (measured by
	// TestBrowserPowGrab).
	DefaultPowBits = 14
	// PowTTL is how long a challenge may be solved and sent.
	PowTTL = 2 * time.Minute
	// maxNonce bounds the nonce a client may send.
	maxNonce = 64
)

// Challenge is a proof-of-work challenge as GET /api/pow answers it.
type Challenge struct {
	Algorithm string    `json:"algorithm"`
	Challenge string    `json:"challenge"`
	Bits      int       `json:"bits"`
	ExpiresAt time.Time `json:"expires_at"`
	Signature string    `json:"signature"`
}

// newChallenge makes a signed challenge for goods asking bits zero bits, good until expires.
func newChallenge(key []byte, goodsID int64, bits int, expires time.Time) Challenge {
	var r [16]byte
	rand.Read(r[:])
	exp := expires.UnixMilli()
	c := strconv.FormatInt(goodsID, 10) + "." + strconv.Itoa(bits) + "." + strconv.FormatInt(exp, 10) + "." + hex.EncodeToString(r[:])
	return Challenge{Algorithm: "SHA-256", Challenge: c, Bits: bits, ExpiresAt: time.UnixMilli(exp).UTC(), Signature: powSignature(key, c)}
}

// powSignature is the hex of the first 16 bytes of HMAC-SHA256(key, challenge).
func powSignature(key []byte, challenge string) string {
	return hex.EncodeToString(mac16(key, "", challenge))
}

// mac16 is the first 16 bytes of HMAC-SHA256(key, label + msg): what signs a
// proof-of-work challenge (no label) and a waiting room's admission
// (queue_token.go), each checked in memory by signedBy.
func mac16(key []byte, label, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	m.Write([]byte(msg))
	return m.Sum(nil)[:16]
}

// signedBy tells whether sig (hex) is mac16's of label and msg, comparing in constant time.
func signedBy(key []byte, label, msg, sig string) bool {
	want, err := hex.DecodeString(sig)
	return err == nil && hmac.Equal(mac16(key, label, msg), want)
}

// solvedPow is a checked solution: the challenge's random part (what makes
// it once only) and its expiry.
type solvedPow struct {
	nonce   string // the challenge's random part
	expires time.Time
}

// checkPow checks an X-Pow header "challenge:nonce:signature" for goods at
// now: signed with key, for these goods, not expired, and solved. ok is
// false for anything else; it touches nothing but the CPU.
func checkPow(key []byte, header string, goodsID int64, now time.Time) (solvedPow, bool) {
	c, rest, ok := strings.Cut(header, ":")
	if !ok {
		return solvedPow{}, false
	}
	nonce, sig, ok := strings.Cut(rest, ":")
	if !ok || len(nonce) == 0 || len(nonce) > maxNonce || len(sig) != 32 || len(c) > 100 {
		return solvedPow{}, false
	}
	f := strings.Split(c, ".")
	if len(f) != 4 || f[0] != strconv.FormatInt(goodsID, 10) || len(f[3]) != 32 {
		return solvedPow{}, false
	}
	if !signedBy(key, "", c, sig) {
		return solvedPow{}, false
	}
	need, err1 := strconv.Atoi(f[1])
	exp, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || now.UnixMilli() >= exp {
		return solvedPow{}, false
	}
	if leadingZeroBits(sha256.Sum256([]byte(c+nonce))) < need {
		return solvedPow{}, false
	}
	return solvedPow{nonce: f[3], expires: time.UnixMilli(exp)}, true
}

// leadingZeroBits counts the zero bits a digest starts with.
func leadingZeroBits(d [32]byte) int {
	n := 0
	for _, b := range d {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// solvePow finds a nonce for a challenge: what the browser's Web Worker
// (static/pow.js) does, for tests and command-line clients.
func solvePow(challenge string, bits int) string {
	for i := 0; ; i++ {
		n := strconv.Itoa(i)
		if leadingZeroBits(sha256.Sum256([]byte(challenge+n))) >= bits {
			return n
		}
	}
}

// SolvePow finds a nonce for c and returns the X-Pow header that sends it.
func SolvePow(c Challenge) string {
	return c.Challenge + ":" + solvePow(c.Challenge, c.Bits) + ":" + c.Signature
}
