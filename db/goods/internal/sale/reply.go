package sale

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
)

// decided is one grab's answer from decideScript: its word, and a win's
// order and the order's JSON (err: sold, but unreadable here).
type decided struct {
	Code  string
	order *model.Order
	json  []byte
	err   error
}

// readDecision reads decideScript's reply res for grabs of bucket b (its
// returns are stated above the script, engine.go): each grab's answer into
// out. What each win costs besides the script is done here once for the
// call: its order read and encoded (once, for the answer and the live
// event), the stock event, the order events handed to the publisher
// together, and the journal of acknowledged orders (journal.go; the
// ledger's phantoms.go reads it) under one lock.
func (s *Sale) readDecision(b Bucket, res string, out []decided) error {
	head, rest, many := strings.Cut(res, "\n")
	if !many { // the call's one word
		for i := range out {
			out[i] = decided{Code: res}
		}
		return nil
	}
	f := strings.SplitN(head, ":", 3)
	if len(f) != 3 {
		return fmt.Errorf("grab goods %d: unreadable answer %q", b.Goods, head)
	}
	remaining, err1 := strconv.ParseInt(f[0], 10, 64)
	slot, err2 := strconv.ParseInt(f[1], 10, 64)
	version, err3 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return fmt.Errorf("grab goods %d: unreadable answer %q", b.Goods, head)
	}
	lines := strings.Split(rest, "\n")
	if len(lines) != len(out) {
		return fmt.Errorf("grab goods %d: answer has %d lines for %d grabs", b.Goods, len(lines), len(out))
	}
	var events []live.Message
	var acks []Acked
	var at time.Time
	for i := range out {
		d := &out[i]
		rec, ok := strings.CutPrefix(lines[i], "ok:")
		if !ok {
			*d = decided{Code: lines[i]}
			continue
		}
		*d = decided{Code: "ok"}
		o, err := ParseOrderRecord(b.Goods, rec)
		var enc []byte
		if err == nil {
			enc, err = o.MarshalJSON()
		}
		if err != nil { // sold, but unreadable here: the grab says so; the flush has the order
			d.err = err
			continue
		}
		d.order, d.json = o, enc
		if events == nil {
			events, acks, at = make([]live.Message, 0, len(out)), make([]Acked, 0, len(out)), time.Now()
		}
		events = append(events, orderEvent(o, enc))
		acks = append(acks, Acked{at: at, GoodsID: b.Goods, Rec: rec})
	}
	// The stock the call left, pushed before any grab of it is answered,
	// a refusal's too: a shopper told sold out, who then reads the stock
	// from this process's memory, reads what the refusal was decided on. A
	// bucket's state this process holds already is no new event of goods of
	// several buckets (stockSums.add); one bucket's is coalesced by version.
	s.PushStock(b, slot, remaining, version)
	if len(acks) > 0 {
		s.Events.SendAll(events)
		s.Acks.add(acks...)
	}
	return nil
}
