package account_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/model"
)

// startLocales follows the picks as a web process does, over e's stores.
func startLocales(t *testing.T, e *env, limit int) *account.Service {
	t.Helper()
	s := account.New(e.s.Backend)
	s.Locales = account.NewLocales(e.s.Redis, e.s.SQL.R)
	if limit > 0 {
		s.Locales.SetLimit(limit)
	}
	if err := s.Locales.Open(e.ctx); err != nil {
		t.Fatal(err)
	}
	s.Locales.Loop().Start()
	t.Cleanup(s.Locales.Close)
	return s
}

// A web process holds every pick the store has, so an account that picked
// none (most of a sale's crowd) is answered with no read, and one that
// picked is answered from memory; a pick made on another process reaches
// it by its message, still with no read.
func TestLocalesHoldEveryPick(t *testing.T) {
	e := newEnv(t)
	var users []*model.User
	for i := range 40 {
		u, err := e.s.CreateUser(e.ctx, fmt.Sprintf("shopper%d", i), "password123", model.RoleUser)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	picker, newcomer := users[0], users[1]
	if err := e.s.SetLocale(e.ctx, picker.ID, "zh-CN"); err != nil {
		t.Fatal(err)
	}
	web := startLocales(t, e, 0)
	for range 3 {
		for _, u := range users {
			want := ""
			if u.ID == picker.ID {
				want = "zh-CN"
			}
			if got, err := web.Locale(e.ctx, u.ID); err != nil || got != want {
				t.Fatalf("user %d's language: %q, %v; want %q", u.ID, got, err, want)
			}
		}
	}
	if n := web.Locales.Reads.Load(); n != 0 {
		t.Fatalf("%d accounts' languages asked three times each read the store %d times, want none", len(users), n)
	}
	if err := e.s.SetLocale(e.ctx, newcomer.ID, "en"); err != nil { // on another process
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for got, _ := web.Locale(e.ctx, newcomer.ID); got != "en"; got, _ = web.Locale(e.ctx, newcomer.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("the pick made on another process never arrived: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := web.Locales.Reads.Load(); n != 0 {
		t.Fatalf("an announced pick was read one account at a time (%d reads)", n)
	}
	// Its own pick is taken at once.
	if err := web.SetLocale(e.ctx, picker.ID, "en"); err != nil {
		t.Fatal(err)
	}
	if got, _ := web.Locale(e.ctx, picker.ID); got != "en" {
		t.Fatalf("the process's own pick: %q, want en at once", got)
	}
}

// Past the bound the set is not held whole: each account is read from the
// store the first time it is asked for, then kept; absent is not taken
// for "none".
func TestLocalesPastTheBoundReadEachOnce(t *testing.T) {
	e := newEnv(t)
	var users []*model.User
	for i := range 3 {
		u, err := e.s.CreateUser(e.ctx, fmt.Sprintf("picker%d", i), "password123", model.RoleUser)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.SetLocale(e.ctx, u.ID, "zh-CN"); err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	web := startLocales(t, e, 2)
	users = users[:2] // what is kept one at a time has the same bound
	for range 3 {
		for _, u := range users {
			if got, err := web.Locale(e.ctx, u.ID); err != nil || got != "zh-CN" {
				t.Fatalf("user %d's language past the bound: %q, %v; want zh-CN", u.ID, got, err)
			}
		}
	}
	if n := web.Locales.Reads.Load(); n != int64(len(users)) {
		t.Fatalf("%d accounts asked three times each were read %d times, want once each", len(users), n)
	}
}
