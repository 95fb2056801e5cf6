package checkout

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
)

// The merchant orders desk: a merchant's (an admin's: every) orders,
// searched and filtered, one order with its history, and a refund with a
// reason.
//
// The list reads the durable store, not Redis: orders reach it through the
// batch flush, so an order grabbed or changed in the last flush interval
// (FLUSH_INTERVAL, 1s by default) may be missing from the list or show its
// previous status there. One order's page reads the order live (Redis while
// its goods is active), so what a merchant refunds is what the sale holds.

// Limits of the desk's list pages and of a refund's reason.
const (
	DeskDefaultLimit = 50
	DeskMaxLimit     = 200
	RefundReasonMax  = 200
)

// DeskFilter is what the desk's list is narrowed to; zero fields do not narrow.
type DeskFilter struct {
	// Q is an order number ("G12-0007", "#G12-0007"), an order ID, or a
	// username or the start of one (any case).
	Q       string
	GoodsID int64
	SlotID  int64
	Status  string
	// From and To bound the time the order was created: From ≤ created < To.
	From, To time.Time
	// Before is the cursor of the page: DeskPage.NextBefore of the page before.
	Before string
	Limit  int
}

// DeskPage is one page of the desk's list, newest first.
type DeskPage struct {
	Orders []model.DeskOrder `json:"orders"`
	// NextBefore is Before for the next, older page; empty on the last.
	NextBefore string `json:"next_before,omitempty"`
}

// orderNumberRE reads an order number as pages show it.
var orderNumberRE = regexp.MustCompile(`^#?[Gg](\d{1,18})-(\d{1,9})$`)

// ParseOrderNumber reads "G12-0007" (or "#G12-0007") as the order's ID.
func ParseOrderNumber(s string) (int64, bool) {
	m := orderNumberRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, false
	}
	g, err1 := strconv.ParseInt(m[1], 10, 64)
	seq, err2 := strconv.ParseInt(m[2], 10, 64)
	if err1 != nil || err2 != nil || g <= 0 || g > (1<<63-1)/model.OrderSeqSpan-1 || seq <= 0 {
		return 0, false
	}
	return g*model.OrderSeqSpan + seq, true
}

// deskCursor is a list position: the created time and ID of the last order shown.
type deskCursor struct{ createdMs, id int64 }

func (c deskCursor) String() string { return fmt.Sprintf("%d-%d", c.createdMs, c.id) }

func parseDeskCursor(s string) (deskCursor, error) {
	a, b, ok := strings.Cut(s, "-")
	ms, err1 := strconv.ParseInt(a, 10, 64)
	id, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || ms < 0 || id <= 0 {
		return deskCursor{}, db.FieldErrorf("before", "must be the next_before of the page before")
	}
	return deskCursor{ms, id}, nil
}

// likeEscape escapes LIKE's wildcards (usernames may hold "_") with a backslash.
var likeEscape = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// deskColumns are what a desk row reads: the order, its goods title and its shopper's name.
const deskColumns = `o.id, o.goods_id, COALESCE(g.title, ''), o.user_id, COALESCE(u.username, ''), o.status, o.failure,
	o.amount_cents, o.discount_cents, o.paid_cents, o.user_coupon_id, o.created_ms, o.paid_at_ms, o.refunded_ms, o.updated_ms`

func scanDeskOrder(row interface{ Scan(...any) error }) (model.DeskOrder, error) {
	var o model.DeskOrder
	var created, paidAt, refunded, updated int64
	if err := row.Scan(&o.ID, &o.GoodsID, &o.GoodsTitle, &o.UserID, &o.Username, &o.Status, &o.Failure,
		&o.AmountCents, &o.DiscountCents, &o.PaidCents, &o.UserCouponID, &created, &paidAt, &refunded, &updated); err != nil {
		return o, err
	}
	o.Number = model.OrderNumber(o.ID)
	o.CreatedAt, o.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	if paidAt > 0 {
		t := time.UnixMilli(paidAt).UTC()
		o.PaidAt = &t
	}
	if refunded > 0 {
		t := time.UnixMilli(refunded).UTC()
		o.RefundedAt = &t
	}
	return o, nil
}

// DeskOrders lists the orders the caller may see (a merchant: its goods'
// orders; an admin: all), narrowed by f, newest first, from the durable
// store (see the lag above).
func (s *Service) DeskOrders(ctx context.Context, by model.Claims, f DeskFilter) (*DeskPage, error) {
	if f.Limit == 0 {
		f.Limit = DeskDefaultLimit
	} else if f.Limit < 0 || f.Limit > DeskMaxLimit {
		return nil, db.FieldErrorf("limit", "must be 1–%d", DeskMaxLimit)
	}
	// A rehearsal's orders are not the shop's: the desk never shows them.
	q := `SELECT ` + deskColumns + ` FROM orders o JOIN goods g ON g.id = o.goods_id LEFT JOIN users u ON u.id = o.user_id
		WHERE g.slot_id NOT IN (SELECT id FROM slots WHERE rehearsal = 1)`
	var args []any
	switch by.Role {
	case model.RoleAdmin:
	case model.RoleMerchant:
		q += ` AND g.merchant_id = ?`
		args = append(args, by.UserID)
	default:
		return nil, db.ErrForbidden
	}
	if f.GoodsID != 0 {
		q += ` AND o.goods_id = ?`
		args = append(args, f.GoodsID)
	}
	if f.SlotID != 0 {
		q += ` AND g.slot_id = ?`
		args = append(args, f.SlotID)
	}
	if f.Status != "" {
		known := false
		for _, st := range model.OrderStatuses {
			known = known || st == f.Status
		}
		if !known {
			return nil, db.FieldErrorf("status", "must be one of %s", strings.Join(model.OrderStatuses, ", "))
		}
		q += ` AND o.status = ?`
		args = append(args, f.Status)
	}
	if !f.From.IsZero() {
		q += ` AND o.created_ms >= ?`
		args = append(args, f.From.UnixMilli())
	}
	if !f.To.IsZero() {
		q += ` AND o.created_ms < ?`
		args = append(args, f.To.UnixMilli())
	}
	if text := strings.TrimSpace(f.Q); text != "" {
		if id, ok := ParseOrderNumber(text); ok {
			q += ` AND o.id = ?`
			args = append(args, id)
		} else {
			name := likeEscape.Replace(strings.ToLower(strings.TrimPrefix(text, "@"))) + "%"
			if id, err := strconv.ParseInt(text, 10, 64); err == nil {
				q += ` AND (o.id = ? OR lower(u.username) LIKE ? ESCAPE '\')`
				args = append(args, id, name)
			} else {
				q += ` AND lower(u.username) LIKE ? ESCAPE '\'`
				args = append(args, name)
			}
		}
	}
	if f.Before != "" {
		c, err := parseDeskCursor(f.Before)
		if err != nil {
			return nil, err
		}
		q += ` AND (o.created_ms < ? OR (o.created_ms = ? AND o.id < ?))`
		args = append(args, c.createdMs, c.createdMs, c.id)
	}
	// One more than a page tells whether there is an older one.
	q += ` ORDER BY o.created_ms DESC, o.id DESC LIMIT ?`
	args = append(args, f.Limit+1)
	rows, err := s.SQL.R.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list desk orders: %w", err)
	}
	defer rows.Close()
	page := &DeskPage{Orders: []model.DeskOrder{}}
	for rows.Next() {
		o, err := scanDeskOrder(rows)
		if err != nil {
			return nil, err
		}
		page.Orders = append(page.Orders, o)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(page.Orders) > f.Limit {
		page.Orders = page.Orders[:f.Limit]
		last := page.Orders[f.Limit-1]
		page.NextBefore = deskCursor{last.CreatedAt.UnixMilli(), last.ID}.String()
	}
	return page, nil
}

// DeskOrderView is one order on the desk with its history, oldest step first.
type DeskOrderView struct {
	Order   model.DeskOrder   `json:"order"`
	History []model.OrderStep `json:"history"`
}

// DeskOrder returns one order the caller may see, read live, with its
// history; another merchant's order is not found.
func (s *Service) DeskOrder(ctx context.Context, by model.Claims, id int64) (*DeskOrderView, error) {
	o, err := s.deskOrder(ctx, by, id)
	if err != nil {
		return nil, err
	}
	h, err := s.history(ctx, o)
	if err != nil {
		return nil, err
	}
	return &DeskOrderView{Order: *o, History: h}, nil
}

// deskOrder reads the order live (Redis while its goods is active, else the
// store) when the caller manages its goods.
func (s *Service) deskOrder(ctx context.Context, by model.Claims, id int64) (*model.DeskOrder, error) {
	o, err := s.Goods.OrderOf(ctx, id)
	if err != nil {
		return nil, err
	}
	g, err := s.Goods.Owned(ctx, by, o.GoodsID)
	if err == nil && g.Rehearsal { // not the shop's (see DeskOrders)
		err = db.Errorf(db.ENOTFOUND, "order %d not found", id)
	}
	if db.ErrorCode(err) == db.ENOTFOUND {
		return nil, db.Errorf(db.ENOTFOUND, "order %d not found", id)
	} else if err != nil {
		return nil, err
	}
	o.GoodsTitle = g.Title
	var name string
	err = s.SQL.R.QueryRowContext(ctx, `SELECT username FROM users WHERE id = ?`, o.UserID).Scan(&name)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("order %d: its shopper: %w", id, err)
	}
	d := model.DeskOrderOf(o, name)
	return &d, nil
}

// history is what the order went through, derived from what is recorded:
// the order's own times (created, paid, refunded; the last change for an
// order that was cancelled, expired or failed), the payments table (paid
// by the gateway) and the audit log (who refunded it, and why). No separate
// history is written, so a step between (a refund given back by nothing
// else) cannot be missed or disagree with the order.
func (s *Service) history(ctx context.Context, o *model.DeskOrder) ([]model.OrderStep, error) {
	steps := []model.OrderStep{{At: o.CreatedAt, Status: "created", Actor: model.ActorShopper, ActorName: o.Username}}
	if o.PaidAt != nil {
		st := model.OrderStep{At: *o.PaidAt, Status: model.OrderPaid, Actor: model.ActorShopper, ActorName: o.Username}
		var n int
		err := s.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM payments WHERE order_id = ? AND outcome = ?`, o.ID, model.OrderPaid).Scan(&n)
		if err != nil {
			return nil, fmt.Errorf("order %d: its payments: %w", o.ID, err)
		}
		if n > 0 {
			st.Actor, st.ActorName = model.ActorGateway, ""
		}
		if o.UserCouponID > 0 {
			st.Detail = fmt.Sprintf("with coupon %d: %s off", o.UserCouponID, model.Yuan(o.DiscountCents))
		}
		steps = append(steps, st)
	}
	switch o.Status {
	case model.OrderCancelled:
		steps = append(steps, model.OrderStep{At: o.UpdatedAt, Status: o.Status, Actor: model.ActorShopper, ActorName: o.Username})
	case model.OrderExpired:
		steps = append(steps, model.OrderStep{At: o.UpdatedAt, Status: o.Status, Actor: model.ActorSystem, Detail: "not paid in time"})
	case model.OrderFailed:
		steps = append(steps, model.OrderStep{At: o.UpdatedAt, Status: o.Status, Actor: model.ActorSystem, Detail: o.Failure})
	case model.OrderRefunded:
		st, err := s.refundStep(ctx, o)
		if err != nil {
			return nil, err
		}
		steps = append(steps, st)
	}
	return s.providerSteps(ctx, o, steps)
}

// refundStep is the refund of o: who made it and why, from its audit entry
// (every refund, the shopper's and the desk's, is audited as order.refund).
func (s *Service) refundStep(ctx context.Context, o *model.DeskOrder) (model.OrderStep, error) {
	st := model.OrderStep{At: o.UpdatedAt, Status: model.OrderRefunded, Actor: model.ActorUnknown}
	if o.RefundedAt != nil {
		st.At = *o.RefundedAt
	}
	var actorID int64
	var actor, detail, role string
	err := s.SQL.R.QueryRowContext(ctx, `SELECT COALESCE(a.actor_id, 0), a.actor, a.detail, COALESCE(u.role, '')
		FROM audit_log a LEFT JOIN users u ON u.id = a.actor_id
		WHERE a.target = ? AND a.action = 'order.refund' ORDER BY a.id DESC LIMIT 1`, "order:"+strconv.FormatInt(o.ID, 10)).
		Scan(&actorID, &actor, &detail, &role)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return st, nil // refunded before refunds were audited, or the entry failed to append
	case err != nil:
		return st, fmt.Errorf("order %d: its refund's audit entry: %w", o.ID, err)
	}
	st.ActorName = actor
	switch {
	case actorID == o.UserID:
		st.Actor = model.ActorShopper
	case role == model.RoleAdmin:
		st.Actor = model.ActorAdmin
	case role == model.RoleMerchant:
		st.Actor = model.ActorMerchant
	}
	var fields struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal([]byte(detail), &fields) == nil {
		st.Detail = fields.Reason
	}
	return st, nil
}

// ValidRefundReason is the reason as a refund keeps it (trimmed), or an
// invalid error unless it is 1–RefundReasonMax characters.
func ValidRefundReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	if n := utf8.RuneCountInString(reason); n < 1 || n > RefundReasonMax || !utf8.ValidString(reason) {
		return "", db.FieldErrorf("reason", "must be 1–%d characters", RefundReasonMax)
	}
	return reason, nil
}

// DeskRefund refunds a paid order of the caller's goods by the shopper's
// refund (Refund: the same rule, the coupon given back): any order that is
// not paid, refunded ones included, is a conflict, and of two refunds at
// once one is. The reason is checked
// here; the audit entry that records it is written by the web layer, as
// for every merchant change.
//
// Under an Idempotency-Key (the caller's, for this order) a retry answers
// what the first call answered, a refusal too, and says it replayed: a
// refund the caller made is never its conflict.
func (s *Service) DeskRefund(ctx context.Context, by model.Claims, id int64, reason string) (o *model.DeskOrder, replayed bool, err error) {
	return backend.Keyed(ctx, s.Backend, "desk-refund:"+strconv.FormatInt(id, 10), by.UserID, func(ctx context.Context) (*model.DeskOrder, error) {
		return s.deskRefund(ctx, by, id, reason)
	})
}

// deskRefund is DeskRefund run once.
func (s *Service) deskRefund(ctx context.Context, by model.Claims, id int64, reason string) (*model.DeskOrder, error) {
	if _, err := ValidRefundReason(reason); err != nil {
		return nil, err
	}
	o, err := s.deskOrder(ctx, by, id)
	if err != nil {
		return nil, err
	}
	// A keyed refund runs the refund script under the caller's key, kept
	// apart from the shopper's own keys, so a retry whose first answer was
	// lost after the refund (a replica that did not confirm in time) learns
	// from the script's memo that the refund was its own. An order refunded
	// already goes on to the script for that; any other refund is refused.
	if o.Status != model.OrderPaid && (!db.HasIdempotencyKey(ctx) || o.Status != model.OrderRefunded) {
		return nil, db.Errorf(db.ECONFLICT, "only a paid order can be refunded; this one is %s", o.Status)
	}
	ctx = db.WithIdempotencyScope(ctx, "desk:"+strconv.FormatInt(by.UserID, 10))
	r, now, err := s.refund(ctx, o.UserID, id)
	if err != nil {
		return nil, err
	}
	if !now { // refunded between the read above and the refund: by another request, which answered it
		return nil, db.Errorf(db.ECONFLICT, "only a paid order can be refunded; this one is %s", r.Status)
	}
	s.refundProviderPaid(ctx, r, RefundMerchant)
	r.GoodsTitle = o.GoodsTitle
	d := model.DeskOrderOf(r, o.Username)
	return &d, nil
}

// DeskChoice is one goods the desk's filters offer, with its slot.
type DeskChoice struct {
	GoodsID    int64
	GoodsTitle string
	SlotID     int64
	SlotTitle  string
}

// deskChoicesMax is how many goods the filters offer: the newest ones; older
// goods are still found by their number or the goods_id of their page's link.
const deskChoicesMax = 500

// DeskChoices are the goods the caller manages (an admin: all), newest
// first, for the desk's goods and slot filters.
func (s *Service) DeskChoices(ctx context.Context, by model.Claims) ([]DeskChoice, error) {
	q := `SELECT g.id, g.title, g.slot_id, COALESCE(sl.title, '') FROM goods g LEFT JOIN slots sl ON sl.id = g.slot_id
		WHERE COALESCE(sl.rehearsal, 0) = 0`
	args := []any{}
	switch by.Role {
	case model.RoleAdmin:
	case model.RoleMerchant:
		q += ` AND g.merchant_id = ?`
		args = append(args, by.UserID)
	default:
		return nil, db.ErrForbidden
	}
	rows, err := s.SQL.R.QueryContext(ctx, q+` ORDER BY g.id DESC LIMIT ?`, append(args, deskChoicesMax)...)
	if err != nil {
		return nil, fmt.Errorf("desk choices: %w", err)
	}
	defer rows.Close()
	out := []DeskChoice{}
	for rows.Next() {
		var c DeskChoice
		if err := rows.Scan(&c.GoodsID, &c.GoodsTitle, &c.SlotID, &c.SlotTitle); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// DeskExportRow is one order of the desk's export: the order as the desk
// lists it, and for a refund who gave it and why.
type DeskExportRow struct {
	model.DeskOrder
	RefundedBy, RefundReason string
}

// DeskExport calls each with every order the desk lists for f (its page
// and limit aside), newest first, a page of the store at a time: the
// export holds what the filters show, however many pages that is.
func (s *Service) DeskExport(ctx context.Context, by model.Claims, f DeskFilter, each func(DeskExportRow) error) error {
	f.Before, f.Limit = "", DeskMaxLimit
	for {
		page, err := s.DeskOrders(ctx, by, f)
		if err != nil {
			return err
		}
		for _, o := range page.Orders {
			row := DeskExportRow{DeskOrder: o}
			if o.Status == model.OrderRefunded {
				st, err := s.refundStep(ctx, &o)
				if err != nil {
					return err
				}
				row.RefundedBy, row.RefundReason = st.ActorName, st.Detail
			}
			if err := each(row); err != nil {
				return err
			}
		}
		if page.NextBefore == "" {
			return nil
		}
		f.Before = page.NextBefore
	}
}
