package handlers

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
)

// CreateRedPacket makes a packet for the calling merchant: POST /api/admin/redpackets.
func (h *RedPackets) CreateRedPacket(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	var in model.NewRedPacket
	if err := bind(c, &in); err != nil {
		return err
	}
	p, err := h.RedPackets.Create(c.UserContext(), cl.UserID, in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"redpacket": p})
}

// ListRedPackets answers the packets shoppers may open: GET /api/redpackets.
func (h *RedPackets) ListRedPackets(c *fiber.Ctx) error {
	list, err := h.RedPackets.Active(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"redpackets": list})
}

// AdminListRedPackets answers the caller's own packets (all for an admin): GET /api/admin/redpackets.
func (h *RedPackets) AdminListRedPackets(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	list, err := h.RedPackets.Own(c.UserContext(), cl)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"redpackets": list})
}

// GetRedPacket answers a packet with live remaining figures: GET /api/redpackets/{id}.
func (h *RedPackets) GetRedPacket(c *fiber.Ctx) error {
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	p, err := h.RedPackets.Get(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"redpacket": p})
}

// GrabRedPacket opens a packet for the caller: POST /api/redpackets/{id}/grab.
func (h *RedPackets) GrabRedPacket(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	ctx, err := opContext(c)
	if err != nil {
		return err
	}
	g, err := h.RedPackets.Grab(ctx, cl.UserID, id)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"grab": g})
}

// RedPacketGrabs answers who got how much: GET /api/redpackets/{id}/grabs.
func (h *RedPackets) RedPacketGrabs(c *fiber.Ctx) error {
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	g, err := h.RedPackets.Grabs(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(g)
}

// RedPacketStats answers a packet's live and durable figures to its merchant: GET /api/admin/redpackets/{id}/stats.
func (h *RedPackets) RedPacketStats(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	st, err := h.RedPackets.Stats(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	return c.JSON(st)
}

// RedPacketsPage lists the packets a shopper may open.
func (h *RedPackets) RedPacketsPage(c *fiber.Ctx) error {
	list, err := h.RedPackets.Active(c.UserContext())
	if err != nil {
		return err
	}
	cards := redPacketCards(list)
	if cl, ok := ClaimsOf(c); ok {
		mine, err := h.RedPackets.Opened(c.UserContext(), cl.UserID, list)
		if err != nil {
			return err
		}
		for i := range cards {
			cards[i].MineCents = mine[cards[i].ID]
		}
	}
	return render(c, fiber.StatusOK, views.RedPacketsPage(h.page(c, "Red packets"), cards))
}

// RedPacketPage shows one packet with its open button and the grabs.
func (h *RedPackets) RedPacketPage(c *fiber.Ctx) error {
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	cl, loggedIn := ClaimsOf(c)
	v, err := h.RedPackets.Page(c.UserContext(), cl.UserID, id)
	if err != nil {
		return err
	}
	d := views.RedPacketDetail{Packet: redPacketCard(v.Packet), Grabs: redPacketGrabRows(v.Grabs, cl.UserID), LoggedIn: loggedIn, UserID: cl.UserID}
	if v.Mine != nil {
		d.MyAmountCents = v.Mine.AmountCents
	}
	return render(c, fiber.StatusOK, views.RedPacketPage(h.page(c, v.Packet.Title), d))
}

// AdminRedPacketsPage shows the create form and the merchant's packets.
func (h *RedPackets) AdminRedPacketsPage(c *fiber.Ctx) error {
	form := views.RedPacketForm{Mode: model.RedPacketRandom, ExpiresIn: "24h"}
	return h.adminRedPackets(c, fiber.StatusOK, form)
}

func (h *RedPackets) adminRedPackets(c *fiber.Ctx, status int, form views.RedPacketForm) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	list, err := h.RedPackets.Own(c.UserContext(), cl)
	if err != nil {
		return err
	}
	return render(c, status, views.AdminRedPacketsPage(h.page(c, "Red packets"), form, redPacketCards(list)))
}

// AdminCreateRedPacketForm handles the create form: the packet's page on
// success, the form again with the message beside the field at fault otherwise.
func (h *RedPackets) AdminCreateRedPacketForm(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	form := views.RedPacketForm{
		Title: c.FormValue("title"), Total: strings.TrimSpace(c.FormValue("total")), Count: strings.TrimSpace(c.FormValue("count")),
		Mode: c.FormValue("mode"), ExpiresIn: strings.TrimSpace(c.FormValue("expires_in")), ExpiresAt: strings.TrimSpace(c.FormValue("expires_at")),
	}
	in := model.NewRedPacket{Title: form.Title, Mode: form.Mode}
	parseErrs := db.FieldErrors{}
	var bad error
	if in.TotalCents, bad = parseRedPacketYuan(form.Total); bad != nil {
		parseErrs["total_cents"] = db.FieldsOf(bad)["total_cents"]
	}
	if in.Count, err = strconv.ParseInt(form.Count, 10, 64); err != nil {
		parseErrs["count"] = "must be a whole number"
	}
	d, bad := redPacketExpiresIn(form.ExpiresIn, form.ExpiresAt, c.FormValue("tz_offset"), h.RedPackets.Now())
	if bad != nil {
		for k, v := range db.FieldsOf(bad) {
			parseErrs[k] = v
		}
	} else if d != "" {
		in.ExpiresIn = &d // a blank choice is left out: the default expiry
	}
	var p *model.RedPacket
	if len(parseErrs) == 0 {
		p, err = h.RedPackets.Create(c.UserContext(), cl.UserID, in)
	} else { // what could not be read, and the problems of what could: all at once
		err = h.RedPackets.Check(in)
	}
	if status, shown := formStatus(parseErrs, err); shown {
		form.Errors, form.Error = mergeFieldErrors(parseErrs, err)
		return h.adminRedPackets(c, status, form)
	} else if err != nil {
		return err
	}
	return redirectWithFlash(c, fmt.Sprintf("/admin/redpackets/%d", p.ID), "Red packet created: "+p.Title+".")
}

// AdminRedPacketPage shows one of the merchant's packets with live claims.
func (h *RedPackets) AdminRedPacketPage(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	v, err := h.RedPackets.AdminPage(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	st := v.Stats
	return render(c, fiber.StatusOK, views.AdminRedPacketPage(h.page(c, v.Packet.Title), views.AdminRedPacketDetail{
		Packet: redPacketCard(v.Packet),
		Stats: views.RedPacketStats{Count: st.Count, Claimed: st.Claimed, Flushed: st.Flushed,
			RemainingCount: st.RemainingCount, RemainingCents: st.RemainingCents, RefundedCents: st.RefundedCents},
		Grabs: redPacketGrabRows(v.Grabs, 0),
	}))
}

// parseRedPacketYuan reads the form's total, in yuan with up to two decimals, as cents.
func parseRedPacketYuan(s string) (int64, error) {
	bad := db.FieldErrorf("total_cents", "must be an amount such as 88.88")
	cents, err := parseYuan(strings.TrimPrefix(strings.TrimSpace(s), "¥"))
	if err != nil || cents < 0 {
		return 0, bad
	}
	return cents, nil
}

func redPacketCard(p *model.RedPacket) views.RedPacketCard {
	return views.RedPacketCard{
		ID: p.ID, Title: p.Title, TotalCents: p.TotalCents, Count: p.Count, Mode: p.Mode,
		RemainingCount: p.RemainingCount, RemainingCents: p.RemainingCents, Status: p.Status, ExpiresAt: p.ExpiresAt,
	}
}

func redPacketCards(list []*model.RedPacket) []views.RedPacketCard {
	cards := make([]views.RedPacketCard, len(list))
	for i, p := range list {
		cards[i] = redPacketCard(p)
	}
	return cards
}

func redPacketGrabRows(g *model.RedPacketGrabs, me int64) []views.RedPacketGrabRow {
	rows := make([]views.RedPacketGrabRow, len(g.Grabs))
	for i, c := range g.Grabs {
		rows[i] = views.RedPacketGrabRow{
			UserID: c.UserID, Username: c.Username, AmountCents: c.AmountCents, GrabbedAt: c.GrabbedAt,
			Luckiest: g.LuckiestUserID != nil && *g.LuckiestUserID == c.UserID, Mine: me != 0 && c.UserID == me,
		}
	}
	return rows
}
