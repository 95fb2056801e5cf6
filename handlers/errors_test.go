package handlers

import (
	"errors"
	"testing"

	"github.com/seckill/seckill/db"
)

// Every code the contract names maps to the contract's status, and a
// refusal a form shows is answered with the form's status; the rest are the
// error handler's.
func TestEveryCodeHasItsStatus(t *testing.T) {
	want := map[string]int{
		db.EINVALID: 400, db.EUNAUTHORIZED: 401, db.EFORBIDDEN: 403, db.ENOTFOUND: 404,
		db.ECONFLICT: 409, db.ESOLDOUT: 409, db.ELIMITREACHED: 409, db.EALREADY: 409, db.ENOTSTARTED: 409,
		db.EENDED: 409, db.EEXPIRED: 409, db.ETOOLATE: 409, db.ENOTCONFIGURED: 409,
		db.ERATELIMITED: 429, db.ETOOLARGE: 413, db.EUNAVAILABLE: 503, db.EINTERNAL: 500,
		db.EPOWREQUIRED: 403, db.EPOWINVALID: 403, db.ENOTADMITTED: 403, db.EQUEUECLOSED: 409, db.ENOTDRAWN: 409,
	}
	for code, status := range want {
		if got := StatusOf(code); got != status {
			t.Errorf("%s: status %d, want %d", code, got, status)
		}
	}
	if len(Codes()) != len(want) {
		t.Errorf("the table has %d codes, the contract %d", len(Codes()), len(want))
	}
	if got := StatusOf("no_such_code"); got != 500 {
		t.Errorf("an unknown code: %d, want 500", got)
	}

	for _, tc := range []struct {
		err    error
		status int
		shown  bool
	}{
		{db.FieldErrorf("title", "must not be empty"), 422, true},
		{db.Errorf(db.EUNAUTHORIZED, "wrong password"), 401, true},
		{db.Errorf(db.ECONFLICT, "username taken"), 409, true},
		{db.ErrNotFound, 0, false},
		{db.ErrForbidden, 0, false},
		{db.ErrRateLimited, 0, false},
		{db.ErrUnavailable, 0, false},
		{errors.New("disk on fire"), 0, false},
		{nil, 0, false},
	} {
		if status, shown := refusal(tc.err); status != tc.status || shown != tc.shown {
			t.Errorf("refusal(%v) = %d, %v; want %d, %v", tc.err, status, shown, tc.status, tc.shown)
		}
	}
}
