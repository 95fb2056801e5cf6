package account_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/model"
)

// startLocales follows the picks as a web process does, over e's stores;
// heard receives each announced pick once the process has taken it.
func startLocales(t *testing.T, e *env, limit int) (s *account.Service, heard <-chan int64) {
	t.Helper()
	s = account.New(e.s.Backend)
	s.Locales = account.NewLocales(e.s.Redis, e.s.SQL.R)
	if limit > 0 {
		s.Locales.SetLimit(limit)
	}
	ch := make(chan int64, 16)
	s.Locales.OnHeard(func(id int64) { ch <- id })
	if err := s.Locales.Open(e.ctx); err != nil {
		t.Fatal(err)
	}
	s.Locales.Loop().Start()
	t.Cleanup(s.Locales.Close)
	return s, ch
}

// users creates n shoppers named prefix0, prefix1, ...
func users(t *testing.T, e *env, prefix string, n int) []*model.User {
	t.Helper()
	var us []*model.User
	for i := range n {
		u, err := e.s.CreateUser(e.ctx, fmt.Sprintf("%s%d", prefix, i), "password123", model.RoleUser)
		if err != nil {
			t.Fatal(err)
		}
		us = append(us, u)
	}
	return us
}

// A web process holds every pick the store has, so an account that picked
// none (most of a sale's crowd) is answered with no read, and one that
// picked is answered from memory; a pick made on another process reaches
// it by its message, still with no read.
func TestLocalesHoldEveryPick(t *testing.T) {
	e := newEnv(t)
	shoppers := users(t, e, "shopper", 40)
	picker, newcomer := shoppers[0], shoppers[1]
	if err := e.s.SetLocale(e.ctx, picker.ID, "zh-CN"); err != nil {
		t.Fatal(err)
	}
	web, heard := startLocales(t, e, 0)
	for range 3 {
		for _, u := range shoppers {
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
		t.Fatalf("%d accounts' languages asked three times each read the store %d times, want none", len(shoppers), n)
	}
	if err := e.s.SetLocale(e.ctx, newcomer.ID, "en"); err != nil { // on another process
		t.Fatal(err)
	}
	for id := int64(0); id != newcomer.ID; {
		select {
		case id = <-heard:
		case <-time.After(time.Minute): // only keeps a broken test from hanging
			t.Fatal("the pick made on another process never arrived")
		}
	}
	if got, _ := web.Locale(e.ctx, newcomer.ID); got != "en" {
		t.Fatalf("the pick made on another process, once heard: %q, want en", got)
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
	pickers := users(t, e, "picker", 3)
	for _, u := range pickers {
		if err := e.s.SetLocale(e.ctx, u.ID, "zh-CN"); err != nil {
			t.Fatal(err)
		}
	}
	web, _ := startLocales(t, e, 2)
	pickers = pickers[:2] // what is kept one at a time has the same bound
	for range 3 {
		for _, u := range pickers {
			if got, err := web.Locale(e.ctx, u.ID); err != nil || got != "zh-CN" {
				t.Fatalf("user %d's language past the bound: %q, %v; want zh-CN", u.ID, got, err)
			}
		}
	}
	if n := web.Locales.Reads.Load(); n != int64(len(pickers)) {
		t.Fatalf("%d accounts asked three times each were read %d times, want once each", len(pickers), n)
	}
}
