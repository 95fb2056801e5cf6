package handlers

import (
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
)

// GetSwitches answers the steering switches: GET /api/admin/switches (admin).
func (h *Site) GetSwitches(c *fiber.Ctx) error {
	sw, err := h.Switches.Get(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"switches": sw})
}

// SetSwitches changes the switches the body names and leaves the others:
// PUT /api/admin/switches (admin). The audit entry names what changed.
func (h *Site) SetSwitches(c *fiber.Ctx) error {
	var change model.SwitchesChange
	if err := bind(c, &change); err != nil {
		return err
	}
	sw, changed, err := h.Switches.Set(c.UserContext(), change)
	if err != nil {
		return err
	}
	setAuditNote(c, AuditNote{Action: "switches.update", Target: "switches", Detail: changedDetail(changed)})
	return c.JSON(fiber.Map{"switches": sw})
}

// SwitchesPage shows the switches with the form that flips them: GET /admin/switches (admin).
func (h *Site) SwitchesPage(c *fiber.Ctx) error {
	sw, err := h.Switches.Get(c.UserContext())
	if err != nil {
		return err
	}
	return h.switchesPage(c, fiber.StatusOK, views.SwitchesForm{Switches: sw})
}

func (h *Site) switchesPage(c *fiber.Ctx, status int, form views.SwitchesForm) error {
	return render(c, status, views.SwitchesPage(h.page(c, "Steering switches"), form))
}

// SwitchesForm handles the switches form: POST /admin/switches (admin). The
// form holds every switch, an unticked box being off.
func (h *Site) SwitchesForm(c *fiber.Ctx) error {
	on := func(name string) *bool { v := c.FormValue(name) == "on"; return &v }
	form := views.SwitchesForm{Errors: db.FieldErrors{}, StockPushMS: c.FormValue("stock_push_ms"), PowFloorBits: c.FormValue("pow_floor_bits")}
	change := model.SwitchesChange{SalePaused: on("sale_paused"), LiveCharts: on("live_charts"),
		RemindersPaused: on("reminders_paused"), MerchantReadOnly: on("merchant_read_only")}
	number := func(name, text string) *int {
		n, err := strconv.Atoi(text)
		if err != nil {
			form.Errors[name] = "must be a whole number"
			return nil
		}
		return &n
	}
	change.StockPushMS, change.PowFloorBits = number("stock_push_ms", form.StockPushMS), number("pow_floor_bits", form.PowFloorBits)
	form.Switches = model.Switches{SalePaused: *change.SalePaused, LiveCharts: *change.LiveCharts,
		RemindersPaused: *change.RemindersPaused, MerchantReadOnly: *change.MerchantReadOnly}
	if len(form.Errors) > 0 {
		return h.switchesPage(c, invalidForm, form)
	}
	_, changed, err := h.Switches.Set(c.UserContext(), change)
	if status, shown := refusal(err); shown {
		form.Errors, form.Error = mergeFieldErrors(nil, err)
		return h.switchesPage(c, status, form)
	} else if err != nil {
		return err
	}
	setAuditNote(c, AuditNote{Action: "switches.update", Target: "switches", Detail: changedDetail(changed)})
	msg := "Nothing changed."
	if len(changed) > 0 {
		msg = "Switches changed: in force on every process within a second."
	}
	return redirectWithFlash(c, "/admin/switches", msg)
}

// changedDetail is the audit detail of a change: each switch changed, "old → new".
func changedDetail(changed map[string]model.SwitchChange) map[string]string {
	out := make(map[string]string, len(changed))
	for name, c := range changed {
		out[name] = fmt.Sprintf("%v → %v", c.From, c.To)
	}
	return out
}
