package redpacket

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// DefaultExpiry applies when expires_in is left out.
const DefaultExpiry = 24 * time.Hour

// MaxExpiry is model.RedPacketLifeSeconds' ceiling (the other bounds are
// db/model/limits.go's too: RedPacketTitle, RedPacketTotalCents, RedPacketCount).
var MaxExpiry = time.Duration(model.RedPacketLifeSeconds.Max) * time.Second

// Validate checks a new red packet against the rules (trimming its title)
// and returns its expiry duration; the error names every field at fault.
// A packet that passes can always be split.
func Validate(in *model.NewRedPacket) (time.Duration, error) {
	f := db.FieldErrors{}
	in.Title = strings.TrimSpace(in.Title)
	if in.Title == "" {
		f["title"] = "is required"
	} else if int64(utf8.RuneCountInString(in.Title)) > model.RedPacketTitle.Max {
		f["title"] = fmt.Sprintf("must be at most %d characters", model.RedPacketTitle.Max)
	} else if p := db.TextProblem(in.Title, int(model.RedPacketTitle.Max), false); p != "" {
		f["title"] = p
	}
	if b := model.RedPacketTotalCents; !b.Has(in.TotalCents) {
		f["total_cents"] = fmt.Sprintf("must be between %d and %d cents", b.Min, b.Max)
	}
	if b := model.RedPacketCount; !b.Has(in.Count) {
		f["count"] = fmt.Sprintf("must be between %d and %d", b.Min, b.Max)
	}
	sized := f["total_cents"] == "" && f["count"] == "" // the split's checks need both
	switch in.Mode {
	case model.RedPacketRandom:
		if sized && in.TotalCents < in.Count {
			f["total_cents"] = fmt.Sprintf("must be at least 1 cent per share in a random packet (%d cents for %d shares)", in.Count, in.Count)
		}
	case model.RedPacketFixed:
		if sized && in.TotalCents%in.Count != 0 {
			f["total_cents"] = fmt.Sprintf("must be divisible by the count in a fixed packet (%d cents over %d shares leaves %d)", in.TotalCents, in.Count, in.TotalCents%in.Count)
		}
	default:
		f["mode"] = "must be random or fixed"
	}
	d := DefaultExpiry
	if in.ExpiresIn != nil {
		var err error
		if d, err = time.ParseDuration(*in.ExpiresIn); err != nil {
			f["expires_in"] = "must be a duration such as 30m or 24h"
		} else if d < time.Second || d > MaxExpiry {
			f["expires_in"] = fmt.Sprintf("must be between 1s and %s", MaxExpiry)
		}
	}
	if err := f.Err(); err != nil {
		return 0, err
	}
	return d, nil
}

// Int64Source is a source of random numbers; *math/rand/v2.Rand is one.
type Int64Source interface {
	// Int64N returns a uniform number in [0, n); n > 0.
	Int64N(n int64) int64
}

// Split divides total cents into count shares in grab order.
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
func Split(total, count int64, mode string, rnd Int64Source) []int64 {
	shares := make([]int64, count)
	if mode == model.RedPacketFixed {
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
