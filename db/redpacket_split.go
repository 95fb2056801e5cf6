package db

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Red packet modes.
const (
	RedPacketRandom = "random" // double-mean split: shares differ, each at least 1 cent
	RedPacketFixed  = "fixed"  // equal shares
)

// Limits of a red packet.
const (
	MaxRedPacketCount  = 100_000
	MaxRedPacketCents  = 100_000_000 // one million in the currency, like any amount
	MaxRedPacketTitle  = 100
	MaxRedPacketExpiry = 30 * 24 * time.Hour
	// DefaultRedPacketExpiry applies when expires_in is left out.
	DefaultRedPacketExpiry = 24 * time.Hour
)

// NewRedPacket is what a merchant asks for.
type NewRedPacket struct {
	Title      string `json:"title"`
	TotalCents int64  `json:"total_cents"`
	Count      int64  `json:"count"`
	Mode       string `json:"mode"`
	ExpiresIn  string `json:"expires_in"` // a Go duration; empty means DefaultRedPacketExpiry
}

// Validate checks a new red packet against the rules and returns its expiry
// duration; the error names the first field at fault. A packet that passes
// can always be split.
func (in *NewRedPacket) Validate() (time.Duration, error) {
	in.Title = strings.TrimSpace(in.Title)
	if in.Title == "" {
		return 0, FieldErrorf("title", "title is required")
	} else if utf8.RuneCountInString(in.Title) > MaxRedPacketTitle {
		return 0, FieldErrorf("title", "title must be at most %d characters", MaxRedPacketTitle)
	} else if fe := CheckText("title", in.Title, MaxRedPacketTitle, false); fe != nil {
		return 0, fe
	}
	if in.TotalCents < 1 || in.TotalCents > MaxRedPacketCents {
		return 0, FieldErrorf("total_cents", "total must be between 1 cent and %d cents", int64(MaxRedPacketCents))
	}
	if in.Count < 1 || in.Count > MaxRedPacketCount {
		return 0, FieldErrorf("count", "count must be between 1 and %d", MaxRedPacketCount)
	}
	switch in.Mode {
	case RedPacketRandom:
		if in.TotalCents < in.Count {
			return 0, FieldErrorf("total_cents", "a random packet needs at least 1 cent per share (%d cents for %d shares)", in.Count, in.Count)
		}
	case RedPacketFixed:
		if in.TotalCents%in.Count != 0 {
			return 0, FieldErrorf("total_cents", "a fixed packet needs a total divisible by the count (%d cents over %d shares leaves %d)", in.TotalCents, in.Count, in.TotalCents%in.Count)
		}
	default:
		return 0, FieldErrorf("mode", "mode must be random or fixed")
	}
	if in.ExpiresIn == "" {
		return DefaultRedPacketExpiry, nil
	}
	d, err := time.ParseDuration(in.ExpiresIn)
	if err != nil {
		return 0, FieldErrorf("expires_in", "expires_in must be a duration such as 30m or 24h")
	}
	if d < time.Second || d > MaxRedPacketExpiry {
		return 0, FieldErrorf("expires_in", "expires_in must be between 1s and %s", MaxRedPacketExpiry)
	}
	return d, nil
}

// Int64Source is a source of random numbers; *math/rand/v2.Rand is one.
type Int64Source interface {
	// Int64N returns a uniform number in [0, n); n > 0.
	Int64N(n int64) int64
}

// SplitRedPacket divides total cents into count shares in grab order.
//
// fixed: equal shares (total must be divisible by count).
//
// random: the double-mean method. Each share but the last is uniform in
// [1, 2·M/n], where M cents remain for n shares, and never so large that a
// later share would get less than 1 cent; the last share takes what is left.
// Every share therefore has the same expected value M/n, so grabbing early
// is no advantage, and no share exceeds twice the mean of what remained.
//
// The input must have passed Validate.
func SplitRedPacket(total, count int64, mode string, rnd Int64Source) []int64 {
	shares := make([]int64, count)
	if mode == RedPacketFixed {
		for i := range shares {
			shares[i] = total / count
		}
		return shares
	}
	left := total
	for i := int64(0); i < count-1; i++ {
		n := count - i
		hi := 2 * left / n
		if most := left - (n - 1); hi > most {
			hi = most
		}
		shares[i] = 1 + rnd.Int64N(hi)
		left -= shares[i]
	}
	shares[count-1] = left
	return shares
}
