package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A time written in an inbox message shows as the reader's: the inbox
// page gives it as a <time> (which the page's script writes in the
// reader's zone and language, as the stamp beside it), not as UTC text,
// in English and in Chinese.
func TestInboxMessageTimesAreTheReaders(t *testing.T) {
	a := startApp(t)
	_, g := a.raffleGoods(1, 10*time.Minute)
	token, _ := a.newUser()
	a.enterRaffle(token, g.ID, 201)
	a.advance(10 * time.Minute)
	if _, err := a.Fair.DrawRaffle(context.Background(), g.ID); err != nil {
		t.Fatal(err)
	}
	var e raffleEntryJSON
	eventually(t, 20*time.Second, "the winner's order", func() bool { e = a.raffleEntry(token, g.ID); return e.OrderID != 0 })
	o := a.order(token, e.OrderID)
	item := regexp.MustCompile(`(?s)<li[^>]*data-testid="notification-\d+"[^>]*>\s*<span>(.*?)</span>`)
	for _, lang := range []string{"en", "zh-CN"} {
		var m []string
		eventually(t, 20*time.Second, "the raffle's note in the inbox", func() bool {
			_, body := i18nGet(t, a, token, "/me/notifications", lang)
			m = item.FindStringSubmatch(body)
			return m != nil
		})
		text := regexp.MustCompile(`(?s)<time[^>]*>.*?</time>`).ReplaceAllString(m[1], "")
		want := `<time datetime="` + o.ExpiresAt.UTC().Truncate(time.Minute).Format(time.RFC3339) + `"`
		if !strings.Contains(m[1], want) || strings.Contains(text, "UTC") || regexp.MustCompile(`\d{2}:\d{2}`).MatchString(text) {
			t.Errorf("the inbox in %s shows the note as %q; want the time as %s…>, no UTC text", lang, m[1], want)
		}
	}
}
