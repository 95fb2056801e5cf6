package model

import (
	"encoding/json"
	"strconv"

	"github.com/seckill/seckill/db"
)

// A Bound is the lowest and the highest value an input may take: a number,
// or a text's length in characters.
type Bound struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

// Has reports whether n is within b.
func (b Bound) Has(n int64) bool { return n >= b.Min && n <= b.Max }

// Text is n as a page writes a bound: thousands grouped by commas
// (10,000,000), up from 10,000.
func Text(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 10_000 && n > -10_000 {
		return s
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}

// The input ceilings, one table: the services' validation and the messages
// of their refusals, the pages' forms (min, max and maxlength attributes),
// the browser's scripts (the forms' data-limits: LimitsJSON) read it, and a
// test (limits_test.go) proves docs/openapi.yaml's bounds agree with it.
var (
	GoodsTitle        = Bound{1, 100}
	GoodsDescription  = Bound{0, 2_000}
	GoodsStock        = Bound{1, 1_000_000}
	GoodsLimitPerUser = Bound{1, 1_000} // 0 (left out) is taken as 1
	GoodsShards       = Bound{1, 8}
	PowBits           = Bound{0, MaxPowBits}
	QueueRate         = Bound{0, 100_000}
	AdmissionSeconds  = Bound{10, 3_600}

	CouponTitle        = Bound{1, 100}
	CouponAmountCents  = Bound{1, 100_000_000} // cents
	CouponPercent      = Bound{1, 99}
	CouponMinSpend     = Bound{0, 100_000_000} // cents
	CouponStock        = Bound{1, 10_000_000}
	CouponLimitPerUser = Bound{1, 1_000}
	CouponValidDays    = Bound{1, 3_650}

	RedPacketTitle       = Bound{1, 100}
	RedPacketTotalCents  = Bound{1, 100_000_000}
	RedPacketCount       = Bound{1, 100_000}
	RedPacketLifeSeconds = Bound{1, 720 * 3600} // expires_in: 1s to 720h (30 days)

	ReminderLead  = Bound{LeadStep, MaxLeadTime} // minutes before the start, in steps of LeadStep
	StockPushMS   = Bound{20, 5_000}
	QueueCodes    = Bound{1, 1_000} // codes one call makes
	QueueCodeNote = Bound{0, 200}
	// RequestKey bounds an Idempotency-Key, an X-Request-ID and a
	// payment's gateway reference: printable characters.
	RequestKey = Bound{1, db.MaxRequestKey}
	QueueCode  = Bound{1, 64}  // a priority code as read (those made are 16 characters)
	Admission  = Bound{1, 120} // an X-Admission (db/fair/pass.go)
	PowProof   = Bound{1, 300} // an X-Pow: its parts' bounds (db/fair/pass.go) keep it below this
)

// MaxPowBits is the most proof of work a merchant may ask of a goods' grab
// (and the automatic raise under attack reaches): leading zero bits, PowBits'
// ceiling, a constant for the proof of work's arithmetic.
const MaxPowBits = 24

// limitsByName names the bounds the scripts read (LimitsJSON).
var limitsByName = map[string]*Bound{
	"goods.title": &GoodsTitle, "goods.description": &GoodsDescription, "goods.stock": &GoodsStock,
	"goods.limit_per_user": &GoodsLimitPerUser, "goods.shards": &GoodsShards, "goods.pow_bits": &PowBits,
	"goods.queue_rate": &QueueRate, "goods.admission_seconds": &AdmissionSeconds,
	"coupon.title": &CouponTitle, "coupon.amount_off": &CouponAmountCents, "coupon.percent_off": &CouponPercent,
	"coupon.min_spend_cents": &CouponMinSpend, "coupon.stock": &CouponStock,
	"coupon.limit_per_user": &CouponLimitPerUser, "coupon.valid_days": &CouponValidDays,
	"redpacket.title": &RedPacketTitle, "redpacket.total_cents": &RedPacketTotalCents,
	"redpacket.count": &RedPacketCount, "redpacket.expires_in_s": &RedPacketLifeSeconds,
}

// LimitsJSON is the bounds whose names start with prefix ("coupon."), as a
// JSON object of name (prefix cut) → {min, max}: a form's data-limits, which
// its script reads.
func LimitsJSON(prefix string) string {
	m := map[string]Bound{}
	for name, b := range limitsByName {
		if len(name) > len(prefix) && name[:len(prefix)] == prefix {
			m[name[len(prefix):]] = *b
		}
	}
	out, _ := json.Marshal(m)
	return string(out)
}
