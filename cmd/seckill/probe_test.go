package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// A probe of the contract (docs/openapi.yaml), table-driven from the
// document itself: every operation with a JSON request body is sent, for
// each of its fields, the field left out, the wrong type, null, a value out
// of the schema's range and an unknown field beside it; every path
// parameter is sent negative, zero, not a number and too big. Each answer
// is a 4xx with the contract's JSON error body and a code the operation
// lists (a 2xx only where the probe may be taken as valid: an optional
// field left out, an unknown field outside the admin API), never a 5xx; and
// a refusal changes nothing: the durable store's rows read the same before
// and after (the flush run each time, so what Redis held has landed).
func TestContractProbe(t *testing.T) {
	a := startApp(t)
	doc, _ := contractSpec()
	fx := newProbeFixtures(a)
	var findings []string
	report := func(format string, args ...any) { findings = append(findings, fmt.Sprintf(format, args...)) }

	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, path := range paths {
		if !strings.HasPrefix(path, "/api/") {
			continue
		}
		item := doc.Paths.Value(path)
		for method, op := range item.Operations() {
			if probeSkipped(method, path) {
				continue
			}
			token := fx.tokenFor(path)
			// Every path parameter, out of its domain.
			for _, bad := range []string{"-1", "0", "abc", "99999999999999999999", "9223372036854775807"} {
				url, ok := fx.fill(path, bad)
				if !ok {
					continue
				}
				fx.probe(t, report, op, method, path, url, token, fx.validBody(op), "path parameter "+bad, false, "")
			}
			body := fx.validBody(op)
			if body == nil {
				continue
			}
			url, _ := fx.fill(path, "")
			schema := op.RequestBody.Value.Content.Get("application/json").Schema.Value
			admin := strings.HasPrefix(path, "/api/admin/")
			for _, name := range sortedProps(schema) {
				prop := schema.Properties[name].Value
				required := contains(schema.Required, name)
				for _, m := range probeMutations(prop) {
					b := cloneBody(body)
					if m.leaveOut {
						delete(b, name)
					} else {
						b[name] = m.value
					}
					fx.probe(t, report, op, method, path, url, token, b, fmt.Sprintf("%s %s", name, m.what), m.leaveOut && !required, name)
				}
			}
			b := cloneBody(body)
			b["probe_unknown_field"] = 1
			fx.probe(t, report, op, method, path, url, token, b, "an unknown field", !admin, "probe_unknown_field")
		}
	}
	if len(findings) > 0 {
		t.Fatalf("%d probes answered off the contract:\n%s", len(findings), strings.Join(findings, "\n"))
	}
}

// probeSkipped are operations a probe cannot reach as written: signed by a
// payment provider, or that end the probe's own sessions.
func probeSkipped(method, path string) bool {
	switch {
	case strings.HasPrefix(path, "/api/payments/"):
		return true // signed by the gateway or Stripe: refused before any field is read
	case path == "/api/auth/logout":
		return true
	case method == http.MethodDelete && path == "/api/admin/slots/{id}":
		return true
	}
	return false
}

type probeMutation struct {
	what     string
	value    any
	leaveOut bool
}

// probeMutations are the bad values of one field, from its schema.
func probeMutations(s *openapi3.Schema) []probeMutation {
	out := []probeMutation{{what: "left out", leaveOut: true}, {what: "null", value: nil}}
	switch {
	case s.Type.Is("integer"), s.Type.Is("number"):
		out = append(out, probeMutation{what: "as a string", value: "12"}, probeMutation{what: "as an object", value: map[string]any{}})
		if s.Min != nil {
			out = append(out, probeMutation{what: "under its minimum", value: *s.Min - 1})
		}
		if s.Max != nil {
			out = append(out, probeMutation{what: "over its maximum", value: *s.Max + 1})
		}
		out = append(out, probeMutation{what: "huge", value: 1e30})
	case s.Type.Is("string"):
		out = append(out, probeMutation{what: "as a number", value: 12}, probeMutation{what: "as a list", value: []any{"x"}})
		if s.MaxLength != nil {
			out = append(out, probeMutation{what: "too long", value: strings.Repeat("x", int(*s.MaxLength)+1)})
		}
		if len(s.Enum) > 0 {
			out = append(out, probeMutation{what: "not one of its values", value: "probe-not-a-choice"})
		}
		if s.Format == "date-time" {
			out = append(out, probeMutation{what: "not a time", value: "2030-13-01T00:00:00Z"})
		}
	case s.Type.Is("boolean"):
		out = append(out, probeMutation{what: "as a string", value: "true"}, probeMutation{what: "as a number", value: 1})
	case s.Type.Is("array"):
		out = append(out, probeMutation{what: "as a string", value: "x"})
	case s.Type.Is("object"):
		out = append(out, probeMutation{what: "as a string", value: "x"})
	}
	return out
}

// probeFixtures are the items the probes name (a live slot and goods, a
// red packet, a coupon, a paid and an unpaid order) and the tokens they send.
type probeFixtures struct {
	a                             *testApp
	admin, merchant, shopper      string
	slot, goods, rp, coupon, paid int64
	unpaid                        int64
	ctx                           context.Context
}

func newProbeFixtures(a *testApp) *probeFixtures {
	fx := &probeFixtures{a: a, admin: a.adminToken(), ctx: context.Background()}
	fx.merchant, _ = a.newMerchant()
	fx.shopper, _ = a.newUser()
	sl := a.createSlot(fx.merchant, -time.Minute, 24*time.Hour)
	fx.slot = sl.ID
	fx.goods = a.createGoods(fx.merchant, sl.ID, 50, 5).ID
	fx.rp = a.createRedPacket(fx.merchant, map[string]any{"title": "Probe packet", "total_cents": 1000, "count": 10, "mode": "fixed"}).ID
	now := a.Clock.Now()
	fx.coupon = a.couponCreate(fx.merchant, "Probe coupon", 50, 5, now.Add(-time.Minute), now.Add(24*time.Hour)).ID
	fx.paid = a.grab(fx.shopper, fx.goods).ID
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", fx.paid), fx.shopper, nil, nil); st != 200 {
		a.T.Fatalf("pay the probe's order: %d", st)
	}
	fx.unpaid = a.grab(fx.shopper, fx.goods).ID
	return fx
}

// tokenFor is who sends a probe of the path: the admin on the admin API,
// nobody on sign-in and sign-up, else the shopper.
func (fx *probeFixtures) tokenFor(path string) string {
	switch {
	case strings.HasPrefix(path, "/api/admin/"):
		return fx.admin
	case strings.HasPrefix(path, "/api/auth/"):
		return ""
	}
	return fx.shopper
}

// fill puts IDs into the path's parameters: bad for every one when not
// "", else the fixture each names. ok is false for a path with none.
func (fx *probeFixtures) fill(path, bad string) (string, bool) {
	segs := strings.Split(path, "/")
	ok := false
	for i, s := range segs {
		if !strings.HasPrefix(s, "{") {
			continue
		}
		ok = true
		if bad != "" {
			segs[i] = bad
			continue
		}
		var id int64
		switch segs[i-1] {
		case "slots":
			id = fx.slot
		case "goods":
			id = fx.goods
		case "redpackets":
			id = fx.rp
		case "coupons":
			id = fx.coupon
		case "orders":
			id = fx.paid
		default:
			id = 1
		}
		segs[i] = fmt.Sprint(id)
	}
	return fx.a.URL + strings.Join(segs, "/"), ok
}

// validBody is a body the operation's schema takes (nil: it has none): its
// example when the document gives one, else each property's example,
// default or a value of its type within its range.
func (fx *probeFixtures) validBody(op *openapi3.Operation) map[string]any {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil || len(mt.Schema.Value.Properties) == 0 {
		return nil
	}
	if ex, ok := mt.Example.(map[string]any); ok {
		return cloneBody(ex)
	}
	out := map[string]any{}
	for name, ref := range mt.Schema.Value.Properties {
		out[name] = fx.valueOf(name, ref.Value)
	}
	return out
}

func (fx *probeFixtures) valueOf(name string, s *openapi3.Schema) any {
	switch {
	case s.Format == "date-time": // an hour from now; an end a day later
		at := fx.a.Clock.Now().Add(time.Hour)
		if strings.HasSuffix(name, "end_at") {
			at = at.Add(24 * time.Hour)
		}
		return at.UTC().Format(time.RFC3339)
	case s.Example != nil:
		return s.Example
	case s.Default != nil:
		return s.Default
	case len(s.Enum) > 0:
		return s.Enum[0]
	}
	switch name {
	case "slot_id":
		return fx.slot
	case "goods_id":
		return fx.goods
	}
	switch {
	case s.Type.Is("integer"), s.Type.Is("number"):
		v := 1.0
		if s.Min != nil {
			v = max(v, *s.Min)
		}
		if s.Max != nil {
			v = min(v, *s.Max)
		}
		return v
	case s.Type.Is("string"):
		n := max(int(s.MinLength), 8)
		if s.MaxLength != nil {
			n = min(n, int(*s.MaxLength))
		}
		return strings.Repeat("p", n)
	case s.Type.Is("boolean"):
		return false
	case s.Type.Is("array"):
		return []any{}
	}
	return map[string]any{}
}

// probe sends one request and checks its answer against the contract and
// the store; mayPass says a 2xx is a right answer too.
func (fx *probeFixtures) probe(t *testing.T, report func(string, ...any), op *openapi3.Operation, method, path, url, token string,
	body map[string]any, what string, mayPass bool, field string) {
	t.Helper()
	before := fx.snapshot(t)
	h := map[string]string{}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	var sent any
	if body != nil {
		sent = body
	}
	r := send(t, method, url, h, sent)
	where := fmt.Sprintf("%s %s, %s", method, path, what)
	switch {
	case r.status >= 500:
		report("%s: %d %s", where, r.status, r.body)
		return
	case r.status < 300:
		if !mayPass {
			report("%s: %d %s, want a 4xx", where, r.status, r.body)
		}
		return
	}
	var e apiError
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Code == "" {
		report("%s: %d %q is not the contract's error body", where, r.status, r.body)
		return
	}
	if codes := listedCodes(op, r.status); codes != nil && !contains(codes, e.Error.Code) {
		report("%s: %d %s, a code the operation does not list for %d (%v)", where, r.status, e.Error.Code, r.status, codes)
	}
	if _, named := e.Error.Fields[field]; field != "" && r.status == 400 && e.Error.Code == "invalid" &&
		!named && !strings.Contains(e.Error.Message, field) {
		report("%s: 400 invalid names not the field: %s", where, r.body)
	}
	if after := fx.snapshot(t); after != before {
		report("%s: refused %d %s, but the store changed", where, r.status, e.Error.Code)
	}
}

// probeTables are the store's tables a refused request must leave alone
// (the audit log records refused sign-ins on purpose: left out).
var probeTables = []string{"users", "slots", "goods", "orders", "order_conflicts", "redpackets", "coupons", "user_coupons",
	"coupon_reminders", "notifications", "goods_reminders", "raffles", "raffle_entries", "queue_codes", "steering_switches", "images"}

// probeAsync are columns the server's own schedules write (the stock sync,
// the preheat), whatever a request does.
var probeAsync = map[string]bool{"remaining": true, "synced_ms": true, "preheated_ms": true}

// snapshot is a digest of every row of probeTables, once the flush has
// moved what Redis holds to the store.
func (fx *probeFixtures) snapshot(t *testing.T) string {
	t.Helper()
	if err := fx.a.FlushAll(fx.ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	h := sha256.New()
	for _, table := range probeTables {
		rows, err := fx.a.SQL.R.QueryContext(fx.ctx, `SELECT * FROM `+table+` ORDER BY 1`)
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				t.Fatalf("read %s: %v", table, err)
			}
			fmt.Fprint(h, table)
			for i, c := range cols {
				if !probeAsync[c] {
					fmt.Fprintf(h, " %s=%v", c, vals[i])
				}
			}
			fmt.Fprintln(h)
		}
		rows.Close()
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// listedCodes are the error codes the operation lists for the status (nil:
// it lists the status without naming codes, or not at all).
func listedCodes(op *openapi3.Operation, status int) []string {
	resp := op.Responses.Status(status)
	if resp == nil || resp.Value == nil {
		return nil
	}
	mt := resp.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return nil
	}
	var codes []string
	var walk func(s *openapi3.SchemaRef, depth int)
	walk = func(s *openapi3.SchemaRef, depth int) {
		if s == nil || s.Value == nil || depth > 6 {
			return
		}
		for _, sub := range s.Value.AllOf {
			walk(sub, depth+1)
		}
		if e := s.Value.Properties["error"]; e != nil && e.Value != nil {
			if c := e.Value.Properties["code"]; c != nil && c.Value != nil {
				for _, v := range c.Value.Enum {
					codes = append(codes, fmt.Sprint(v))
				}
			}
			for _, sub := range e.Value.AllOf {
				if c := sub.Value.Properties["code"]; c != nil && c.Value != nil {
					for _, v := range c.Value.Enum {
						codes = append(codes, fmt.Sprint(v))
					}
				}
			}
		}
	}
	walk(mt.Schema, 0)
	return codes
}

func sortedProps(s *openapi3.Schema) []string {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func cloneBody(b map[string]any) map[string]any {
	out := make(map[string]any, len(b))
	for k, v := range b {
		out[k] = v
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
