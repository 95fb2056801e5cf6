package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"
)

// A merchant who picked 中文 reads the API's refusals in Chinese from any
// client, one that sends an English Accept-Language and no language cookie
// (a bearer token) too: the account's pick, not the browser's, decides.
// A merchant who picked nothing reads the browser's language. Red packet
// and coupon template refusals name every problem, in that language.
func TestAPIErrorsFollowTheAccountsLanguage(t *testing.T) {
	a := startApp(t)
	picked, pickedToken := a.namedMerchant()
	s := a.cookieLogin(picked, "password123")
	if st, _ := s.postFormPage("/lang", url.Values{"lang": {"zh-CN"}, "back": {"/admin/"}}); st != 303 && st != 200 {
		t.Fatalf("pick 中文: %d", st)
	}
	_, otherToken := a.namedMerchant()
	start := a.Clock.Now().Add(time.Hour).UTC()
	bad := []struct{ what, path string }{{"red packet", "/api/admin/redpackets"}, {"coupon template", "/api/admin/coupons"}}
	bodies := map[string]any{
		"/api/admin/redpackets": map[string]any{"title": "", "total_cents": 3, "count": 5, "mode": "random"},
		"/api/admin/coupons": map[string]any{"title": "", "kind": "amount_off", "value": 0, "stock": 0, "valid_days": 99999,
			"grab_start_at": start, "grab_end_at": start.Add(time.Hour)},
	}
	ask := func(path, token string) (int, string) {
		t.Helper()
		return refusalInEnglishBrowser(t, a.URL+path, token, bodies[path])
	}
	for _, c := range bad {
		st, msg := ask(c.path, pickedToken)
		if st != 400 || !cjk.MatchString(msg) || latinWords.MatchString(msg) {
			t.Errorf("%s refused for the merchant who picked 中文, in an English browser: %d %q, want Chinese", c.what, st, msg)
		}
		st, msg = ask(c.path, otherToken)
		if st != 400 || cjk.MatchString(msg) {
			t.Errorf("%s refused for a merchant who picked nothing, in an English browser: %d %q, want English", c.what, st, msg)
		}
		if c.what == "coupon template" {
			for _, field := range []string{"title", "value", "stock", "valid_days"} {
				if !bytes.Contains([]byte(msg), []byte(field)) {
					t.Errorf("the coupon template's refusal %q names no problem of %s", msg, field)
				}
			}
		}
	}
}

// latinWords are the English of a refusal that a Chinese one must not keep.
var latinWords = regexp.MustCompile(`\b(is required|must be|must not|cents?|shares?)\b`)

// An account's language pick made through one web process reaches the
// other's answers by its message, not by a cache's lifetime, and between picks the other process reads it
// from memory: a bearer's refusals in the account's language cost no SQL.
func TestLanguagePickReachesEveryProcess(t *testing.T) {
	a := startApp(t)
	b := startPeer(t, a)
	name, token := a.namedMerchant()
	body := map[string]any{"title": "", "total_cents": 3, "count": 5, "mode": "random"}
	refusal := func() string {
		t.Helper()
		st, msg := refusalInEnglishBrowser(t, b.URL+"/api/admin/redpackets", token, body)
		if st != 400 {
			t.Fatalf("the refused red packet on the peer: %d %q", st, msg)
		}
		return msg
	}
	if msg := refusal(); cjk.MatchString(msg) {
		t.Fatalf("before any pick the peer refuses in Chinese: %q", msg)
	}
	s := a.cookieLogin(name, "password123")
	pick := func(lang string) {
		t.Helper()
		if st, _ := s.postFormPage("/lang", url.Values{"lang": {lang}, "back": {"/admin/"}}); st != 303 && st != 200 {
			t.Fatalf("pick %s: %d", lang, st)
		}
	}
	// The pick's message takes milliseconds even on a busy machine; a
	// cache's lifetime (a minute, before the message) would not do in 30 s.
	pick("zh-CN")
	eventually(t, 30*time.Second, "the peer to refuse in the picked Chinese", func() bool { return cjk.MatchString(refusal()) })

	before := b.Accounts.Locales.Reads.Load()
	const reads = 50
	for range reads {
		if msg := refusal(); !cjk.MatchString(msg) {
			t.Fatalf("the peer went back to English: %q", msg)
		}
	}
	// Counted where the pick is read from the store, not in all the peer's
	// SQL: its own loops send statements as time passes on a busy machine.
	if n := b.Accounts.Locales.Reads.Load() - before; n >= reads/5 {
		t.Fatalf("%d refusals in the account's language read the pick from the peer's store %d times, want it read from memory", reads, n)
	}

	pick("en")
	eventually(t, 30*time.Second, "the peer to refuse in English again", func() bool { return !cjk.MatchString(refusal()) })
}

// refusalInEnglishBrowser POSTs body to url as token's bearer from a
// browser that asks for English and sends no language cookie, and answers
// the status and the refusal's message.
func refusalInEnglishBrowser(t *testing.T, url, token string, body any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Language", "en-US,en;q=0.9")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var e apiError
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("POST %s: %d %s", url, res.StatusCode, raw)
	}
	return res.StatusCode, e.Error.Message
}
