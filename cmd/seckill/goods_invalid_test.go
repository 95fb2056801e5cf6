package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Bad input in any fair-sale field (and in shards, the other field that
// may be left out) is refused with 400 invalid naming the field, on create
// and on update, and creates or changes nothing: no value a client can send
// means "left out" (a queue_rate of -1 once did, and created the goods).
func TestFairFieldsInvalid(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	ut, _ := a.newUser()
	sl := a.createSlot(mt, 2*time.Hour, time.Hour)
	at := func(d time.Duration) string { return sl.StartAt.Add(d).Format(time.RFC3339Nano) }
	goods := map[string]any{"slot_id": sl.ID, "title": "Sneakers", "price_cents": 20000, "seckill_price_cents": 9900, "stock": 10}
	with := func(kv ...any) map[string]any {
		b := map[string]any{}
		for k, v := range goods {
			b[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	// Goods to update: a waiting room and a raffle, whose fields an update may change before the sale.
	type made struct {
		ID   int64  `json:"id"`
		Mode string `json:"mode"`
	}
	var q, r struct{ Goods made }
	if st := a.call("POST", "/api/admin/goods", mt, with("mode", "queue", "queue_rate", 50, "admission_seconds", 60, "shards", 2), &q); st != 201 {
		t.Fatalf("create the queue: %d", st)
	}
	if st := a.call("POST", "/api/admin/goods", mt, with("mode", "raffle", "entry_start_at", at(-time.Hour)), &r); st != 201 {
		t.Fatalf("create the raffle: %d", st)
	}
	before := a.inputSnapshot(mt, ut, sl.ID)

	bad := []struct {
		name   string
		body   map[string]any
		fields []string // each named in the one answer
	}{
		{"queue_rate -1", with("mode", "queue", "queue_rate", -1), []string{"queue_rate"}},
		{"queue_rate -5", with("mode", "queue", "queue_rate", -5), []string{"queue_rate"}},
		{"queue_rate over 100000", with("mode", "queue", "queue_rate", 100_001), []string{"queue_rate"}},
		{"queue_rate a string", with("queue_rate", "fast"), []string{"queue_rate"}},
		{"pow_bits -1", with("pow_bits", -1), []string{"pow_bits"}},
		{"pow_bits 25", with("pow_bits", 25), []string{"pow_bits"}},
		{"admission_seconds 0", with("mode", "queue", "admission_seconds", 0), []string{"admission_seconds"}},
		{"admission_seconds -1", with("mode", "queue", "admission_seconds", -1), []string{"admission_seconds"}},
		{"admission_seconds 9", with("mode", "queue", "admission_seconds", 9), []string{"admission_seconds"}},
		{"admission_seconds 3601", with("mode", "queue", "admission_seconds", 3601), []string{"admission_seconds"}},
		{"mode empty", with("mode", ""), []string{"mode"}},
		{"mode unknown", with("mode", "lottery"), []string{"mode"}},
		{"shards 0", with("shards", 0), []string{"shards"}},
		{"shards -1", with("shards", -1), []string{"shards"}},
		{"shards 9", with("shards", 9), []string{"shards"}},
		{"entries open at the start", with("mode", "raffle", "entry_start_at", at(0)), []string{"entry_start_at"}},
		{"entries open after the start", with("mode", "raffle", "entry_start_at", at(time.Minute)), []string{"entry_start_at"}},
		{"entries open in year 1", with("mode", "raffle", "entry_start_at", "0001-01-01T00:00:00Z"), []string{"entry_start_at"}},
		{"every fair-sale field at once", with("mode", "raffle", "queue_rate", -1, "pow_bits", 25, "admission_seconds", 0,
			"entry_start_at", at(time.Hour), "shards", 0), []string{"queue_rate", "pow_bits", "admission_seconds", "entry_start_at", "shards"}},
		{"an unknown mode and a bad rate", with("mode", "auction", "queue_rate", -1), []string{"mode", "queue_rate"}},
	}
	for _, tc := range bad {
		t.Run("create "+tc.name, func(t *testing.T) { a.wantInvalidFields(t, "POST", "/api/admin/goods", mt, tc.body, tc.fields) })
	}
	// The same on update, of the queue and of the raffle: nothing left out is
	// unchanged by a value sent.
	for _, g := range []made{q.Goods, r.Goods} {
		path := fmt.Sprintf("/api/admin/goods/%d", g.ID)
		for _, tc := range bad {
			body := map[string]any{}
			for k, v := range tc.body {
				body[k] = v
			}
			delete(body, "slot_id")
			if _, ok := body["mode"]; !ok {
				body["mode"] = g.Mode
			}
			t.Run(fmt.Sprintf("update %s %s", g.Mode, tc.name), func(t *testing.T) { a.wantInvalidFields(t, "PUT", path, mt, body, tc.fields) })
		}
	}

	after := a.inputSnapshot(mt, ut, sl.ID)
	for path, was := range before {
		if after[path] != was {
			t.Errorf("refused input changed %s:\n-want %s\n+got  %s", path, was, after[path])
		}
	}

	// What the rules allow still goes through: the bounds, and 0 where 0 means something.
	for _, body := range []map[string]any{
		with("mode", "queue", "queue_rate", 0, "admission_seconds", 10, "pow_bits", 0, "shards", 1),
		with("mode", "queue", "queue_rate", 100_000, "admission_seconds", 3600, "pow_bits", 24, "shards", 8),
		with("mode", "raffle", "entry_start_at", at(-time.Second)),
	} {
		if st := a.call("POST", "/api/admin/goods", mt, body, nil); st != 201 {
			t.Errorf("create %v: %d, want 201", body, st)
		}
	}
}

// wantInvalidFields calls the API and fails t unless it answers 400 invalid
// with one message that names every field.
func (a *testApp) wantInvalidFields(t *testing.T, method, path, token string, body any, fields []string) {
	t.Helper()
	var e apiError
	got := a.call(method, path, token, body, &e)
	missing := []string{}
	for _, f := range fields {
		if !strings.Contains(e.Error.Message, f) {
			missing = append(missing, f)
		}
	}
	if got != 400 || e.Error.Code != "invalid" || len(missing) > 0 {
		t.Errorf("%s %s %v: got %d %q (%s), want 400 invalid naming %v (missing %v)", method, path, body, got, e.Error.Code, e.Error.Message, fields, missing)
	}
}
