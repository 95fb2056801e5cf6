package checkout

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// Mismatch is one disagreement between the provider's payments and the store.
type Mismatch struct {
	Ref     string `json:"ref"`
	OrderID int64  `json:"order_id"`
	// Kind says what disagrees: paid_not_applied (the provider took money
	// the store has not settled), money_without_order (refused money with
	// no refund under way), refunded_order_paid (the provider gave back the
	// money of an order the store shows paid), refund_not_made (an order
	// refunded in the store whose money the provider keeps), amount (the
	// provider took another amount), unknown_trade (money for a trade the
	// store never opened), not_at_provider (an order the store shows paid
	// through the provider that the provider does not).
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// Reconcile compares the provider's payments of trades created since with
// the store and answers every mismatch, ordered by order. It also sets
// LastMismatches, which the metrics read.
func (s *Service) Reconcile(ctx context.Context, since time.Time) ([]Mismatch, error) {
	if s.Payments.Provider == nil {
		return nil, db.Errorf(db.ENOTCONFIGURED, "no payment provider is configured")
	}
	var out []Mismatch
	seen := map[string]bool{}
	err := s.Payments.Provider.Payments(ctx, since, func(p model.ProviderPayment) error {
		seen[p.Ref] = true
		m, err := s.reconcileOne(ctx, p)
		if err != nil {
			return err
		}
		if m != nil {
			out = append(out, *m)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The store's side: every trade it took money for, opened since.
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT ref, order_id FROM provider_trades WHERE state = ? AND created_ms >= ?`,
		model.TradePaid, since.UnixMilli())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var ref string
		var orderID int64
		if err := rows.Scan(&ref, &orderID); err != nil {
			return nil, err
		}
		if !seen[ref] {
			out = append(out, Mismatch{Ref: ref, OrderID: orderID, Kind: "not_at_provider", Detail: "the store shows the order paid through this trade; the provider shows no payment"})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].OrderID < out[j].OrderID })
	s.lastMismatches.Store(int64(len(out)))
	return out, nil
}

// LastMismatches is how many mismatches the last reconciliation found (-1: none ran).
func (s *Service) LastMismatches() int64 {
	if !s.reconciled.Load() {
		return -1
	}
	return s.lastMismatches.Load()
}

// ReconcileRecent is the periodic reconciliation: the last day.
func (s *Service) ReconcileRecent(ctx context.Context) (int, error) {
	if s.Payments.Provider == nil {
		return 0, nil
	}
	ms, err := s.Reconcile(ctx, s.Now().Add(-24*time.Hour))
	if err != nil {
		return 0, err
	}
	s.reconciled.Store(true)
	for _, m := range ms {
		s.Log.Warn("payment mismatch", "ref", m.Ref, "order", m.OrderID, "kind", m.Kind, "detail", m.Detail)
	}
	return len(ms), nil
}

// reconcileOne checks one provider payment against its trade and order.
func (s *Service) reconcileOne(ctx context.Context, p model.ProviderPayment) (*Mismatch, error) {
	mis := func(kind, format string, args ...any) (*Mismatch, error) {
		return &Mismatch{Ref: p.Ref, OrderID: p.OrderID, Kind: kind, Detail: fmt.Sprintf(format, args...)}, nil
	}
	refunded := p.RefundedCents >= p.AmountCents && p.AmountCents > 0
	var refundStatus string
	err := s.SQL.R.QueryRowContext(ctx, `SELECT status FROM provider_refunds WHERE ref = ?`, p.Ref).Scan(&refundStatus)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	refunding := refunded || refundStatus == "pending" || refundStatus == "succeeded"
	t, err := s.tradeByRef(ctx, p.Ref)
	if db.ErrorCode(err) == db.ENOTFOUND {
		if p.OrderID == 0 || refunding {
			return nil, nil // not one of ours, or given back
		}
		return mis("unknown_trade", "the provider took %s for a trade the store never opened", model.Yuan(p.AmountCents))
	} else if err != nil {
		return nil, err
	}
	switch t.State {
	case model.TradePaid:
		o, err := s.Goods.OrderOf(ctx, t.OrderID)
		if err != nil {
			return nil, fmt.Errorf("order %d: %w", t.OrderID, err)
		}
		switch {
		case p.AmountCents != t.AmountCents:
			return mis("amount", "the provider took %s, the order owes %s", model.Yuan(p.AmountCents), model.Yuan(t.AmountCents))
		case o.Status == model.OrderPaid && refunded:
			return mis("refunded_order_paid", "the provider refunded the payment; the store shows the order paid")
		case o.Status == model.OrderRefunded && !refunding:
			return mis("refund_not_made", "the order is refunded in the store; the provider keeps %s (refund %q)", model.Yuan(p.AmountCents), refundStatus)
		case o.Status != model.OrderPaid && o.Status != model.OrderRefunded:
			return mis("paid_not_applied", "the provider took the money; the order is %s", o.Status)
		}
		return nil, nil
	case model.TradeRefunded:
		if refunding {
			return nil, nil
		}
		return mis("money_without_order", "the payment was refused (%s) but the provider keeps it (refund %q)", t.Reason, refundStatus)
	default:
		return mis("paid_not_applied", "the provider took the money; the store's trade is %s", t.State)
	}
}
