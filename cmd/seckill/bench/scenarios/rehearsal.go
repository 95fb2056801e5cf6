package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench"
	"github.com/seckill/seckill/db/model"
)

// RehearsalName names the rehearsal's grab load in the report.
const RehearsalName = "rehearsal grab (public API)"

// rehearsalDefaults are the sizes of a rehearsal where its flags are not
// given: a rehearsal runs on a live deployment, so it stays modest.
var rehearsalDefaults = map[string]int{"users": 50, "c": 16, "n": 2000, "stock": 100, "rounds": 1}

// rehearsal drives a rehearsal against a running deployment through its
// public API only: no database, no secret, an admin's sign-in.
type rehearsal struct {
	base   string
	client *http.Client
	admin  string // the admin's token
}

// call sends one JSON request and decodes a 2xx answer into out; it
// answers "ok" or the contract's error code (outcome).
func (h *rehearsal) call(ctx context.Context, method, path, token string, body, out any) string {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, rd)
	if err != nil {
		return "transport"
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := h.client.Do(req)
	if err != nil {
		return "transport"
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return outcome(res.StatusCode, raw, out)
}

// must is call for the set-up and clean-up steps, where anything but
// success is an error.
func (h *rehearsal) must(ctx context.Context, method, path, token string, body, out any) error {
	if code := h.call(ctx, method, path, token, body, out); code != "ok" {
		return fmt.Errorf("rehearsal: %s %s: %s", method, path, code)
	}
	return nil
}

// benchRehearsal is `seckill bench -target URL -rehearsal`: it signs in as
// the admin, creates a rehearsal slot with one goods (o.Stock units, a
// limit of o.RehearsalLimit a shopper) and o.Users shoppers, runs the grab
// load, checks the invariants (orders within the stock, each shopper
// within the limit, the ok answers matching the orders) and removes the
// slot with all it made, whatever happened.
func benchRehearsal(ctx context.Context, o *Options) (r *bench.Report, err error) {
	base := strings.TrimRight(o.Target, "/")
	h := &rehearsal{base: base, client: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: o.Conc + 1, MaxConnsPerHost: o.Conc + 1}}}
	defer h.client.CloseIdleConnections()
	var auth struct{ Token string }
	if err := h.must(ctx, "POST", "/api/auth/login", "", map[string]string{"username": o.AdminUser, "password": o.AdminPassword}, &auth); err != nil {
		return nil, fmt.Errorf("%w (sign in as %q: see -admin and -admin-password)", err, o.AdminUser)
	}
	h.admin = auth.Token
	r = &bench.Report{
		StartedAt: time.Now(), Machine: bench.Machine(), Target: base + " (rehearsal)",
		Settings: map[string]string{"users": strconv.Itoa(o.Users), "c": strconv.Itoa(o.Conc), "stock": strconv.Itoa(o.Stock),
			"n": strconv.Itoa(o.Requests), "limit": strconv.Itoa(o.RehearsalLimit), "rate": fmt.Sprint(o.Rate)},
		Extra: map[string]string{},
	}

	now := time.Now().UTC()
	var slot struct{ Slot model.Slot }
	if err := h.must(ctx, "POST", "/api/admin/slots", h.admin, map[string]any{"title": "Rehearsal " + now.Format(time.DateTime), "rehearsal": true,
		"start_at": now.Add(-time.Minute).Format(time.RFC3339), "end_at": now.Add(time.Hour).Format(time.RFC3339)}, &slot); err != nil {
		return nil, err
	}
	defer func() { // the rehearsal leaves nothing behind, even when it failed
		if derr := h.must(context.WithoutCancel(ctx), "DELETE", fmt.Sprintf("/api/admin/slots/%d", slot.Slot.ID), h.admin, nil, nil); derr != nil && err == nil {
			r, err = nil, derr
		} else if derr == nil && r != nil {
			r.Extra["clean-up"] = fmt.Sprintf("rehearsal slot %d and all it made removed (DELETE /api/admin/slots/%d)", slot.Slot.ID, slot.Slot.ID)
		}
	}()
	var g struct{ Goods model.Goods }
	if err := h.must(ctx, "POST", "/api/admin/goods", h.admin, map[string]any{"slot_id": slot.Slot.ID, "title": "Rehearsal goods",
		"price_cents": 1000, "seckill_price_cents": 100, "stock": o.Stock, "limit_per_user": o.RehearsalLimit}, &g); err != nil {
		return nil, err
	}
	tokens, err := h.shoppers(ctx, o.Users, now)
	if err != nil {
		return nil, err
	}

	grab := fmt.Sprintf("/api/goods/%d/grab", g.Goods.ID)
	load := bench.Load{Name: RehearsalName, Concurrency: o.Conc, Requests: int64(o.Requests), Rate: o.Rate, Progress: o.Progress}
	res := bench.Run(ctx, load, func(ctx context.Context, w int, i int64) string {
		return h.call(ctx, "POST", grab, tokens[i%int64(len(tokens))], nil, nil)
	})
	r.Results = append(r.Results, res)
	r.Extra["sustained"] = fmt.Sprintf("%.0f grabs/s, p50 %.1f ms, p99 %.1f ms over %d requests (answers %v)",
		res.Throughput, res.Latency.P50, res.Latency.P99, res.Requests, res.Codes)
	if err := h.check(ctx, r, g.Goods.ID, tokens, int64(o.Stock), int64(o.RehearsalLimit), res.Codes["ok"]); err != nil {
		return nil, err
	}
	return r, nil
}

// shoppers registers n shoppers through the API and answers their tokens;
// a sign-up refused for its rate (429) is tried again after Retry-After.
func (h *rehearsal) shoppers(ctx context.Context, n int, now time.Time) ([]string, error) {
	tokens := make([]string, 0, n)
	for i := 0; i < n; i++ {
		var auth struct{ Token string }
		name := fmt.Sprintf("reh%d_%d", now.Unix()%1e6, i)
		code := h.call(ctx, "POST", "/api/auth/register", "", map[string]string{"username": name, "password": "rehearsal-" + name}, &auth)
		switch code {
		case "ok":
			tokens = append(tokens, auth.Token)
		case "rate_limited":
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Second):
			}
			i--
		default:
			return nil, fmt.Errorf("rehearsal: register shopper %s: %s", name, code)
		}
	}
	return tokens, nil
}

// check waits for the flush to catch up, then states the invariants: no
// more orders than stock, the store's live orders those of Redis, the ok answers
// equal to the orders, and each shopper within the limit.
func (h *rehearsal) check(ctx context.Context, r *bench.Report, goodsID int64, tokens []string, stock, limit, ok int64) error {
	var st model.GoodsStats
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := h.must(ctx, "GET", fmt.Sprintf("/api/admin/goods/%d/stats", goodsID), h.admin, nil, &st); err != nil {
			return err
		}
		if (st.Pending == 0 && st.DB.Unpaid+st.DB.Paid == st.Unpaid+st.Paid) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	held := st.Unpaid + st.Paid
	r.Checks = append(r.Checks,
		bench.Check{Name: "rehearsal: orders ≤ stock", OK: held <= stock && st.Remaining+held == stock,
			Detail: fmt.Sprintf("%d orders, %d left of %d", held, st.Remaining, stock)},
		bench.Check{Name: "rehearsal: every ok answer is an order", OK: ok == held, Detail: fmt.Sprintf("%d ok, %d orders", ok, held)},
		bench.Check{Name: "rehearsal: the store equals Redis after the flush", OK: st.DB.Unpaid+st.DB.Paid == held && st.DB.Conflicts == 0,
			Detail: fmt.Sprintf("store %d live orders, Redis %d, %d refused", st.DB.Unpaid+st.DB.Paid, held, st.DB.Conflicts)})
	worst := int64(0)
	for _, tok := range tokens {
		var mine struct{ Orders []model.Order }
		if err := h.must(ctx, "GET", "/api/me/orders", tok, nil, &mine); err != nil {
			return err
		}
		n := int64(0)
		for _, o := range mine.Orders {
			if o.GoodsID == goodsID && (o.Status == model.OrderUnpaid || o.Status == model.OrderPaid) {
				n++
			}
		}
		worst = max(worst, n)
	}
	r.Checks = append(r.Checks, bench.Check{Name: "rehearsal: each shopper ≤ limit", OK: worst <= limit,
		Detail: fmt.Sprintf("at most %d orders a shopper, limit %d", worst, limit)})
	return nil
}
