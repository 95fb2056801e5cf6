package handlers

import (
	"context"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
)

// SlotsPage is the shopper's slot menu: GET /slots and /slots/{id}, from
// the catalog in memory (rendered once per change for readers not signed in).
func (h *Goods) SlotsPage(c *fiber.Ctx) error {
	ctx := c.UserContext()
	cat := h.Goods.Catalog()
	cl, _ := ClaimsOf(c)
	var id int64
	if c.Params("id") != "" {
		var err error
		if id, err = paramID(c, "id"); err != nil {
			return err
		}
		if _, err := cat.ShopperSlot(ctx, cl, id); err != nil {
			return err
		}
	}
	return h.sharedPage(c, "slots", cat.Version(ctx), func(p views.Page) (templ.Component, error) {
		slots, err := cat.Slots(ctx)
		if err != nil {
			return nil, err
		}
		v := views.SlotsView{Slots: slots}
		if id != 0 {
			if v.Current, err = cat.ShopperSlot(ctx, cl, id); err != nil {
				return nil, err
			}
		} else if len(slots) > 0 {
			v.Current = &slots[0] // the earliest is live if any is
		}
		if v.Current != nil {
			if v.Goods, err = cat.ShopperSlotGoods(ctx, cl, v.Current.ID); err != nil {
				return nil, err
			}
			if ownIn(p) {
				if v.Orders, err = h.Goods.MyOrders(ctx, cl.UserID); err != nil {
					return nil, err
				}
			}
		}
		p.Title = "Seckill"
		return views.SlotsPage(p, v), nil
	})
}

// GoodsPage shows one goods with the Grab button: GET /goods/{id}. The
// goods comes from the catalog in memory; a reader not signed in gets the
// page rendered once per change of the goods, a shopper theirs with their
// orders and reminders.
func (h *Goods) GoodsPage(c *fiber.Ctx) error {
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	cat := h.Goods.Catalog()
	viewer, _ := ClaimsOf(c)
	g, leftovers, err := cat.ShopperGoods(ctx, viewer, id)
	if err != nil {
		return err
	}
	return h.sharedPage(c, "goods", cat.GoodsVersion(ctx, id), func(p views.Page) (templ.Component, error) {
		v := views.GoodsView{Goods: *g, Leftovers: leftovers && g.Mode == model.ModeRaffle && g.State == model.SlotLive}
		if p.User != nil {
			var booked []model.BookedReminder
			if ownIn(p) {
				var err error
				if v.Orders, err = ordersOn(ctx, h.Goods, viewer.UserID, id); err != nil {
					return nil, err
				}
				if g.State == model.SlotUpcoming {
					if booked, err = h.Goods.Reminders(ctx, viewer.UserID, id); err != nil {
						return nil, err
					}
				}
			}
			if g.State == model.SlotUpcoming {
				v.Reminders = views.Picker{Kind: "goods", ID: id, StartAt: g.StartAt, Now: h.now(), Channels: map[string]string{}, Booked: booked, FetchOwn: p.FetchOwn}
				for _, ch := range model.Channels {
					if goods.ReminderChannelProblem(ch) != "" {
						v.Reminders.Channels[ch] = "seckill goods remind you in the app only"
					}
				}
			}
		}
		p.Title = g.Title
		return views.GoodsPage(p, v), nil
	})
}

// MyOrdersPage lists the caller's orders with Pay buttons: GET /me/orders.
func (h *Goods) MyOrdersPage(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	orders, err := h.Goods.MyOrders(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	return render(c, fiber.StatusOK, views.OrdersPage(h.page(c, "My orders"), views.OrdersView{Orders: orders}))
}

// AdminSlotsPage lists the merchant's slots with the form to add one: GET /admin/slots.
func (h *GoodsDesk) AdminSlotsPage(c *fiber.Ctx) error {
	start := h.now().UTC().Truncate(time.Hour).Add(time.Hour)
	form := views.SlotForm{StartAt: views.DateTimeLocal(start), EndAt: views.DateTimeLocal(start.Add(2 * time.Hour))}
	return h.adminSlots(c, fiber.StatusOK, form)
}

func (h *GoodsDesk) adminSlots(c *fiber.Ctx, status int, form views.SlotForm) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	slots, err := h.Goods.MerchantSlots(c.UserContext(), cl)
	if err != nil {
		return err
	}
	return render(c, status, views.AdminSlotsPage(h.page(c, "Time slots"), views.AdminSlotsView{Slots: slots, Form: form}))
}

func slotFormOf(c *fiber.Ctx) views.SlotForm {
	return views.SlotForm{Title: c.FormValue("title"), StartAt: c.FormValue("start_at"), EndAt: c.FormValue("end_at"), Rehearsal: c.FormValue("rehearsal") != ""}
}

// formStatus is the status of a form page shown again with its problems:
// fields the handler could not parse, or the service's refusal; ok is false
// when there is neither (err, if any, is then the error handler's).
func formStatus(parseErrs db.FieldErrors, err error) (status int, ok bool) {
	if len(parseErrs) > 0 {
		return invalidForm, true
	}
	return refusal(err)
}

func goodsFormOf(c *fiber.Ctx) views.GoodsForm {
	return views.GoodsForm{Title: c.FormValue("title"), Description: c.FormValue("description"), Price: c.FormValue("price_cents"),
		SeckillPrice: c.FormValue("seckill_price_cents"), Stock: c.FormValue("stock"), Limit: c.FormValue("limit_per_user"),
		Demand: c.FormValue("demand"), Shards: c.FormValue("shards"),
		PowBits: c.FormValue("pow_bits"), Preregistered: c.FormValue("preregistered_only") != "",
		Mode: c.FormValue("mode"), QueueRate: c.FormValue("queue_rate"), AdmissionSeconds: c.FormValue("admission_seconds"),
		EntryStartAt: c.FormValue("entry_start_at"), TZOffset: c.FormValue("tz_offset")}
}

// AdminCreateSlot handles the new-slot form: POST /admin/slots.
func (h *GoodsDesk) AdminCreateSlot(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	form := slotFormOf(c)
	in, parseErrs := slotFormInput(form, c.FormValue("tz_offset"))
	normalizeSlotForm(&form, in)
	var sl *model.Slot
	if len(parseErrs) == 0 {
		sl, err = h.Goods.CreateSlot(c.UserContext(), cl, in)
	} else {
		err = h.Goods.CheckSlot(in) // every problem at once
	}
	if status, ok := formStatus(parseErrs, err); ok {
		form.Errors, form.Error = mergeFieldErrors(parseErrs, err)
		return h.adminSlots(c, status, form)
	} else if err != nil {
		return err
	}
	return redirectWithFlash(c, "/admin/slots/"+strconv.FormatInt(sl.ID, 10), "Slot “"+sl.Title+"” created. Add its goods below.")
}

// AdminSlotPage is one slot's live sales dashboard and forms: GET /admin/slots/{id}.
func (h *GoodsDesk) AdminSlotPage(c *fiber.Ctx) error {
	return h.adminSlot(c, fiber.StatusOK, nil, &views.GoodsForm{Limit: "1"})
}

func (h *GoodsDesk) adminSlot(c *fiber.Ctx, status int, slotForm *views.SlotForm, goodsForm *views.GoodsForm) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	sl, sales, err := h.Goods.SlotSales(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	v := views.AdminSlotView{Slot: *sl, Sales: sales, Totals: goods.SlotSalesOf(*sl, sales).Totals, SlotForm: views.SlotFormOf(*sl), GoodsForm: views.GoodsForm{Limit: "1"}}
	if slotForm != nil {
		v.SlotForm = slotForm.FixedIf(*sl)
	}
	if goodsForm != nil {
		v.GoodsForm = *goodsForm
	}
	return render(c, status, views.AdminSlotPage(h.page(c, sl.Title), v))
}

// AdminUpdateSlot handles the edit-slot form: POST /admin/slots/{id}.
func (h *GoodsDesk) AdminUpdateSlot(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	old, err := h.Goods.OwnedSlot(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	form := slotFormOf(c)
	in, parseErrs := slotFormInput(form, c.FormValue("tz_offset"))
	if old.State != model.SlotUpcoming { // started: the form offers the title alone, the times stay
		in.StartAt, in.EndAt, parseErrs = old.StartAt, old.EndAt, nil
	}
	normalizeSlotForm(&form, in)
	if len(parseErrs) == 0 {
		_, err = h.Goods.UpdateSlot(c.UserContext(), cl, id, in)
	} else {
		err = h.Goods.CheckSlot(in)
	}
	if status, ok := formStatus(parseErrs, err); ok {
		form.Errors, form.Error = mergeFieldErrors(parseErrs, err)
		return h.adminSlot(c, status, &form, nil)
	} else if err != nil {
		return err
	}
	return redirectWithNote(c, "/admin/slots/"+strconv.FormatInt(id, 10), views.FlashSuccess, views.PlaceSlotEdit, "Slot saved.")
}

// AdminCreateGoods handles the add-goods form: POST /admin/slots/{id}/goods.
func (h *GoodsDesk) AdminCreateGoods(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	form := goodsFormOf(c)
	in, parseErrs := goodsFormInput(form, id)
	var g *model.Goods
	if len(parseErrs) == 0 {
		g, err = h.Goods.Create(c.UserContext(), cl, in)
	} else {
		err = h.Goods.Check(c.UserContext(), cl, 0, in)
	}
	if status, ok := formStatus(parseErrs, err); ok {
		form.Errors, form.Error = mergeFieldErrors(parseErrs, err)
		return h.adminSlot(c, status, nil, &form)
	} else if err != nil {
		return err
	}
	setCreated(c, g.ID)
	return redirectWithNote(c, "/admin/slots/"+strconv.FormatInt(id, 10), views.FlashSuccess, views.PlaceGoodsAdd, "“"+g.Title+"” added with "+strconv.FormatInt(g.Stock, 10)+" in stock.")
}

// AdminGoodsPage is one goods' reconciliation and edit form: GET /admin/goods/{id}.
func (h *GoodsDesk) AdminGoodsPage(c *fiber.Ctx) error {
	return h.adminGoods(c, fiber.StatusOK, nil)
}

func (h *GoodsDesk) adminGoods(c *fiber.Ctx, status int, form *views.GoodsForm) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	g, err := h.Goods.Owned(ctx, cl, id)
	if err != nil {
		return err
	}
	st, err := h.Goods.Stats(ctx, cl, id)
	if err != nil {
		return err
	}
	conflicts, err := h.Goods.Conflicts(ctx, cl, id)
	if err != nil {
		return err
	}
	v := views.AdminGoodsView{Goods: *g, Stats: *st, Conflicts: conflicts, Form: views.GoodsFormOf(*g)}
	if form != nil {
		v.Form = *form
	}
	return render(c, status, views.AdminGoodsPage(h.page(c, g.Title), v))
}

// AdminUpdateGoods handles the edit-goods form: POST /admin/goods/{id}.
func (h *GoodsDesk) AdminUpdateGoods(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	form := goodsFormOf(c)
	in, parseErrs := goodsFormInput(form, 0)
	if len(parseErrs) == 0 {
		_, err = h.Goods.Update(c.UserContext(), cl, id, in)
	} else {
		err = h.Goods.Check(c.UserContext(), cl, id, in)
	}
	if status, ok := formStatus(parseErrs, err); ok {
		form.Errors, form.Error = mergeFieldErrors(parseErrs, err)
		return h.adminGoods(c, status, &form)
	} else if err != nil {
		return err
	}
	return redirectWithNote(c, "/admin/goods/"+strconv.FormatInt(id, 10), views.FlashSuccess, views.PlaceGoodsEdit, "Goods saved.")
}

// normalizeSlotForm shows parsed times back in UTC, as the page expects them
// (static/goods.js turns them into the browser's local time).
func normalizeSlotForm(form *views.SlotForm, in goods.SlotInput) {
	if !in.StartAt.IsZero() {
		form.StartAt = views.DateTimeLocal(in.StartAt)
	}
	if !in.EndAt.IsZero() {
		form.EndAt = views.DateTimeLocal(in.EndAt)
	}
}

// ordersOn is the user's orders of one goods, newest first: what its
// pages show beside the grab.
func ordersOn(ctx context.Context, gs interface {
	MyOrders(ctx context.Context, userID int64) ([]model.Order, error)
}, userID, goodsID int64) ([]model.Order, error) {
	orders, err := gs.MyOrders(ctx, userID)
	if err != nil {
		return nil, err
	}
	var mine []model.Order
	for _, o := range orders {
		if o.GoodsID == goodsID {
			mine = append(mine, o)
		}
	}
	return mine, nil
}
