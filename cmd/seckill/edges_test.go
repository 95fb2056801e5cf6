package main

import (
	"fmt"
	"testing"
	"time"
)

// A floor never makes an honest solution fail: at every floor the
// steering switches allow, on goods that ask no proof and on goods that ask
// one, the challenge GET /api/pow gives, solved as asked, is a 201.
func TestPowFloorAcceptsHonestSolutions(t *testing.T) {
	a := startApp(t)
	admin := a.adminToken()
	plain, asked := a.fairGoods(0, false, -time.Minute), a.fairGoods(12, false, -time.Minute)
	for _, floor := range []int{0, 1, 4, 6, 8, 10, 12, 16} {
		a.setSwitches(admin, map[string]any{"pow_floor_bits": floor})
		for _, g := range []goodsJSON{plain, asked} {
			shopper, _ := a.newUser()
			c := a.powChallenge(shopper, g.ID)
			if floor == 0 && g.ID == plain.ID {
				if c.Solutions != 0 {
					t.Fatalf("no floor, no pow_bits: challenge %+v, want none", c)
				}
				a.wantGrab(shopper, g.ID, "", 201, "")
				continue
			}
			if c.level() < floor {
				t.Fatalf("floor %d: challenge %+v asks less work (%d bits)", floor, c, c.level())
			}
			if st, code := a.grabWith(shopper, g.ID, solve(t, c)); st != 201 {
				t.Fatalf("floor %d, goods asking %s: an honest solution of %+v answered %d %s, want 201",
					floor, fmt.Sprint(g.ID == asked.ID), c, st, code)
			}
		}
	}
}
