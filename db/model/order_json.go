package model

import (
	"encoding/json"
	"strconv"
	"time"
)

// MarshalJSON encodes the order exactly as encoding/json would from its
// tags, without reflection: every winning grab encodes its order twice (the
// answer and the owner's live event). TestOrderJSONMatchesTags keeps the two
// equal, and fails when a field is added here but not there.
func (o Order) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 256+len(o.GoodsTitle)+len(o.Failure))
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, o.ID, 10)
	b = append(b, `,"goods_id":`...)
	b = strconv.AppendInt(b, o.GoodsID, 10)
	b = append(b, `,"user_id":`...)
	b = strconv.AppendInt(b, o.UserID, 10)
	b = append(b, `,"amount_cents":`...)
	b = strconv.AppendInt(b, o.AmountCents, 10)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, o.Status)
	b = append(b, `,"unit":`...)
	b = strconv.AppendInt(b, o.Unit, 10)
	var err error
	for _, f := range [...]struct {
		name string
		t    time.Time
	}{{`,"created_at":`, o.CreatedAt}, {`,"expires_at":`, o.ExpiresAt}, {`,"updated_at":`, o.UpdatedAt}} {
		b = append(b, f.name...)
		if b, err = appendJSONTime(b, f.t); err != nil {
			return nil, err
		}
	}
	if o.GoodsTitle != "" {
		b = append(b, `,"goods_title":`...)
		b = appendJSONString(b, o.GoodsTitle)
	}
	if o.Failure != "" {
		b = append(b, `,"failure":`...)
		b = appendJSONString(b, o.Failure)
	}
	b = append(b, `,"discount_cents":`...)
	b = strconv.AppendInt(b, o.DiscountCents, 10)
	b = append(b, `,"paid_cents":`...)
	b = strconv.AppendInt(b, o.PaidCents, 10)
	if o.UserCouponID != 0 {
		b = append(b, `,"user_coupon_id":`...)
		b = strconv.AppendInt(b, o.UserCouponID, 10)
	}
	for _, f := range [...]struct {
		name string
		t    *time.Time
	}{{`,"paid_at":`, o.PaidAt}, {`,"refunded_at":`, o.RefundedAt}} {
		if f.t == nil {
			continue
		}
		b = append(b, f.name...)
		if b, err = appendJSONTime(b, *f.t); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendJSONTime appends t as time.Time's MarshalJSON writes it.
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		j, err := t.MarshalJSON() // its error, for a year JSON cannot hold
		return append(b, j...), err
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// appendJSONString appends s quoted as encoding/json quotes it: plain
// printable ASCII as is, anything else through encoding/json itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s)
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
