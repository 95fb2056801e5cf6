package handlers

import (
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
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
	if life := time.Duration(model.RedPacketLifeSeconds.Max) * time.Second; d > life {
		return "", db.FieldErrorf("expires_in", "must be within %d days from now", int(life/(24*time.Hour)))
	}
	return d.String(), nil
}
