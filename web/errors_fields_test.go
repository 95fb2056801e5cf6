package web

import (
	"testing"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/views/i18n"
)

// TestFieldsMessage: an invalid-input refusal's message reads as db writes
// it in English, and field by field in Chinese.
func TestFieldsMessage(t *testing.T) {
	fields := db.FieldErrors{"title": "is required", "stock": "must be at least 1"}
	if got, want := fieldsMessage(i18n.En, fields), (&db.InvalidFields{Fields: fields}).Unwrap().(*db.Error).Message; got != want {
		t.Errorf("English: %q, want %q", got, want)
	}
	if got, want := fieldsMessage(i18n.Zh, fields), "stock：至少为 1；title：必填"; got != want {
		t.Errorf("Chinese: %q, want %q", got, want)
	}
}
