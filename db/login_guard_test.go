package db_test

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

func TestSignInBacksOffPerAccount(t *testing.T) {
	e := newStoreEnv(t)
	ctx, from := e.ctx, netip.MustParseAddr("203.0.113.7")
	if _, err := e.s.CreateUser(ctx, "victim", "right-password", model.RoleUser); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 5; i++ {
		if _, err := e.s.SignIn(ctx, "victim", "guess", from); db.ErrorCode(err) != db.EUNAUTHORIZED {
			t.Fatalf("failure %d: %v, want unauthorized", i, err)
		}
	}
	// The fifth failure locks the account for a second, the next for two.
	_, err := e.s.SignIn(ctx, "victim", "guess", from)
	var de *db.Error
	if db.ErrorCode(err) != db.ERATELIMITED || !asError(err, &de) || de.RetryAfter != time.Second {
		t.Fatalf("fifth failure: %v, want rate_limited for 1s", err)
	}
	// While locked even the right password is refused, from any address, before bcrypt.
	if _, err := e.s.SignIn(ctx, "Victim", "right-password", netip.MustParseAddr("198.51.100.1")); db.ErrorCode(err) != db.ERATELIMITED {
		t.Fatalf("locked account: %v, want rate_limited", err)
	}
	e.clk.Advance(time.Second)
	if _, err := e.s.SignIn(ctx, "victim", "guess", from); !asError(err, &de) || de.RetryAfter != 2*time.Second {
		t.Fatalf("sixth failure: %v, want rate_limited for 2s", err)
	}
	e.clk.Advance(2 * time.Second)
	if _, err := e.s.SignIn(ctx, "victim", "right-password", from); err != nil {
		t.Fatalf("after the lock: %v", err)
	}
	// A success clears the account's count.
	for i := 1; i < 5; i++ {
		if _, err := e.s.SignIn(ctx, "victim", "guess", from); db.ErrorCode(err) != db.EUNAUTHORIZED {
			t.Fatalf("after success, failure %d: %v, want unauthorized", i, err)
		}
	}
}

func TestSignInBacksOffPerAddress(t *testing.T) {
	e := newStoreEnv(t)
	ctx, from := e.ctx, netip.MustParseAddr("203.0.113.9")
	// One address trying many accounts: 20 failures are free, the next locks the address.
	var err error
	for i := 0; i < 20; i++ {
		_, err = e.s.SignIn(ctx, "nobody"+string(rune('a'+i)), "guess", from)
	}
	if db.ErrorCode(err) != db.ERATELIMITED {
		t.Fatalf("20th failure from one address: %v, want rate_limited", err)
	}
	if _, err := e.s.SignIn(ctx, "merchant1", "password123", from); db.ErrorCode(err) != db.ERATELIMITED {
		t.Fatalf("locked address: %v, want rate_limited", err)
	}
	if _, err := e.s.SignIn(ctx, "merchant1", "password123", netip.MustParseAddr("203.0.113.10")); err != nil {
		t.Fatalf("another address: %v", err)
	}
}

func TestHashPoolBoundsConcurrencyAndQueue(t *testing.T) {
	p := db.NewHashPool(1, 2, time.Hour)
	ctx := context.Background()
	hash, err := p.Generate(ctx, "password123", 4)
	if err != nil {
		t.Fatal(err)
	}
	release := p.Hold() // the one slot is busy
	var refused, matched atomic.Int32
	var start, done sync.WaitGroup
	start.Add(1)
	for i := 0; i < 50; i++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			ok, err := p.Compare(ctx, string(hash), "password123")
			if db.ErrorCode(err) == db.EUNAVAILABLE {
				refused.Add(1)
			} else if ok {
				matched.Add(1)
			}
		}()
	}
	start.Done()
	for deadline := time.Now().Add(time.Minute); refused.Load() < 48; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) { // the queue holds two; the other 48 must be refused at once
			t.Fatalf("only %d of 50 refused while the slot was held; the queue is not bounded", refused.Load())
		}
	}
	release()
	done.Wait()
	if r, m := refused.Load(), matched.Load(); r != 48 || m != 2 {
		t.Fatalf("refused %d, matched %d; want 48 refused at once and the 2 queued served", r, m)
	}
}

func asError(err error, target **db.Error) bool {
	e, ok := err.(*db.Error)
	if ok {
		*target = e
	}
	return ok
}
