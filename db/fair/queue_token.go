package fair

import (
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

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

// checkSaleMode refuses a grab of a raffle's goods (not_drawn: its units go
// to the draw's winners, raffle.go) until the draw left units no entry can
// claim, sold first come (raffle.LeftoversOnSale), and of goods sold through a waiting room
// unless admission is a valid token for the shopper (settings from the grab
// path's cache; the token checked in memory). Other goods ignore it.
func (s *Service) checkSaleMode(sn *fairSnap, userID, goodsID int64, admission string) error {
	if sn.raffle {
		if sn.leftovers {
			return nil
		}
		return db.ErrNotDrawn
	}
	if !sn.queue {
		return nil
	}
	if admission == "" || !checkAdmission(s.powKey(), admission, goodsID, userID, s.Now()) {
		return db.ErrNotAdmitted
	}
	return nil
}
