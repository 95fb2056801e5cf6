package main

import (
	"testing"
	"time"
)

// A red packet's expires_in left out is the default (24h); sent, it is a
// duration or 400 invalid naming the field, and nothing is created: an
// empty string once meant "left out" too.
func TestRedPacketExpiresInInvalid(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	ut, _ := a.newUser()
	packet := func(kv ...any) map[string]any {
		b := map[string]any{"title": "Lucky", "total_cents": 1000, "count": 10, "mode": "random"}
		for i := 0; i < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	before := a.inputSnapshot(mt, ut)
	for _, v := range []any{"", " ", "0s", "-1h", "721h", "tomorrow", 24} {
		a.wantInvalid(t, "POST", "/api/admin/redpackets", mt, packet("expires_in", v), "expires_in")
	}
	after := a.inputSnapshot(mt, ut)
	for path, was := range before {
		if after[path] != was {
			t.Errorf("refused input changed %s:\n-want %s\n+got  %s", path, was, after[path])
		}
	}
	p := a.createRedPacket(mt, packet())
	if d := time.Until(p.ExpiresAt); d < 23*time.Hour || d > 25*time.Hour {
		t.Errorf("expires_in left out: expires in %s, want 24h", d)
	}
}
