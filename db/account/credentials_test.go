package account_test

import (
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/model"
)

// Credentials that break a rule come back as an invalid-input error naming
// each field at fault, with messages that read after the field's name.
func TestValidateCredentials(t *testing.T) {
	for _, tt := range []struct {
		name, username, password string
		want                     db.FieldErrors
	}{
		{"fine", "alice_1", "password123", nil},
		{"short name", "al", "password123", db.FieldErrors{"username": "must be 3–32 letters, digits or underscores"}},
		{"name with a space", "al ice", "password123", db.FieldErrors{"username": "must be 3–32 letters, digits or underscores"}},
		{"short password", "alice", "short", db.FieldErrors{"password": "must be 8 to 72 characters"}},
		{"73-byte password", "alice", string(make([]byte, 73)), db.FieldErrors{"password": "must be 8 to 72 characters"}},
		{"both", "a", "b", db.FieldErrors{"username": "must be 3–32 letters, digits or underscores", "password": "must be 8 to 72 characters"}},
	} {
		err := account.ValidateCredentials(tt.username, tt.password)
		got := db.FieldsOf(err)
		if len(got) != len(tt.want) || (err != nil && db.ErrorCode(err) != db.EINVALID) {
			t.Errorf("%s: %v, want fields %v", tt.name, err, tt.want)
			continue
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: field %s: (-want +got)\n- %s\n+ %s", tt.name, k, v, got[k])
			}
		}
	}
}

// Creating a user with an unknown role and changing to a bad password name
// the field at fault; a wrong current password is unauthorized, and the old
// password stops working once changed.
func TestUserFieldsAndPasswordChange(t *testing.T) {
	e := newEnv(t)
	if _, err := e.s.CreateUser(e.ctx, "bob_1", "password123", "root"); db.FieldOf(err) != "role" {
		t.Fatalf("unknown role: %v, want a role field error", err)
	}
	if _, err := e.s.CreateUser(e.ctx, "Merchant1", "password123", "user"); db.ErrorCode(err) != db.ECONFLICT {
		t.Fatalf("a taken name in other case: %v, want conflict", err)
	}
	id := e.merchant.ID
	if _, err := e.s.ChangePassword(e.ctx, id, "password123", "short"); db.FieldOf(err) != "new_password" {
		t.Fatalf("short new password: %v, want a new_password field error", err)
	}
	if _, err := e.s.ChangePassword(e.ctx, id, "wrong-password", "password456"); db.ErrorCode(err) != db.EUNAUTHORIZED {
		t.Fatalf("wrong current password: %v, want unauthorized", err)
	}
	if _, err := e.s.ChangePassword(e.ctx, id, "password123", "password456"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Authenticate(e.ctx, "merchant1", "password123"); db.ErrorCode(err) != db.EUNAUTHORIZED {
		t.Fatalf("old password after the change: %v, want unauthorized", err)
	}
	if u, err := e.s.Authenticate(e.ctx, "merchant1", "password456"); err != nil || u.ID != id {
		t.Fatalf("new password: %+v, %v", u, err)
	}
}

// Sign-ups racing for one name, in any case, create exactly one account; every
// other is a conflict, never an internal error. On PostgreSQL they run side
// by side and the unique index decides.
func TestSignUpRaceOneWinner(t *testing.T) {
	e := newEnv(t)
	const racers = 100
	e.s.Hashes = account.NewHashPool(racers, racers, time.Minute) // the race is the database's, not the hash pool's
	start := make(chan struct{})
	errs := make(chan error, racers)
	for i := 0; i < racers; i++ {
		go func(i int) {
			<-start
			name := "racer_x"
			if i%2 == 1 {
				name = "Racer_X"
			}
			_, err := e.s.CreateUser(e.ctx, name, "password123", model.RoleUser)
			errs <- err
		}(i)
	}
	close(start)
	won := 0
	for i := 0; i < racers; i++ {
		switch err := <-errs; db.ErrorCode(err) {
		case "":
			won++
		case db.ECONFLICT:
		default:
			t.Errorf("racing sign-up: %v, want success or conflict", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d sign-ups won, want 1", won)
	}
}
