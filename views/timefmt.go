package views

import (
	"context"
	"strings"
	"time"
	"unicode"

	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views/i18n"
)

// timeFallback is an instant as shown before static/app.js formats it in the
// browser's zone: the same shape ("2 Jan 2006, 15:04"), in UTC and saying so.
func timeFallback(t time.Time) string { return t.UTC().Format(model.TimeLayout) + " UTC" }

// timeFallbackIn is timeFallback in the reader's language: Chinese writes
// "2026年1月2日 15:04 UTC".
func timeFallbackIn(ctx context.Context, t time.Time) string {
	if i18n.Of(ctx) == i18n.Zh {
		return t.UTC().Format("2006年1月2日 15:04") + " UTC"
	}
	return timeFallback(t)
}

// errorTitle is the error page's headline for a status.
func errorTitle(status int) string {
	switch {
	case status == 404:
		return "Not found"
	case status == 401 || status == 403:
		return "Not allowed"
	case status == 429:
		return "Too many requests"
	case status >= 500:
		return "Something went wrong"
	}
	return "That did not work"
}

// sentence is a message as the pages write it: a capital first letter and a
// full stop, or "。" after a message already put in Chinese (translate it
// before: the catalog knows it without the stop).
func sentence(msg string) string {
	if msg == "" {
		return ""
	}
	if strings.ContainsFunc(msg, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
		if !strings.HasSuffix(msg, "。") && !strings.HasSuffix(msg, "！") && !strings.HasSuffix(msg, "？") {
			msg += "。"
		}
		return msg
	}
	msg = strings.ToUpper(msg[:1]) + msg[1:]
	if !strings.HasSuffix(msg, ".") && !strings.HasSuffix(msg, "!") && !strings.HasSuffix(msg, "?") {
		msg += "."
	}
	return msg
}
