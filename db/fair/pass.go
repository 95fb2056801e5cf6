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

// What a shopper brings to a grab besides the account (goods.Pass), both
// checked in memory: a proof of work (X-Pow, here first) and a waiting
// room's admission (X-Admission, below).
//
// Proof of work: a goods' pow_bits asks each grab (queue join, raffle
// entry) for work worth about 2^pow_bits SHA-256 digests, given as
// `solutions` nonces n, each distinct, such that SHA-256(challenge + n)
// starts with `bits` zero bits: several easier solutions in place of one
// harder one, so a shopper's wait depends less on luck (the spread of the
// sum of four draws is half that of one). The challenge is stateless and
// bound: it names the goods, the shopper it was given to, the bits, the
// solutions and an expiry at most PowTTL ahead, with random bytes, and is
// signed with the server's key; checking a solution is one HMAC and a
// SHA-256 per nonce (BenchmarkCheckPow). Each challenge is good once: its
// random part is set in Redis (fair.go) until it expires.
//
// A fleet cannot stockpile: a challenge is bound to one signed-in account
// and lives a minute, and for first-come goods it is given only from
// PowLead before the start (fair.go), so at the open a bot has solved at
// most what a shopper's browser solved in the same half minute.
const (
	// MaxPowBits is the most a merchant may ask (and the automatic raise reaches).
	MaxPowBits = model.MaxPowBits
	// DefaultPowBits is what the merchant's form suggests: solved in the
	// browser in about a quarter of a second at the median (measured by
	// TestFairBrowserPowGrab).
	DefaultPowBits = 14
	// PowTTL is how long a challenge may be solved and sent.
	PowTTL = time.Minute
	// PowLead is how long before a first-come sale's start its challenges are given.
	PowLead = 30 * time.Second
	// powSplit is log2 of the solutions asked of goods whose level allows
	// it: 2 → four solutions of bits−2 each.
	powSplit = 2
	// maxNonce bounds each nonce a client may send.
	maxNonce = 32
	// maxChallenge bounds the challenge a client may send back.
	maxChallenge = 128
)

// Challenge is a proof-of-work challenge as GET /api/pow answers it.
type Challenge struct {
	Algorithm string    `json:"algorithm"`
	Challenge string    `json:"challenge"`
	Bits      int       `json:"bits"`      // zero bits each solution's digest starts with
	Solutions int       `json:"solutions"` // distinct nonces to send (0 when no proof is asked)
	ExpiresAt time.Time `json:"expires_at"`
	Signature string    `json:"signature"`
}

// powShape splits a level (total work 2^level) into solutions of bits
// each: levels of 2·powSplit+2 and more ask 2^powSplit solutions of
// level−powSplit bits, lower levels one solution of level bits.
func powShape(level int) (bits, solutions int) {
	if level <= 0 {
		return 0, 0
	}
	if level >= 2*powSplit+2 {
		return level - powSplit, 1 << powSplit
	}
	return level, 1
}

// newChallenge makes a signed challenge for goods and user at level, good until expires.
func newChallenge(key []byte, goodsID, userID int64, level int, expires time.Time) Challenge {
	bits, n := powShape(level)
	var r [16]byte
	rand.Read(r[:])
	exp := expires.UnixMilli()
	c := strings.Join([]string{strconv.FormatInt(goodsID, 10), strconv.FormatInt(userID, 10), strconv.Itoa(bits),
		strconv.Itoa(n), strconv.FormatInt(exp, 10), hex.EncodeToString(r[:])}, ".")
	return Challenge{Algorithm: "SHA-256", Challenge: c, Bits: bits, Solutions: n,
		ExpiresAt: time.UnixMilli(exp).UTC(), Signature: powSignature(key, c)}
}

// powSignature is the hex of the first 16 bytes of HMAC-SHA256(key, challenge).
func powSignature(key []byte, challenge string) string {
	return hex.EncodeToString(mac16(key, "", challenge))
}

// mac16 is the first 16 bytes of HMAC-SHA256(key, label + msg): what signs a
// proof-of-work challenge (no label) and a waiting room's admission
// (below), each checked in memory by signedBy.
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
	level   int // the work it proves: its bits, plus log2 of its solutions (powShape)
}

// checkPow checks an X-Pow header "challenge:nonce[,nonce…]:signature" sent
// by user for goods at now: signed with key, for these goods and this user,
// not expired, and solved with as many distinct nonces as it asks. ok is
// false for anything else; it touches nothing but the CPU.
func checkPow(key []byte, header string, goodsID, userID int64, now time.Time) (solvedPow, bool) {
	c, rest, ok := strings.Cut(header, ":")
	if !ok || len(c) > maxChallenge {
		return solvedPow{}, false
	}
	list, sig, ok := strings.Cut(rest, ":")
	if !ok || len(sig) != 32 {
		return solvedPow{}, false
	}
	f := strings.Split(c, ".")
	if len(f) != 6 || f[0] != strconv.FormatInt(goodsID, 10) || f[1] != strconv.FormatInt(userID, 10) || len(f[5]) != 32 {
		return solvedPow{}, false
	}
	if !signedBy(key, "", c, sig) {
		return solvedPow{}, false
	}
	need, err1 := strconv.Atoi(f[2])
	n, err2 := strconv.Atoi(f[3])
	exp, err3 := strconv.ParseInt(f[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || n < 1 || n > 1<<powSplit || now.UnixMilli() >= exp {
		return solvedPow{}, false
	}
	nonces := strings.Split(list, ",")
	if len(nonces) != n {
		return solvedPow{}, false
	}
	for i, x := range nonces {
		if len(x) == 0 || len(x) > maxNonce || leadingZeroBits(sha256.Sum256([]byte(c+x))) < need {
			return solvedPow{}, false
		}
		for _, y := range nonces[:i] {
			if x == y {
				return solvedPow{}, false
			}
		}
	}
	// The work is the challenge's whole: n solutions of need bits are worth
	// 2^need·n digests, the level powShape split (a floor compares with it,
	// never with one nonce's bits).
	return solvedPow{nonce: f[5], expires: time.UnixMilli(exp), level: need + bits.Len(uint(n)) - 1}, true
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

// solvePow finds n distinct nonces for a challenge: what the browser's Web
// Worker (static/pow.js) does, for tests, the bench's bots and command-line clients.
func solvePow(challenge string, bits, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		x := strconv.Itoa(i)
		if leadingZeroBits(sha256.Sum256([]byte(challenge+x))) >= bits {
			out = append(out, x)
		}
	}
	return out
}

// SolvePow solves c and returns the X-Pow header that sends it.
func SolvePow(c Challenge) string {
	return c.Challenge + ":" + strings.Join(solvePow(c.Challenge, c.Bits, max(c.Solutions, 1)), ",") + ":" + c.Signature
}

// Admissions to a waiting room: a token names the goods, the shopper and
// the moment it stops being good, signed with the server's key (the proof
// of work's, under its own label), so any web process checks a grab's
// X-Admission with one HMAC and no Redis round trip.

// admissionToken is the X-Admission token for userID's grab of goodsID until until.
func admissionToken(key []byte, goodsID, userID int64, until time.Time) string {
	body := strconv.FormatInt(goodsID, 10) + "." + strconv.FormatInt(userID, 10) + "." + strconv.FormatInt(until.UnixMilli(), 10)
	return body + "." + admissionSignature(key, body)
}

// admissionLabel keeps an admission's signature apart from a proof-of-work
// challenge's, which the same key signs.
const admissionLabel = "seckill admission\x00"

func admissionSignature(key []byte, body string) string {
	return hex.EncodeToString(mac16(key, admissionLabel, body))
}

// checkAdmission tells whether token admits userID to grab goodsID at now.
func checkAdmission(key []byte, token string, goodsID, userID int64, now time.Time) bool {
	if int64(len(token)) > model.Admission.Max {
		return false
	}
	i := strings.LastIndexByte(token, '.')
	if i < 0 || len(token)-i-1 != 32 {
		return false
	}
	body, sig := token[:i], token[i+1:]
	f := strings.Split(body, ".")
	if len(f) != 3 || f[0] != strconv.FormatInt(goodsID, 10) || f[1] != strconv.FormatInt(userID, 10) {
		return false
	}
	until, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || now.UnixMilli() >= until {
		return false
	}
	return signedBy(key, admissionLabel, body, sig)
}
