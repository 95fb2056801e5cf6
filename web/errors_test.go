package web

import (
	"testing"

	"github.com/seckill/seckill/db"
)

// Every code the contract names maps to the contract's status.
func TestEveryCodeHasItsStatus(t *testing.T) {
	want := map[string]int{
		db.EINVALID: 400, db.EUNAUTHORIZED: 401, db.EFORBIDDEN: 403, db.ENOTFOUND: 404,
		db.ECONFLICT: 409, db.ESOLDOUT: 409, db.ELIMITREACHED: 409, db.EALREADY: 409, db.ENOTSTARTED: 409,
		db.EENDED: 409, db.EEXPIRED: 409, db.ETOOLATE: 409, db.ENOTCONFIGURED: 409,
		db.ERATELIMITED: 429, db.EINTERNAL: 500, db.ETOOLARGE: 413, db.EUNAVAILABLE: 503,
	}
	for code, status := range want {
		if got := statusOf[code]; got != status {
			t.Errorf("%s: status %d, want %d", code, got, status)
		}
	}
	if len(statusOf) != len(want) {
		t.Errorf("statusOf has %d codes, the contract %d", len(statusOf), len(want))
	}
}
