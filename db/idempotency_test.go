package db_test

import (
	"testing"

	"github.com/seckill/seckill/db"
)

func TestValidIdempotencyKey(t *testing.T) {
	for key, want := range map[string]bool{
		"a": true, "order-2030-01-01T10:00:00Z#1": true, "with space": true,
		"": false, "tab\there": false, "nul\x00": false, "é": false,
		"0123456789012345678901234567890123456789012345678901234567890123":  true,
		"01234567890123456789012345678901234567890123456789012345678901234": false,
	} {
		if got := db.ValidIdempotencyKey(key); got != want {
			t.Errorf("ValidIdempotencyKey(%q) = %v, want %v", key, got, want)
		}
	}
}
