package app

import (
	"testing"

	"github.com/seckill/seckill/tasks"
)

// The periodic tasks include the coupon expiry and the checkout's sweep.
func TestCheckoutPeriodicTasks(t *testing.T) {
	m := &Main{}
	m.Areas = m.areas()
	found := map[string]bool{}
	for _, p := range tasks.PeriodicOf(m.areaTasks()...) {
		found[p.Task.Type()] = true
	}
	if !found[tasks.TypeCouponExpire] || !found[tasks.TypeCheckoutSweep] {
		t.Fatalf("periodic tasks %v lack %s or %s", found, tasks.TypeCouponExpire, tasks.TypeCheckoutSweep)
	}
}
