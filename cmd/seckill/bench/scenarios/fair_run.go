package scenarios

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seckill/seckill/db/fair"
)

// One fair sale as it runs: the humans and the bots of the fleet, each
// acting through the shop's API as a browser or a script would.

// fairRun is one sale in progress.
type fairRun struct {
	f   *fairBench
	s   FairSale
	tm  fairTimes
	id  int64
	pow bool // the goods asks for a proof of work
	res *fairResult
	mu  sync.Mutex
}

// probe asks the mode's own endpoint once, as bot account 0 (which acts
// before the start anyway): a route the server does not have answers 404.
func (r *fairRun) probe() string {
	w := r.f.cfg.Humans
	var path string
	switch r.s.Mode {
	case "queue":
		path = r.path("queue")
	case "raffle":
		path = r.path("entries")
	default:
		return ""
	}
	h, _ := r.proof(w)
	code, _ := r.f.call(w, "POST", path, h, nil)
	r.botCount(code)
	if code == "not_found" || code == "http_404" || code == "http_405" {
		return fmt.Sprintf("POST %s answers %s", path, code)
	}
	return ""
}

func (r *fairRun) path(what string) string { return fmt.Sprintf("/api/goods/%d/%s", r.id, what) }

// proof solves the goods' proof of work for bot account w: the X-Pow
// header line (none when the goods asks for none), and false when the
// challenge was refused (the bot then asks again at once). The challenge
// counts as one of the fleet's requests.
func (r *fairRun) proof(w int) ([]string, bool) {
	if !r.pow {
		return nil, true
	}
	ok := false
	h := r.f.proof(w, r.id, func(code string, _ time.Duration, _ int) {
		r.botCount("challenge " + code)
		ok = code == "ok"
	})
	return h, ok
}

// proof fetches and solves a challenge of goods id for shopper w; seen, when
// set, is given the challenge request's outcome, latency and the bits asked.
func (f *fairBench) proof(w int, id int64, seen func(code string, d time.Duration, bits int)) []string {
	var ch fair.Challenge
	code, d := f.call(w, "GET", fmt.Sprintf("/api/pow?goods=%d", id), nil, &ch)
	if seen != nil {
		seen(code, d, ch.Bits)
	}
	if code != "ok" || ch.Bits == 0 {
		return nil // the action says what is missing
	}
	return []string{"X-Pow: " + fair.SolvePow(ch)}
}

// fairTicket is a waiting-room ticket (DESIGN §6).
type fairTicket struct {
	Ticket struct {
		State     string `json:"state"`
		Position  int64  `json:"position"`
		Admission string `json:"admission"`
	} `json:"ticket"`
}

func (r *fairRun) humanCount(action, code string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.humanLat = append(r.res.humanLat, d)
	if action != "" {
		r.res.humanCodes[action+" "+code]++
	}
}

func (r *fairRun) botCount(code string) {
	r.mu.Lock()
	r.res.botRequests++
	r.res.botCodes[code]++
	r.mu.Unlock()
}

// sleepUntil waits for at, or returns false when ctx ends first.
func sleepUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// human is one shopper: arrives, opens the goods' page, waits for the
// sale to open to it if early, thinks, and acts once; in the waiting room
// it reads its ticket until admitted (then grabs once) or closed. Every
// request it makes counts in its latency.
func (r *fairRun) human(ctx context.Context, w int, arrive time.Time, think time.Duration) {
	if !sleepUntil(ctx, arrive) {
		return
	}
	code, d := r.f.call(w, "GET", fmt.Sprintf("/api/goods/%d", r.id), nil, nil)
	r.humanCount("", code, d)
	if !sleepUntil(ctx, r.tm.opens) || !sleepUntil(ctx, time.Now().Add(think)) {
		return
	}
	withProof := func() []string { // the challenge counts as a request; the solve is the shopper's own time
		if !r.pow {
			return nil
		}
		return r.f.proof(w, r.id, func(code string, d time.Duration, _ int) { r.humanCount("", code, d) })
	}
	switch r.s.Mode {
	case "first_come":
		code, d := r.f.call(w, "POST", r.path("grab"), withProof(), nil)
		r.humanCount("grab", code, d)
	case "raffle":
		code, d := r.f.call(w, "POST", r.path("entries"), withProof(), nil)
		r.humanCount("enter", code, d)
	case "queue":
		var tk fairTicket
		h := withProof()
		when := "join before start_at"
		if time.Now().After(r.tm.start) {
			when = "join after start_at"
		}
		code, d := r.f.call(w, "POST", r.path("queue"), h, &tk)
		r.humanCount(when, code, d)
		if code != "ok" {
			return
		}
		for tk.Ticket.State == "waiting" {
			if !sleepUntil(ctx, time.Now().Add(r.f.cfg.Poll)) || time.Now().After(r.tm.deadline) {
				r.humanCount("still", "waiting", 0)
				return
			}
			code, d := r.f.call(w, "GET", r.path("queue"), nil, &tk)
			r.humanCount("", code, d)
			if code != "ok" {
				tk.Ticket.State = "waiting"
			}
		}
		if tk.Ticket.State != "admitted" {
			r.humanCount("ticket", tk.Ticket.State, 0)
			return
		}
		code, d = r.f.call(w, "POST", r.path("grab"), append(withProof(), "X-Admission: "+tk.Ticket.Admission), nil)
		r.humanCount("admitted grab", code, d)
	}
}

// bot is one account of the fleet, on its own connection: from a second
// before the sale opens it fires at full speed and retries at once on every
// refusal, until it holds its unit, the sale is over for it, or the bench stops it.
func (r *fairRun) bot(ctx context.Context, w int) {
	var stock [][]string
	if r.s.presolve && r.pow {
		stock = r.presolve(ctx, w)
	}
	if !sleepUntil(ctx, r.tm.botsFrom) {
		return
	}
	var tk fairTicket
	joined := false
	for ctx.Err() == nil {
		// Every action but reading the ticket carries a proof when the goods asks for one.
		needsProof := r.s.Mode != "queue" || !joined || tk.Ticket.State == "admitted"
		var h []string
		if needsProof && r.pow && len(stock) > 0 {
			h, stock = stock[0], stock[1:]
		} else if needsProof && r.pow {
			var ok bool
			if h, ok = r.proof(w); !ok {
				continue
			}
		}
		switch r.s.Mode {
		case "first_come":
			code, _ := r.f.call(w, "POST", r.path("grab"), h, nil)
			r.botCount(code)
			if code == "ok" || code == "limit_reached" {
				return
			}
		case "raffle":
			code, _ := r.f.call(w, "POST", r.path("entries"), h, nil)
			r.botCount(code)
			if code == "ok" {
				return
			}
		case "queue":
			switch {
			case !joined:
				code, _ := r.f.call(w, "POST", r.path("queue"), h, &tk)
				r.botCount(code)
				joined = code == "ok"
				if code == "queue_closed" {
					return
				}
			case tk.Ticket.State == "admitted":
				code, _ := r.f.call(w, "POST", r.path("grab"), append(h, "X-Admission: "+tk.Ticket.Admission), nil)
				r.botCount(code)
				switch code {
				case "ok", "limit_reached":
					return
				case "not_admitted": // expired: read the ticket again
					tk.Ticket.State = "waiting"
				}
			case tk.Ticket.State == "closed":
				return
			default: // waiting: poll hard
				var next fairTicket
				code, _ := r.f.call(w, "GET", r.path("queue"), nil, &next)
				r.botCount(code)
				if code == "ok" {
					tk = next
				}
			}
		}
	}
}

// presolve is a pre-solving bot's preparation: from the moment the sale
// is set up until it fires, it asks challenges for account w (again and
// again while the server answers not_started) and solves presolveStock of
// them, as a fleet that stockpiles would.
func (r *fairRun) presolve(ctx context.Context, w int) [][]string {
	var stock [][]string
	for len(stock) < presolveStock && time.Now().Before(r.tm.botsFrom) {
		h := r.f.proof(w, r.id, func(code string, _ time.Duration, _ int) { r.botCount("pre-solve challenge " + code) })
		if h != nil {
			stock = append(stock, h)
			continue
		}
		if !sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) {
			break
		}
	}
	r.mu.Lock()
	r.res.presolved += int64(len(stock))
	r.mu.Unlock()
	return stock
}

// waitDraw waits until the raffle's draw is published and its winners' orders are made.
func (r *fairRun) waitDraw(ctx context.Context) {
	conn := len(r.f.shoppers)
	r.res.entries = -1
	for sleepUntil(ctx, r.tm.start) && time.Now().Before(r.tm.deadline) {
		var d struct {
			Seed    string `json:"seed"` // published with the draw
			Entries int64  `json:"entries"`
		}
		if code, _ := r.f.callAs(conn, 0, "GET", r.path("draw"), nil, &d); code == "ok" && d.Seed != "" {
			r.res.entries = d.Entries
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	want := r.res.stock
	if r.res.entries >= 0 {
		want = min(r.res.entries, r.res.stock)
	}
	for time.Now().Before(r.tm.deadline) && ctx.Err() == nil {
		if sold, err := r.f.sold(r.id); err == nil && sold >= want {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}
