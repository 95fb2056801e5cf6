package views

import (
	"regexp"
	"time"
)

// messageTimes are the UTC times the inbox's messages were written with:
// "6 Dec 2026, 00:40 UTC" (model.TimeLayout) and "2026-12-06 01:26 UTC".
var messageTimes = regexp.MustCompile(`\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} UTC|\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC`)

// messagePart is a piece of a message: text, or a time shown as the
// reader's (the <time> that static/app.js writes in their zone and language).
type messagePart struct {
	Text string
	At   *time.Time
}

// messageParts cuts msg around the UTC times in it.
func messageParts(msg string) []messagePart {
	var parts []messagePart
	last := 0
	for _, m := range messageTimes.FindAllStringIndex(msg, -1) {
		s := msg[m[0]:m[1]]
		t, err := time.Parse("2 Jan 2006, 15:04 MST", s)
		if err != nil {
			t, err = time.Parse("2006-01-02 15:04 MST", s)
		}
		if err != nil {
			continue
		}
		parts = append(parts, messagePart{Text: msg[last:m[0]]}, messagePart{At: &t})
		last = m[1]
	}
	return append(parts, messagePart{Text: msg[last:]})
}
