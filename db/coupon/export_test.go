package coupon

import "github.com/seckill/seckill/db/backend"

// Test-only doors into the coupon internals, for the external coupon_test package.

// GrabQueue is the template's flush queue of grab records.
func GrabQueue(id int64) backend.FlushQueue { return grabQueue(id) }
