package handlers

import (
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/views"
)

// redPacketExpiresIn turns the red packet form's "Expires in" into the API's
// expires_in: a listed duration (or any other posted) as it is; the date and
// time choice as the whole seconds from now until then, read in the
// browser's zone (tzOffset, unless the value carries its own offset).
func redPacketExpiresIn(choice, at, tzOffset string, now time.Time) (string, error) {
	if choice != views.ExpiresAtChoice {
		return choice, nil
	}
	if at == "" {
		return "", db.FieldErrorf("expires_in", "needs the date and time it expires")
	}
	t, err := parseLocalTime(at, tzOffsetMinutes(tzOffset))
	if err != nil {
		return "", db.FieldErrorf("expires_in", "must be a date and time")
	}
	d := t.Sub(now).Truncate(time.Second)
	if d < time.Second {
		return "", db.FieldErrorf("expires_in", "must be a date and time in the future")
	}
	if d > maxRedPacketLife {
		return "", db.FieldErrorf("expires_in", "must be within 30 days from now")
	}
	return d.String(), nil
}

// maxRedPacketLife is the longest expires_in the red packets accept
// (docs/openapi.yaml, NewRedPacket: at most 720h), said here to refuse a date in words.
const maxRedPacketLife = 720 * time.Hour
