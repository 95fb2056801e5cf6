package account_test

import (
	"context"
	"strings"
	"testing"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/account"
)

func TestValidateEmail(t *testing.T) {
	address := func(n int) string { // a plain address of n bytes
		return strings.Repeat("a", 64) + "@" + strings.Repeat("b", n-64-1-4) + ".com"
	}
	for _, tt := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"none", "", true},
		{"plain", "ann@example.com", true},
		{"254 bytes", address(254), true},
		{"255 bytes", address(255), false},
		{"100,000 characters", strings.Repeat("a", 100_000) + "@example.com", false},
		{"not an address", "ann at example", false},
		{"with a display name", "Ann <ann@example.com>", false},
		{"NUL", "ann\x00@example.com", false},
		{"ESC", "ann@exa\x1bmple.com", false},
		{"bidi override", "ann\u202e@example.com", false},
		{"zero-width space", "ann@exam\u200bple.com", false},
		{"newline", "ann@example.com\nBcc: eve@example.com", false},
		{"invalid UTF-8", "ann\xff@example.com", false},
	} {
		err := account.ValidateEmail(tt.in)
		if (err == nil) != tt.ok || (err != nil && db.ErrorCode(err) != db.EINVALID) {
			t.Errorf("%s: ValidateEmail = %v, want ok %v", tt.name, err, tt.ok)
		}
		if err != nil && (db.FieldOf(err) != "email" || !strings.HasPrefix(db.ErrorMessage(err), "email: ")) {
			t.Errorf("%s: %v, want an error on the email field", tt.name, err)
		}
	}
}

func TestValidateWebhookURLText(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("x", account.MaxWebhookURL-len("https://example.com/"))
	for _, tt := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"plain", "https://example.com/hook", true},
		{"2048 characters", long, true},
		{"2049 characters", long + "x", false},
		{"NUL", "https://example.com/\x00", false},
		{"ESC", "https://example.com/\x1b[31m", false},
		{"bidi override", "https://example.com/\u202egpj.exe", false},
		{"not http", "ftp://example.com/", false},
	} {
		err := account.ValidateWebhookURL(context.Background(), tt.in, true)
		if (err == nil) != tt.ok || (err != nil && db.FieldOf(err) != "webhook_url") {
			t.Errorf("%s: ValidateWebhookURL = %v, want ok %v or a webhook_url field error", tt.name, err, tt.ok)
		}
	}
}
