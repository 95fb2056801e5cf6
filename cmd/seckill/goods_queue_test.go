package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// ticketJSON is a waiting room's ticket as the API answers it.
type ticketJSON struct {
	GoodsID       int64      `json:"goods_id"`
	State         string     `json:"state"`
	Position      int64      `json:"position"`
	ETASeconds    int64      `json:"eta_seconds"`
	Admission     string     `json:"admission"`
	AdmittedUntil *time.Time `json:"admitted_until"`
}

type queueStatsJSON struct {
	Joined, Admitted, Waiting, Rate, Shuffled int64
	Closed, Started                           bool
	Seed                                      string
}

// queueGoods has a new merchant create goods sold through a waiting room
// at rate a second, in a slot starting in start; it returns the merchant's token too.
func (a *testApp) queueGoods(stock int64, rate int, start time.Duration, extra map[string]any) (string, goodsJSON) {
	a.T.Helper()
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, start, time.Hour)
	body := map[string]any{"slot_id": sl.ID, "title": "Queued " + fmt.Sprint(userSeq.Add(1)), "price_cents": 10000,
		"seckill_price_cents": 2500, "stock": stock, "limit_per_user": 1, "mode": "queue", "queue_rate": rate, "admission_seconds": 60}
	for k, v := range extra {
		body[k] = v
	}
	var out struct{ Goods goodsJSON }
	if st := a.call("POST", "/api/admin/goods", mt, body, &out); st != 201 {
		a.T.Fatalf("create queued goods: %d", st)
	}
	return mt, out.Goods
}

// joinQueue joins the shopper to the goods' queue with an X-Pow ("" for
// none) and returns the status, the error code and the ticket.
func (a *testApp) joinQueue(token string, goodsID int64, pow string) (int, string, ticketJSON) {
	a.T.Helper()
	return a.queueRequest("POST", token, goodsID, pow)
}

func (a *testApp) queueRequest(method, token string, goodsID int64, pow string) (int, string, ticketJSON) {
	a.T.Helper()
	req, _ := http.NewRequest(method, fmt.Sprintf("%s/api/goods/%d/queue", a.URL, goodsID), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if pow != "" {
		req.Header.Set("X-Pow", pow)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out struct {
		Ticket ticketJSON
		apiError
	}
	json.Unmarshal(raw, &out)
	return res.StatusCode, out.Error.Code, out.Ticket
}

// grabAdmitted grabs with an X-Admission header and returns the status and the error code.
func (a *testApp) grabAdmitted(token string, goodsID int64, admission string) (int, string) {
	a.T.Helper()
	return a.grabHeader(token, goodsID, "X-Admission", admission)
}

func (a *testApp) queueStats(token string, goodsID int64) queueStatsJSON {
	a.T.Helper()
	var out struct{ Queue queueStatsJSON }
	if st := a.call("GET", fmt.Sprintf("/api/admin/goods/%d/queue", goodsID), token, nil, &out); st != 200 {
		a.T.Fatalf("queue stats: %d", st)
	}
	return out.Queue
}

// waitTicket reads the socket's events until a ticket event matches, and
// checks it against the contract's TicketEvent.
func waitTicket(t *testing.T, c *websocket.Conn, match func(ticketJSON) bool) ticketJSON {
	t.Helper()
	var got ticketJSON
	waitEvent(t, c, func(ev map[string]any) bool {
		if ev["type"] != "ticket" {
			return false
		}
		doc, _ := contractSpec()
		if err := doc.Components.Schemas["TicketEvent"].Value.VisitJSON(ev); err != nil {
			t.Fatalf("ticket event %v is not the contract's TicketEvent: %v", ev, err)
		}
		raw, _ := json.Marshal(ev["ticket"])
		json.Unmarshal(raw, &got)
		return match(got)
	})
	return got
}

// A shopper joins a waiting room over HTTP through one process while their
// socket is on another: they are shuffled in at the start, told their
// position live as it moves, admitted, and win the grab with the admission;
// without it, or with another's, the grab is refused. When the last unit
// goes, the others' sockets are told the room closed, and joining is refused.
func TestQueueWaitingRoomEndToEnd(t *testing.T) {
	a := startApp(t)
	cfg := a.Config
	cfg.RedisURL = a.Redis.URL
	b := startMain(t, cfg, ModeWeb)
	advance := func(d time.Duration) { a.Clock.Advance(d); b.Clock.Advance(d) }

	// At one a second, behind twenty: the test's clock moves with the wall
	// too, so the positions it expects are bounds, never exact counts.
	mt, g := a.queueGoods(1, 1, time.Minute, nil)
	const early = 20
	var earlies []string
	for i := range early {
		tok, _ := a.newUser()
		earlies = append(earlies, tok)
		if st, code, tk := a.joinQueue(tok, g.ID, ""); st != 201 || tk.State != "waiting" || tk.GoodsID != g.ID || tk.Position != int64(i+1) {
			t.Fatalf("join before the start: %d %s %+v, want waiting with %d so far", st, code, tk, i+1)
		}
	}
	shopper, _ := a.newUser()
	late, _ := a.newUser()
	st, _, again := a.joinQueue(earlies[0], g.ID, "")
	if st != 200 || again.Position != early {
		t.Fatalf("join again: %d %+v, want 200 and the same ticket", st, again)
	}
	if st, code, _ := a.queueRequest("GET", shopper, g.ID, ""); st != 404 || code != "not_found" {
		t.Fatalf("the ticket of one who never joined: %d %s", st, code)
	}
	_, plain := a.liveGoods(5, 1)
	if st, code, _ := a.joinQueue(shopper, plain.ID, ""); st != 409 || code != "conflict" {
		t.Fatalf("join first-come goods: %d %s", st, code)
	}
	if st, code := a.grabAdmitted(earlies[0], g.ID, ""); st != 403 || code != "not_admitted" {
		t.Fatalf("grab without an admission: %d %s", st, code)
	}

	// The start: the early ones are shuffled; the shopper joins behind them.
	advance(time.Minute)
	st, _, tk := a.joinQueue(shopper, g.ID, "")
	if st != 201 || tk.State != "waiting" || tk.Position < early-5 || tk.Position > early+1 || tk.ETASeconds != tk.Position {
		t.Fatalf("join after the start: %d %+v, want waiting at about %d, 1 s a place", st, tk, early+1)
	}
	if qs := a.queueStats(mt, g.ID); !qs.Started || qs.Shuffled != early || qs.Joined != early+1 || qs.Seed == "" || qs.Rate != 1 {
		t.Fatalf("merchant's view after the start: %+v", qs)
	}
	ws := dialWS(t, b.URL, shopper) // the socket is on the other process
	subscribe(t, ws, fmt.Sprintf("goods:%d", g.ID))
	earlyWS := dialWS(t, a.URL, earlies[1])
	subscribe(t, earlyWS, fmt.Sprintf("goods:%d", g.ID))
	advance(10 * time.Second)
	waitTicket(t, ws, func(tk ticketJSON) bool { return tk.State == "waiting" && tk.Position <= early+1-10 })
	advance(20 * time.Second)
	tk = waitTicket(t, ws, func(tk ticketJSON) bool {
		if tk.State == "waiting" && tk.Position < 1 || tk.State == "closed" {
			t.Fatalf("ticket %+v", tk)
		}
		return tk.State == "admitted"
	})
	if tk.Admission == "" || tk.AdmittedUntil == nil || tk.Position != 0 {
		t.Fatalf("admitted: %+v", tk)
	}
	_, _, earlyTk := a.queueRequest("GET", earlies[1], g.ID, "")
	if st, code := a.grabAdmitted(shopper, g.ID, earlyTk.Admission); st != 403 || code != "not_admitted" {
		t.Fatalf("grab with another shopper's admission: %d %s", st, code)
	}
	if st, code := b.grabAdmitted(shopper, g.ID, tk.Admission); st != 201 {
		t.Fatalf("grab with the admission: %d %s", st, code)
	}
	// The only unit is gone: the others' sockets hear the room closed.
	waitTicket(t, earlyWS, func(tk ticketJSON) bool { return tk.State == "closed" })
	if st, code, _ := a.joinQueue(late, g.ID, ""); st != 409 || code != "queue_closed" {
		t.Fatalf("join after the sell-out: %d %s", st, code)
	}
	if qs := a.queueStats(mt, g.ID); !qs.Closed || qs.Waiting != qs.Joined-qs.Admitted {
		t.Fatalf("merchant's view after the sell-out: %+v", qs)
	}
}

// The join passes the same proof of work as the grab: without it 403
// pow_required, with it 201; joining again needs none.
func TestQueueJoinNeedsProofOfWork(t *testing.T) {
	a := startApp(t)
	_, g := a.queueGoods(5, 10, time.Minute, map[string]any{"pow_bits": 8})
	shopper, _ := a.newUser()
	if st, code, _ := a.joinQueue(shopper, g.ID, ""); st != 403 || code != "pow_required" {
		t.Fatalf("join without a proof: %d %s", st, code)
	}
	if st, code, _ := a.joinQueue(shopper, g.ID, "x:y:z"); st != 403 || code != "pow_invalid" {
		t.Fatalf("join with a bad proof: %d %s", st, code)
	}
	if st, code, _ := a.joinQueue(shopper, g.ID, solve(t, a.powChallenge(shopper, g.ID))); st != 201 {
		t.Fatalf("join with a proof: %d %s", st, code)
	}
	if st, code, _ := a.joinQueue(shopper, g.ID, ""); st != 200 {
		t.Fatalf("join again: %d %s", st, code)
	}
}
