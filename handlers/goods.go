package handlers

import (
	"context"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// slotBody is the JSON of POST /api/admin/slots and PUT /api/admin/slots/{id}.
// On update a field left out is unchanged.
type slotBody struct {
	Title   *string `json:"title"`
	StartAt *string `json:"start_at"`
	EndAt   *string `json:"end_at"`
	Hidden  *bool   `json:"hidden"` // PUT: hide or show as well (alone: only that)
	// POST: a rehearsal slot (see goods.Service.DeleteRehearsal); PUT
	// cannot change it.
	Rehearsal bool `json:"rehearsal"`
}

// input parses the RFC 3339 times; a bad one is an invalid field, one left
// out too on create (update false), kept as it is on update.
func (b slotBody) input(update bool) (goods.SlotInput, error) {
	in := goods.SlotInput{Title: deref(b.Title), Rehearsal: b.Rehearsal}
	in.Kept.Title = update && b.Title == nil
	f := db.FieldErrors{}
	for _, t := range []struct {
		name string
		raw  *string
		dst  *time.Time
		kept *bool
	}{{"start_at", b.StartAt, &in.StartAt, &in.Kept.StartAt}, {"end_at", b.EndAt, &in.EndAt, &in.Kept.EndAt}} {
		if t.raw == nil && update {
			*t.kept = true
			continue
		}
		v, err := time.Parse(time.RFC3339, deref(t.raw))
		if err != nil {
			f[t.name] = "must be an RFC 3339 time like 2030-01-02T10:00:00Z"
		}
		*t.dst = v.UTC()
	}
	return in, f.Err()
}

// goodsBody is the JSON of POST /api/admin/goods and PUT /api/admin/goods/{id}.
// Every field is a pointer: on update a field left out is unchanged; on
// create a price left out is refused, not taken as free, and a title or
// stock left out is refused as empty.
type goodsBody struct {
	SlotID            *int64  `json:"slot_id"` // update: the goods stay in their slot
	Title             *string `json:"title"`
	Description       *string `json:"description"`
	PriceCents        *int64  `json:"price_cents"`
	SeckillPriceCents *int64  `json:"seckill_price_cents"`
	Stock             *int64  `json:"stock"`
	LimitPerUser      *int64  `json:"limit_per_user"` // create: left out or 0, 1
	Shards            *int    `json:"shards"`         // Redis buckets of the stock, 1–8 (create: 1 if left out; update: unchanged)
	Hidden            *bool   `json:"hidden"`         // PUT: hide or show as well (alone: only that)
	// Left out: none on create, unchanged on update (null is refused: bind).
	PowBits           *int  `json:"pow_bits"`
	PreregisteredOnly *bool `json:"preregistered_only"`
	// Fair sales (left out: first come and the defaults on
	// create, unchanged on update; any value sent is checked).
	Mode             *string    `json:"mode"`
	QueueRate        *int       `json:"queue_rate"`
	AdmissionSeconds *int       `json:"admission_seconds"`
	EntryStartAt     *time.Time `json:"entry_start_at"`
}

// input is the goods as sent. On create (update false) a price left out is
// an invalid field; on update every field left out is kept as it is.
func (b goodsBody) input(update bool) (goods.Input, error) {
	in := goods.Input{SlotID: deref(b.SlotID), Title: deref(b.Title), Description: b.Description,
		PriceCents: deref(b.PriceCents), SeckillPriceCents: deref(b.SeckillPriceCents), Stock: deref(b.Stock), LimitPerUser: deref(b.LimitPerUser),
		Shards: b.Shards, PowBits: b.PowBits, PreregisteredOnly: b.PreregisteredOnly,
		Mode: b.Mode, QueueRate: b.QueueRate, AdmissionSeconds: b.AdmissionSeconds, EntryStartAt: b.EntryStartAt}
	if update {
		in.Kept = goods.Kept{Title: b.Title == nil, PriceCents: b.PriceCents == nil, SeckillPriceCents: b.SeckillPriceCents == nil,
			Stock: b.Stock == nil, LimitPerUser: b.LimitPerUser == nil}
		return in, nil
	}
	f := db.FieldErrors{}
	if b.PriceCents == nil {
		f["price_cents"] = "is required"
	}
	if b.SeckillPriceCents == nil {
		f["seckill_price_cents"] = "is required"
	}
	return in, f.Err()
}

// CreateSlot adds a time slot: POST /api/admin/slots.
func (h *GoodsDesk) CreateSlot(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	var b slotBody
	if err := bind(c, &b); err != nil {
		return err
	}
	in, err := b.input(false)
	if err != nil {
		return err
	}
	sl, err := h.Goods.CreateSlot(c.UserContext(), cl, in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"slot": sl})
}

// UpdateSlot edits a slot: PUT /api/admin/slots/{id}.
func (h *GoodsDesk) UpdateSlot(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	if hide, only, err := onlyHidden(c); err != nil {
		return err
	} else if only {
		sl, err := h.Goods.SetSlotHidden(c.UserContext(), cl, id, hide)
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"slot": sl})
	}
	var b slotBody
	if err := bind(c, &b); err != nil {
		return err
	}
	in, err := b.input(true)
	if err != nil {
		return err
	}
	sl, err := h.Goods.UpdateSlot(c.UserContext(), cl, id, in)
	if err == nil && b.Hidden != nil {
		sl, err = h.Goods.SetSlotHidden(c.UserContext(), cl, id, *b.Hidden)
	}
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"slot": sl})
}

// ListSlots answers the live and upcoming slots: GET /api/slots.
func (h *Goods) ListSlots(c *fiber.Ctx) error {
	cat := h.Goods.Catalog()
	return h.sendShared(c, "api/slots", cat.Version(c.UserContext()), func() ([]byte, error) {
		slots, err := cat.Slots(c.UserContext())
		if err != nil {
			return nil, err
		}
		return jsonBytes(c, fiber.Map{"slots": slots})
	})
}

// AdminListSlots answers the caller's own slots, ended ones too: GET /api/admin/slots.
func (h *GoodsDesk) AdminListSlots(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	slots, err := h.Goods.MerchantSlots(c.UserContext(), cl)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"slots": slots})
}

// SlotGoods answers a slot's goods with live remaining stock: GET /api/slots/{id}/goods.
func (h *Goods) SlotGoods(c *fiber.Ctx) error {
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	cl, _ := ClaimsOf(c)
	cat := h.Goods.Catalog()
	if _, err := cat.ShopperSlot(c.UserContext(), cl, id); err != nil {
		return err
	}
	version := ""
	if !cl.Staff() { // staff may see hidden goods: answered for them alone
		version = cat.Version(c.UserContext())
	}
	return h.sendShared(c, "api/slots/"+strconv.FormatInt(id, 10)+"/goods", version, func() ([]byte, error) {
		gs, err := cat.ShopperSlotGoods(c.UserContext(), cl, id)
		if err != nil {
			return nil, err
		}
		return jsonBytes(c, fiber.Map{"goods": gs})
	})
}

// CreateGoods adds goods to a slot: POST /api/admin/goods.
func (h *GoodsDesk) CreateGoods(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	var b goodsBody
	if err := bind(c, &b); err != nil {
		return err
	}
	in, err := b.input(false)
	if err != nil {
		return err
	}
	g, err := h.Goods.Create(c.UserContext(), cl, in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"goods": g})
}

// UpdateGoods edits goods: PUT /api/admin/goods/{id}.
func (h *GoodsDesk) UpdateGoods(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	if hide, only, err := onlyHidden(c); err != nil {
		return err
	} else if only {
		g, err := h.Goods.SetGoodsHidden(c.UserContext(), cl, id, hide)
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"goods": g})
	}
	var b goodsBody
	if err := bind(c, &b); err != nil {
		return err
	}
	in, err := b.input(true)
	if err != nil {
		return err
	}
	g, err := h.Goods.Update(c.UserContext(), cl, id, in)
	if err == nil && b.Hidden != nil {
		g, err = h.Goods.SetGoodsHidden(c.UserContext(), cl, id, *b.Hidden)
	}
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"goods": g})
}

// GetGoods answers one goods with live remaining stock: GET /api/goods/{id}.
func (h *Goods) GetGoods(c *fiber.Ctx) error {
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	cl, _ := ClaimsOf(c)
	cat := h.Goods.Catalog()
	g, _, err := cat.ShopperGoods(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	version := ""
	if !cl.Staff() {
		version = cat.GoodsVersion(c.UserContext(), id)
	}
	return h.sendShared(c, "api/goods/"+strconv.FormatInt(id, 10), version, func() ([]byte, error) {
		return jsonBytes(c, fiber.Map{"goods": g})
	})
}

// GoodsStats answers Redis's live counts beside SQLite's: GET /api/admin/goods/{id}/stats.
func (h *GoodsDesk) GoodsStats(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	st, err := h.Goods.Stats(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	return c.JSON(st)
}

// Grab takes one unit of goods for the caller: POST /api/goods/{id}/grab.
// The caller comes from the signed token, so nothing is looked up first.
func (h *Goods) Grab(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	ctx, err := opContext(c)
	if err != nil {
		return err
	}
	o := h.Goods.Decide(ctx, []goods.Grab{{User: cl.UserID, Goods: id, Pass: goods.Pass{Pow: c.Get("X-Pow"), Admission: c.Get("X-Admission")}}})[0]
	if o.Err != nil {
		return o.Err
	}
	return sendOrderJSON(c, fiber.StatusCreated, o.JSON)
}

// PowChallenge answers a proof-of-work challenge for the caller's grab: GET /api/pow?goods={id}.
func (h *Fair) PowChallenge(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Query("goods"), 10, 64)
	if err != nil || id <= 0 {
		return db.FieldErrorf("goods", "must be a goods id (a positive integer)")
	}
	ch, err := h.Fair.PowChallenge(c.UserContext(), cl.UserID, id)
	if err != nil {
		return err
	}
	return c.JSON(ch)
}

// GetOrder answers one of the caller's orders: GET /api/orders/{id}.
func (h *Goods) GetOrder(c *fiber.Ctx) error {
	return orderAction(c, h.Goods.Order)
}

// CancelOrder cancels one of the caller's unpaid orders: POST /api/orders/{id}/cancel.
func (h *Goods) CancelOrder(c *fiber.Ctx) error {
	return orderAction(c, h.Goods.CancelOrder)
}

func orderAction(c *fiber.Ctx, act func(ctx context.Context, userID, orderID int64) (*model.Order, error)) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	ctx, err := opContext(c)
	if err != nil {
		return err
	}
	o, err := act(ctx, cl.UserID, id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"order": o})
}

// MyOrders answers the caller's orders, newest first: GET /api/me/orders.
func (h *Goods) MyOrders(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	orders, err := h.Goods.MyOrders(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"orders": orders})
}

// deref is *p, or the zero value when p is nil (a field left out).
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
