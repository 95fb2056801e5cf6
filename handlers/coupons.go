package handlers

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
)

// --- JSON API ---

// CreateCoupon adds a coupon template: POST /api/admin/coupons.
func (h *Coupons) CreateCoupon(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	var in model.CouponInput
	if err := bind(c, &in); err != nil {
		return err
	}
	cp, err := h.Coupons.Create(c.UserContext(), cl.UserID, in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"coupon": cp})
}

// AdminCoupons lists the caller's templates with their figures: GET /api/admin/coupons.
func (h *Coupons) AdminCoupons(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	st, err := h.Coupons.ManagedStats(c.UserContext(), cl)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"coupons": st})
}

// CouponStats answers one template's figures: GET /api/admin/coupons/{id}/stats.
func (h *Coupons) CouponStats(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	st, err := h.Coupons.Stats(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	return c.JSON(st)
}

// couponWindow is the JSON of PUT /api/admin/coupons/{id}: an end left out
// stays as it is.
type couponWindow struct {
	GrabStartAt *time.Time `json:"grab_start_at"`
	GrabEndAt   *time.Time `json:"grab_end_at"`
}

// window is the two ends, zero for one left out (MoveWindow keeps it); a
// zero time sent is out of range.
func (w couponWindow) window() (start, end time.Time, err error) {
	f := db.FieldErrors{}
	for _, e := range []struct {
		name string
		src  *time.Time
		dst  *time.Time
	}{{"grab_start_at", w.GrabStartAt, &start}, {"grab_end_at", w.GrabEndAt, &end}} {
		if e.src != nil && e.src.IsZero() {
			f[e.name] = "must be an RFC 3339 time"
		} else if e.src != nil {
			*e.dst = *e.src
		}
	}
	return start, end, f.Err()
}

// UpdateCoupon moves a template's grab window, and its reminders with it: PUT /api/admin/coupons/{id}.
func (h *Coupons) UpdateCoupon(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	var in couponWindow
	if err := bind(c, &in); err != nil {
		return err
	}
	start, end, err := in.window()
	if err != nil {
		return err
	}
	cp, err := h.Coupons.MoveWindow(c.UserContext(), cl, id, start, end)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"coupon": cp})
}

// ListCoupons answers the live and upcoming templates: GET /api/coupons.
func (h *Coupons) ListCoupons(c *fiber.Ctx) error {
	cs, err := h.Coupons.List(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"coupons": cs})
}

// GetCoupon answers one template with live remaining stock: GET /api/coupons/{id}.
func (h *Coupons) GetCoupon(c *fiber.Ctx) error {
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	cp, err := h.Coupons.Get(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"coupon": cp})
}

// GrabCoupon grabs one coupon of a template: POST /api/coupons/{id}/grab.
// A client makes its retries safe with Idempotency-Key (X-Request-ID, the
// older header, still keeps a success from being applied twice).
func (h *Coupons) GrabCoupon(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	reqID := c.Get("X-Request-ID")
	if int64(len(reqID)) > model.RequestKey.Max {
		return db.Errorf(db.EINVALID, "X-Request-ID must be at most %d characters", model.RequestKey.Max)
	}
	ctx, err := opContext(c)
	if err != nil {
		return err
	}
	uc, err := h.Coupons.Grab(ctx, cl.UserID, id, reqID)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"user_coupon": uc})
}

// MyCoupons lists the caller's coupons: GET /api/me/coupons.
func (h *Coupons) MyCoupons(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	ucs, err := h.Coupons.UserCoupons(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"coupons": ucs})
}

// MyReminders lists every reminder the caller booked: GET /api/me/reminders.
func (h *Reminders) MyReminders(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	rs, err := h.userReminders(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"reminders": rs})
}

// MyNotifications lists the caller's inbox: GET /api/me/notifications.
func (h *Site) MyNotifications(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	ns, err := h.Inbox.List(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"notifications": ns})
}

// UnreadNotifications counts the caller's unread notifications: GET /api/me/notifications/unread.
func (h *Site) UnreadNotifications(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	n, err := h.Inbox.Unread(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"unread": n})
}

// ReadNotifications marks the caller's inbox read: POST /api/me/notifications/read.
func (h *Site) ReadNotifications(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	if err := h.Inbox.MarkRead(c.UserContext(), cl.UserID); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"unread": 0})
}

// --- pages ---

// CouponsPage is the shopper's coupon centre.
func (h *Coupons) CouponsPage(c *fiber.Ctx) error {
	var uid int64
	if cl, ok := ClaimsOf(c); ok {
		uid = cl.UserID
	}
	centre, err := h.Coupons.Centre(c.UserContext(), uid)
	if err != nil {
		return err
	}
	return render(c, fiber.StatusOK, views.CouponsPage(h.page(c, "Coupon centre"), centre))
}

// MyCouponsPage lists the caller's coupons.
func (h *Coupons) MyCouponsPage(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	ucs, err := h.Coupons.UserCoupons(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	return render(c, fiber.StatusOK, views.MyCouponsPage(h.page(c, "My coupons"), ucs))
}

// MyRemindersPage lists the caller's reminders.
func (h *Reminders) MyRemindersPage(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	rs, err := h.userReminders(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	return render(c, fiber.StatusOK, views.MyRemindersPage(h.page(c, "My reminders"), rs))
}

// NotificationsPage is the caller's inbox; showing it reads it.
func (h *Site) NotificationsPage(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	ns, err := h.Inbox.List(c.UserContext(), cl.UserID)
	if err != nil {
		return err
	}
	// Shown is read: the page still marks the ones that were new, and the
	// badge in the navigation clears.
	if err := h.Inbox.MarkRead(c.UserContext(), cl.UserID); err != nil {
		return err
	}
	return render(c, fiber.StatusOK, views.NotificationsPage(h.page(c, "Inbox"), ns))
}

// AdminCouponsPage lists the merchant's templates beside the form to create one.
func (h *Coupons) AdminCouponsPage(c *fiber.Ctx) error {
	return h.adminCoupons(c, fiber.StatusOK, views.CouponForm{Kind: model.CouponAmountOff, LimitPerUser: "1", ValidDays: "7"})
}

func (h *Coupons) adminCoupons(c *fiber.Ctx, status int, form views.CouponForm) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	st, err := h.Coupons.ManagedStats(c.UserContext(), cl)
	if err != nil {
		return err
	}
	return render(c, status, views.AdminCouponsPage(h.page(c, "Coupons"), st, form))
}

// AdminCreateCouponForm creates a template from the admin form, showing each problem beside its field.
func (h *Coupons) AdminCreateCouponForm(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	form := views.CouponForm{
		Title: c.FormValue("title"), Kind: c.FormValue("kind"), Value: c.FormValue("value"), MinSpend: c.FormValue("min_spend"),
		Stock: c.FormValue("stock"), LimitPerUser: c.FormValue("limit_per_user"), ValidDays: c.FormValue("valid_days"),
		GrabStartAt: c.FormValue("grab_start_at"), GrabEndAt: c.FormValue("grab_end_at"), TZOffset: c.FormValue("tz_offset"),
	}
	in, parseErrs := parseCouponForm(form)
	if len(parseErrs) == 0 {
		cp, err := h.Coupons.Create(c.UserContext(), cl.UserID, in)
		if err == nil {
			return redirectWithFlash(c, "/admin/coupons/"+strconv.FormatInt(cp.ID, 10), "Coupon “"+cp.Title+"” created.")
		}
		var fe *db.InvalidFields
		if !errors.As(err, &fe) {
			return err
		}
		form.Errors = fe.Fields
	} else { // what could not be read, and the problems of what could: all at once
		form.Errors, _ = mergeFieldErrors(parseErrs, h.Coupons.Check(in))
	}
	return h.adminCoupons(c, invalidForm, form)
}

// AdminCouponPage shows one template's figures, bookings and deliveries.
func (h *Coupons) AdminCouponPage(c *fiber.Ctx) error {
	return h.adminCoupon(c, fiber.StatusOK, "")
}

func (h *Coupons) adminCoupon(c *fiber.Ctx, status int, formErr string) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	st, err := h.Coupons.Stats(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	return render(c, status, views.AdminCouponPage(h.page(c, st.Coupon.Title), st, formErr))
}

// AdminCouponWindowForm moves a template's grab window from the admin form.
func (h *Coupons) AdminCouponWindowForm(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	start, err1 := parseLocalTime(c.FormValue("grab_start_at"), tzOffsetMinutes(c.FormValue("tz_offset")))
	end, err2 := parseLocalTime(c.FormValue("grab_end_at"), tzOffsetMinutes(c.FormValue("tz_offset")))
	if err1 != nil || err2 != nil {
		return h.adminCoupon(c, invalidForm, "enter both times")
	}
	if _, err := h.Coupons.MoveWindow(c.UserContext(), cl, id, start, end); err != nil {
		status, shown := refusal(err)
		if !shown {
			return err
		}
		return h.adminCoupon(c, status, db.ErrorMessage(err))
	}
	return redirectWithNote(c, "/admin/coupons/"+strconv.FormatInt(id, 10), views.FlashSuccess, views.PlaceWindow, "Grab window moved; reminders follow the new start.")
}

// parseCouponForm turns the admin form into an input, collecting fields that are not numbers or times.
func parseCouponForm(f views.CouponForm) (model.CouponInput, db.FieldErrors) {
	fields := db.FieldErrors{}
	in := model.CouponInput{Title: f.Title, Kind: f.Kind}
	var err error
	if f.Kind == model.CouponPercentOff {
		if in.Value, err = strconv.ParseInt(strings.TrimSpace(f.Value), 10, 64); err != nil {
			fields["value"] = "enter a whole percentage, 1–99"
		}
	} else if in.Value, err = parseYuan(f.Value); err != nil {
		fields["value"] = "enter an amount like 10 or 9.90"
	}
	if strings.TrimSpace(f.MinSpend) != "" {
		if in.MinSpendCents, err = parseYuan(f.MinSpend); err != nil {
			fields["min_spend_cents"] = "enter an amount like 50 or 49.90"
		}
	}
	ints := []struct {
		raw, field string
		dst        *int64
	}{{f.Stock, "stock", &in.Stock}, {f.LimitPerUser, "limit_per_user", &in.LimitPerUser}}
	for _, n := range ints {
		if v, err := strconv.ParseInt(strings.TrimSpace(n.raw), 10, 64); err == nil {
			*n.dst = v
		} else if strings.TrimSpace(n.raw) != "" || n.field == "stock" {
			fields[n.field] = "enter a whole number"
		}
	}
	if strings.TrimSpace(f.ValidDays) != "" {
		if in.ValidDays, err = strconv.Atoi(strings.TrimSpace(f.ValidDays)); err != nil {
			fields["valid_days"] = "enter a whole number of days"
		}
	}
	if in.GrabStartAt, err = parseLocalTime(f.GrabStartAt, tzOffsetMinutes(f.TZOffset)); err != nil {
		fields["grab_start_at"] = "enter the start date and time"
	}
	if in.GrabEndAt, err = parseLocalTime(f.GrabEndAt, tzOffsetMinutes(f.TZOffset)); err != nil {
		fields["grab_end_at"] = "enter the end date and time"
	}
	return in, fields
}
